"""MT102: a barrier that some participants never reached, so the others never left it."""

from __future__ import annotations

from ingest.contract import Scope

from .analysis import Stage, WaitForGraph
from .base import Family, Rule, Severity


class BarrierIncomplete(Rule):
    """A barrier_begin with no barrier_end: names the participants that never arrived.

    What it does
        A barrier instance is the k-th barrier of one scope within one launch
        on each participant (the cores of the rank for scope core; every rank
        of the manifest, on the cores that run barriers of that scope, for
        all and team). For every core whose trace ends inside a barrier, it
        lists the participants whose count of barriers in that launch and
        scope stays below k, and what each did instead: stuck in a wait or
        another barrier (followed through the wait-for graph), stopped
        mid-kernel or missing its dump, or finished the launch without ever
        entering the barrier (a code path that skips it).

    Why it matters
        A barrier that never completes hangs every rank that reached it; the
        cause is always on a rank that did not. DeepEP's "timeout check
        failed: rank = 7, thread = 0, value = 1024" means rank 0 never
        arrived, but the message names the waiter; this names the absentee.

    Example
        Ranks 0 and 1 enter their second barrier_all of launch 3; rank 2 is
        still waiting on count[5] of its own dispatch. Each of the two stuck
        barriers is a hit naming rank 2, caused by rank 2's stuck wait.

    Evidence
        The stuck barrier_begin; the causes name the absentees' stuck waits
        or last events.
    """

    code = "MT102"
    name = "barrier-incomplete"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A barrier some participants never reached, so it never completed"
    requires = (Stage.WAIT_FOR,)
    cites = ("MT101", "MT102", "MT103", "MT104", "MT105", "MT201", "MT202", "MT204", "MT301", "MT501")
    infers_from = ("index", "slot_words", "reset", "monotonic", "params")

    def check(self, trace, ctx):
        wf = ctx.stage(WaitForGraph)
        for n in wf.barriers():
            absent = [v for v in n.verdicts if v.blocker]
            scope = Scope(n.scope).wire if 0 <= n.scope < len(Scope) else str(n.scope)
            head = (f"rank {n.rank} core {n.core} launch {n.launch}: barrier #{n.instance} "
                    f"(scope {scope}) never completed")
            if absent:
                body = "; ".join(v.text for v in absent[:6])
                if len(absent) > 6:
                    body += f"; and {len(absent) - 6} more"
            else:
                body = "every participant reached it, yet it never left (a lost wake-up)"
            gaps = f" [gap: {'; '.join(n.gaps)}]" if n.gaps else ""
            # One defect per scope and what the absent participants did (or a lost wake-up).
            statuses = "+".join(sorted({v.status for v in absent})) or "lost-wakeup"
            yield self.hit(f"{head}: {body}{gaps}", rows=(("stuck barrier", n.row),), key=n.key,
                           defect=f"{scope}: {statuses}{' gap' if n.gaps else ''}", caused_by=n.caused_by, confidence=n.confidence, blocks=((n.rank, n.core),),
                           extra={"class": [n.site, "barrier", scope, n.instance],
                                  "missing": [[v.rank, v.status] for v in absent],
                                  "producers": [v.to_json() for v in n.verdicts],
                                  "roots": [[c, list(k)] for c, k in n.roots], "gaps": n.gaps})
