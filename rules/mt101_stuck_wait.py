"""MT101: a wait that never ended, with who should have released it and why they never did."""

from __future__ import annotations

from ingest.contract import Cmp

from .analysis import Stage, WaitForGraph
from .base import Family, Rule, Severity


class StuckWait(Rule):
    """A wait_until whose condition never held: the trace ends inside it, or it timed out.

    What it does
        Finds every wait_begin with no wait_end after it on its core by the
        end of the trace, and every wait_end with outcome timeout. For each it
        names the slot (region[slot] of the waiting rank, slot = offset //
        slot_words), the comparison and target, the slot's last known value,
        and its expected producers: from the region's index (token_topk: the
        rank owning the expert of that route; segment and dispatch: the source
        rank; rank: the slot's rank) or, without one, from who wrote the slot
        in earlier launches. Each producer gets a verdict: itself stuck,
        finished without writing (with the dropped route or clamped row that
        explains it), wrote another value (a generation already past the
        target under ==), wrote another slot or peer, stopped mid-kernel, or
        its dump is missing. The hit's caused_by links the root causes found
        by following those verdicts through the wait-for graph.

    Why it matters
        A hung all-to-all shows the same spinning wait on many ranks; the
        useful answer is the one rank and event that never released it. The
        symptoms are grouped by (site, region, cmp, target) in extra.class,
        so a report can print one line per class under its root cause.

    Example
        Combine on rank 0 waits on combine_status[3] (token 1, top-k 1) eq 1;
        the route of that pair carries expert 9 of 4, so dispatch sent it
        nowhere and no rank ever writes that status slot. The MT101 hit is
        caused by the MT501 hit on the route event.

    Evidence
        The stuck wait_begin (and its timeout wait_end), the producers'
        writes into the slot where they wrote a wrong value, and the events
        the root causes name (route, deliver, misdirected write, last event
        of a stopped rank).
    """

    code = "MT101"
    name = "stuck-wait"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A wait never ended (or timed out); names the slot, its producers and why they never wrote"
    requires = (Stage.WAIT_FOR,)
    cites = ("MT101", "MT102", "MT103", "MT104", "MT105", "MT201", "MT202", "MT204", "MT301", "MT501")
    infers_from = ("index", "slot_words", "reset", "monotonic", "params")

    def check(self, trace, ctx):
        wf = ctx.stage(WaitForGraph)
        stops = wf.stops
        for n in wf.waits():
            msg, causes = message(trace, n), n.caused_by
            own = stops.get(n.rank)
            if not n.roots and n.cycle is None and own is not None and own[1] == "stopped":
                # Another core of the waiting rank stopped mid-kernel: the kernel trapped (an abort
                # kills every core of the rank), so the wait never returned, whatever arrived.
                msg += (f"; another core of rank {n.rank} stopped mid-kernel (last event at seq {own[0][2]}): "
                        f"the rank's kernel died, and this wait with it")
                causes = tuple(causes) + (("MT103", own[0]),)
            yield self.hit(msg, rows=rows_of(n), key=n.key, caused_by=causes, blocks=((n.rank, n.core),),
                           confidence=n.confidence, extra=extra_of(wf, n), defect=defect_of(n))


def message(trace, n) -> str:
    m = trace.manifest
    if n.cmp < 0:
        return (f"rank {n.rank} core {n.core} launch {n.launch}: a wait on {m.regions[n.region].name}"
                f"[{n.slot}] timed out; its wait_begin was lost to ring wrap")
    name = m.regions[n.region].name
    what = "timed out" if n.end_row >= 0 else "never ended"
    words = f" ({n.words} words)" if n.words > 1 else ""
    head = (f"rank {n.rank} core {n.core} launch {n.launch}: wait on {name}[{n.slot}]{words} "
            f"{Cmp(n.cmp).wire} {n.target} {what} ({n.current_text})")
    blockers = [v for v in n.verdicts if v.blocker] or n.verdicts
    body = "; ".join(v.text for v in blockers[:4])
    if len(blockers) > 4:
        body += f"; and {len(blockers) - 4} more producers"
    tail = ""
    if n.cycle is not None:
        tail = " (part of a deadlock cycle)"
    elif not n.roots:
        tail = " (root cause: nothing outside this wait explains it)"
    gaps = f" [gap: {'; '.join(n.gaps)}]" if n.gaps else ""
    return f"{head}: {body}{tail}{gaps}"


def defect_of(n) -> str:
    """The defect the wait shows, from its fields: how it ended, what its blocking producers did
    (their verdicts' statuses), and whether a cycle or nothing outside it explains it."""
    if n.cmp < 0:
        return "timed-out, wait_begin lost"
    blockers = [v for v in n.verdicts if v.blocker] or n.verdicts
    what = "timed-out" if n.end_row >= 0 else "never-ended"
    tail = " cycle" if n.cycle is not None else (" unexplained" if not n.roots else "")
    return f"{what}: {'+'.join(sorted({v.status for v in blockers}))}{tail}{' gap' if n.gaps else ''}"


def rows_of(n) -> tuple:
    rows = [("stuck wait", n.row)]
    if n.end_row >= 0 and n.end_row != n.row:
        rows.append(("timeout", n.end_row))
    for v in n.verdicts:
        rows.extend(v.rows)
    return tuple(dict.fromkeys(rows))


def extra_of(wf, n) -> dict:
    return {"class": list(wf.class_of(n)), "slot": n.slot, "current": n.current,
            "timeout": n.end_row >= 0, "producers": [v.to_json() for v in n.verdicts],
            "roots": [[c, list(k)] for c, k in n.roots], "gaps": n.gaps}
