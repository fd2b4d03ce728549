"""MT104: stuck waits that wait on each other, with nothing outside the cycle to blame."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hang
from .analysis import Stage, WaitForGraph
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


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
        if not wf.cycles:
            return
        cycles = [sorted((wf.nodes[i] for i in cyc.members), key=lambda n: n.key) for cyc in wf.cycles]
        members = [WaitCycle(nodes[0].launch, tuple(_hang.stuck_node(wf, n) for n in nodes),
                             tuple(tuple(v.rank for v in n.verdicts if v.blocker and v.edges) for n in nodes))
                   for nodes in cycles]
        columns, tables = coded_columns((*zip(WaitCycle._fields, zip(*members)),
                                         ("confidence", [nodes[0].confidence for nodes in cycles])))
        roles, rows = _hang.evidence([tuple(("cycle member", n.row) for n in nodes) for nodes in cycles])
        yield HitColumns(code=self.code, fields=WaitCycle, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=roles, rows=rows, key=np.array([cyc.key for cyc in wf.cycles], np.int64))


class WaitCycle(NamedTuple):
    """The stuck nodes of a deadlock cycle, in key order."""

    launch: int  # the first member's
    members: tuple  # StuckNode each
    expects: tuple  # per member, the ranks it expects that are themselves stuck in the cycle's nodes


def _message(f: WaitCycle) -> str:
    parts = [f"rank {n.rank} {_hang.stuck_text(n)} (expects rank {', '.join(map(str, on))})"
             for n, on in zip(f.members, f.expects)]
    return (f"deadlock in launch {f.launch}: {len(f.members)} stuck nodes wait on each "
            f"other and nothing outside explains them: " + _hang.listed(parts, 6))


def _extra(f: WaitCycle) -> dict:
    return {"members": [[n.code, list(n.key)] for n in f.members]}
