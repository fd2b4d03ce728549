"""MT104: stuck waits that wait on each other, with nothing outside the cycle to blame."""

from __future__ import annotations

from .analysis import Stage, WaitForGraph
from .base import Family, Rule, Severity


class DeadlockCycle(Rule):
    """A cycle in the wait-for graph with no cause outside it: a real deadlock.

    What it does
        Builds the wait-for graph of the stuck waits and barriers (an edge
        from a wait to the stuck node its expected producer sits in) and
        finds its strongly connected components. A component with a cycle
        whose members have no explanation pointing outside it (no dropped
        route, dead rank, misdirected write ...) is one hit, keyed on its
        smallest wait_begin, listing every member.

    Why it matters
        Each member's wait looks like a victim of the next; without the
        cycle view a report would send the reader round in circles. A true
        deadlock is a protocol ordering bug (each rank waits for a flag the
        other only sends after its own wait), not a fault of any one rank.

    Example
        Rank 0 core 0 waits on flag[1] before it signals rank 1; rank 1 core
        0 waits on flag[0] before it signals rank 0. One MT104 hit; both
        MT101 hits are caused by it.

    Evidence
        The wait_begin of every member of the cycle.
    """

    code = "MT104"
    name = "deadlock-cycle"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "Stuck waits wait on each other with no outside cause: a deadlock"
    requires = (Stage.WAIT_FOR,)
    cites = ("MT101", "MT102", "MT103", "MT104", "MT105", "MT201", "MT202", "MT204", "MT301", "MT501")
    infers_from = ("index", "slot_words", "reset", "monotonic", "params")

    def check(self, trace, ctx):
        wf = ctx.stage(WaitForGraph)
        for cyc in wf.cycles:
            members = sorted((wf.nodes[i] for i in cyc.members), key=lambda n: n.key)
            parts = []
            for n in members[:6]:
                on = [v.rank for v in n.verdicts if v.blocker and v.edges]
                what = wf.node_text(n)
                parts.append(f"rank {n.rank} {what} (expects rank {', '.join(map(str, on))})")
            more = f"; and {len(members) - 6} more" if len(members) > 6 else ""
            first = members[0]
            yield self.hit(f"deadlock in launch {first.launch}: {len(members)} stuck nodes wait on each "
                           f"other and nothing outside explains them: " + "; ".join(parts) + more,
                           rows=tuple(("cycle member", n.row) for n in members), key=cyc.key,
                           confidence=first.confidence,
                           extra={"members": [[n.code, list(n.key)] for n in members]})
