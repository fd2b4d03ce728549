"""MT103: a rank whose trace ends mid-kernel, or whose dump is missing while others wait on it."""

from __future__ import annotations

from ingest.contract import Kind

from .analysis import Stage, WaitForGraph
from .base import Confidence, Family, Rule, Severity, hits_of


class RankStopped(Rule):
    """A rank that stopped inside a kernel, or is missing from the dumps, while others need it.

    What it does
        Fires for every rank with a core whose trace ends inside a kernel
        (no kernel_end after its last kernel_begin) and not inside a wait or
        a barrier: it stopped emitting while running. Also fires for a rank
        a stuck wait or barrier depends on whose trace ends before that
        launch began, or that has no events at all (its dump is missing;
        the key is then (rank,) since there is no event to name, and the
        evidence is the waits that expect it).

    Why it matters
        The rank that died (trap, ECC error, killed process) or whose dump
        was lost is the root cause of every wait that expects it; the
        waiting ranks are only symptoms. Naming it first saves combing
        through dozens of identical stuck waits.

    Example
        Rank 2 issues a put and then nothing: no wait, no kernel_end. Rank 0
        waits on ready[2] forever. MT103 names rank 2 core 0's last event;
        the MT101 hit on rank 0 is caused by it.

    Evidence
        The last event of each stopped core (or the waits that expect a
        missing rank). Confidence partial-trace where the rank's dump is
        missing or its ring lost events, inferred otherwise (a dump cut at
        that point looks the same as a rank that died there).
    """

    code = "MT103"
    name = "rank-stopped"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A rank stopped mid-kernel or its dump is missing while others wait on it"
    requires = (Stage.WAIT_FOR,)
    cites = ("MT101", "MT102", "MT103", "MT104", "MT105", "MT201", "MT202", "MT204", "MT301", "MT501",
             "MT701", "MT703", "MT705")
    # An atomic the unified API aborts on (MT701, MT703, MT705) explains a core that stops right at it.
    ABORTS = ("MT701", "MT703", "MT705")
    infers_from = ("index", "slot_words", "params")

    def check(self, trace, ctx):
        wf = ctx.stage(WaitForGraph)
        waiting: dict = {}
        for n in wf.nodes:
            for c in n.causes:
                if c[0] == "MT103":
                    waiting.setdefault(tuple(c[1]), []).append(n)
        for rank, (key, how, rows, gap) in wf.stops.items():
            waiters = waiting.get(tuple(key), [])
            if how != "stopped" and not waiters:
                continue
            who = sorted({(n.rank, n.core) for n in waiters})
            ws = ", ".join(f"rank {r} core {c}" for r, c in who[:6]) + (" ..." if len(who) > 6 else "")
            also = f"; {len(waiters)} stuck waits/barriers expect it ({ws})" if waiters else ""
            if how == "missing":
                msg = f"rank {rank}: no events at all (its dump is missing){also}"
                ev = tuple(("waits on it", n.row) for n in waiters[:8])
            elif how == "stopped":
                last = Kind(int(trace["kind"][rows[0]])).wire
                cores = ", ".join(str(int(trace["core"][r])) for r in rows)
                msg = (f"rank {rank}: trace ends mid-kernel on core(s) {cores}, outside any wait "
                       f"(last event {last} at seq {key[2]}): the rank died or its dump was cut{also}")
                ev = tuple(("last event", r) for r in rows)
            else:
                launch = int(trace["launch"][rows[0]]) if rows else -1
                msg = (f"rank {rank}: trace ends after launch {launch}, before the launch others wait "
                       f"in{also}")
                ev = tuple(("last event", r) for r in rows[:1])
            if gap:
                msg += f" [gap: {gap}]"
            conf = Confidence.PARTIAL_TRACE if (gap or how == "missing") else Confidence.INFERRED
            # A missing dump has no event of its own: the finding is placed at the missing rank
            # (SARIF and CI blame it), not at the first waiter whose event is its evidence.
            place = {"rank": rank, "core": None, "region": None, "offset": None, "site": None, "source": None,
                     "launch": min(n.launch for n in waiters)} if how == "missing" and waiters else {}
            aborts = self._aborts(trace, rows) if how == "stopped" else ()
            if aborts:
                msg += "; it stopped at an atomic the unified API aborts on"
            # "Ends before the launch others wait in" says only that the rank made no progress:
            # where one of its cores is the waiter of a root's stuck wait, it spins there (the
            # engine then makes this that root's symptom); a rank that died says more than that.
            stalls = ((rank, None),) if how == "not-started" else ()
            # One defect per way the rank stopped (and whether the unified API aborted it there).
            defect = f"{how}{' at an abort' if aborts else ''}{' gap' if gap else ''}"
            yield self.hit(msg, rows=ev, key=key, confidence=conf, location=place, caused_by=aborts, stalls=stalls,
                           defect=defect,
                           extra={"rank": rank, "how": how, "waiters": [list(n.key) for n in waiters],
                                  "gap": gap})

    def _aborts(self, trace, rows) -> tuple:
        """The abort hits (MT701, MT703, MT705) whose atomic is the last event of one of the stopped cores."""
        last = {int(r) for r in rows}
        return tuple((code, h.key) for code in self.ABORTS for h in hits_of(trace, code)
                     if last & {row for _, row in h.rows})
