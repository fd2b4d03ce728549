"""MT105: the producer a stuck wait expects wrote another slot or another rank instead."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hang
from . import _hits as H
from .analysis import Stage, WaitForGraph
from .base import Confidence, Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


class WrongTarget(Rule):
    """A write into the waited-on region that went to the wrong slot or the wrong rank.

    What it does
        For each producer a stuck wait expects that never wrote the waited
        slot in that launch, looks at what it wrote into the same region in
        the same launch. A write is misdirected when the region's index says
        another rank produces that slot (wrong slot), or when it is the same
        slot on another rank where nobody waits in that launch (wrong peer).
        One hit per misdirected write, naming the wait it leaves stuck.

    Why it matters
        An off-by-one in a slot formula, or a peer computed from the wrong
        rank variable, releases nobody and hangs the rank that should have
        been released, while the trace shows the producer "did signal".

    Example
        Rank 1 should signal flag[1] of rank 0 (index rank: slot = writer);
        it signals flag[0] of rank 0 instead. Rank 0's wait on flag[1] is
        stuck; MT105 names the signal, and the MT101 hit is caused by it.

    Evidence
        The misdirected write, and the stuck wait it should have released.
    """

    code = "MT105"
    name = "wrong-target"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A producer wrote another slot or rank than the one a stuck wait expects"
    requires = (Stage.WAIT_FOR,)
    cites = ("MT501",)
    infers_from = ("index", "slot_words", "params")

    def check(self, trace, ctx):
        wf = ctx.stage(WaitForGraph)
        if not wf.wrong:
            return
        wrong = sorted(wf.wrong.items())
        members, gaps, confidence, evidence = [], [], [], []
        for key, entry in wrong:
            waits = [wf.nodes[i] for i in entry.waits]
            gap = wf.rank_gaps.get(key[0])
            # "Never wrote the slot it owed" is an absence: in a launch the writer does not hold
            # whole, that write may be in the lost part of its ring (the finding's gap, which the
            # engine makes a partial-trace note); else the message names what its rank lost.
            whole_gap = H.launch_gap(trace, [key[0]], entry.launch)
            # A writer handed a row with an invalid expert writes its slots shifted: the route
            # is the cause, the stray write its symptom.
            members.append(MisdirectedWrite(key[0], key[1], entry.launch, entry.target,
                                            tuple(_hang.stuck_node(wf, n) for n in waits),
                                            entry.aliased[0][2] if entry.aliased else None,
                                            gap if gap and not whole_gap else None))
            gaps.append(whole_gap)
            confidence.append(Confidence.CERTAIN if whole_gap else
                              Confidence.PARTIAL_TRACE if gap else Confidence.INFERRED)
            evidence.append((("misdirected write", entry.row),) + tuple(("left stuck", n.row) for n in waits[:4]))
        columns, tables = coded_columns((
            *zip(MisdirectedWrite._fields, zip(*members)), ("gap", gaps), ("confidence", confidence),
            ("caused_by", [tuple((a[0], a[1]) for a in entry.aliased) for _, entry in wrong])))
        roles, rows = _hang.evidence(evidence)
        yield HitColumns(code=self.code, fields=MisdirectedWrite, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=roles, rows=rows, key=np.array([key for key, _ in wrong], np.int64))


class MisdirectedWrite(NamedTuple):
    """A producer's write into the waited region that went to another slot or rank, and the waits it left stuck."""

    writer: int
    core: int
    launch: int
    target: str  # "region[slot] of rank r": what it wrote
    waits: tuple  # StuckNode each: the stuck waits that expected it
    aliased: str | None  # the writer's invalid route that shifts its slots, as the wait-for graph words it
    lost: str | None  # what of the writer's trace is lost, where its launch is whole


def _message(f: MisdirectedWrite) -> str:
    expects = "; ".join(f"rank {n.rank} {_hang.stuck_text(n)} (expects it from rank {f.writer})"
                        for n in f.waits[:4])
    msg = (f"rank {f.writer} core {f.core} launch {f.launch} wrote {f.target}, "
           f"instead of the slot a stuck wait needs: {expects}")
    if f.aliased is not None:
        msg += f"; {f.aliased}"
    return msg + _hang.gap_note((f.lost,) if f.lost else ())


def _extra(f: MisdirectedWrite) -> dict:
    return {"write": f.target, "waits": [list(n.key) for n in f.waits]}
