"""MT302: rows announced or taken beyond the receiver's capacity."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Kind, Role

from . import _hits as H
from .analysis import Stage, WordTable
from .analysis import codes as C
from .base import Confidence, Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


class CountOverCapacity(Rule):
    """Rows announced or taken above the receive capacity: `count.value > capacity`, `delivered > capacity`.

    What it does
        Flags every count event whose announced rows exceed the capacity it
        carries (count events without a capacity are not checked), and every
        deliver event whose receiver took more rows than its capacity (it
        wrote past its segment), one hit per event, with the excess in
        `extra`. A delivery by a receiver whose counter region was left off
        its reset by the launch before (an MT202 hit) cites that hit: it
        counted last launch's rows too.

    Why it matters
        The receiver has room for `capacity` rows of that (local expert,
        source rank) segment. Either it clamps (rows are lost, see MT301) or
        it writes past the segment into its neighbour's rows, corrupting
        another expert's input. The host-side assert DeepEP has for this
        (`x.size(0) <= num_max_dispatch_tokens_per_rank`) exists only there.

    Example
        count peer=1 local_expert=0 value=40 capacity=32
        deliver local_expert=0 src_rank=2 requested=4 delivered=4 capacity=3
        -- raise the capacity, or cap the routed tokens per rank.

    Evidence
        The count event, or the deliver event.
    """

    code = "MT302"
    name = "count-over-capacity"
    family = Family.CAPACITY_TRUNCATION
    severity = Severity.ERROR
    summary = "Rows announced or taken above the receive capacity (count.value or delivered > capacity)"
    # A receiver whose counter was not reset after the launch before counts last launch's rows
    # too: it takes more than were sent, and that missing reset is the defect.
    cites = ("MT202",)

    requires = (Stage.WORD_TABLE,)

    def check(self, trace, ctx):
        words = ctx.stage(WordTable)
        if trace.n == 0:
            return
        # (kind, the rows field, the other rank's field): a batch of typed hits per kind, one per event
        # over capacity (a capacity set too low is one hit per count and deliver of every launch).
        for kind, rows_field, other in ((Kind.COUNT, "value", "peer"), (Kind.DELIVER, "delivered", "src_rank")):
            sel = np.flatnonzero(trace["kind"] == int(kind))  # then their fields: no whole-trace copies
            n = trace[rows_field][sel].astype(np.int64)
            cap = trace["capacity"][sel].astype(np.int64)
            over = sel[(cap != C.NULL32) & (n != trace.null(rows_field)) & (n > cap)]
            if not len(over):
                continue
            columns = {name: trace[name][over].astype(np.int64) for name in ("rank", "core", "launch", "local_expert",
                                                                             "capacity")}
            columns |= {"rows": trace[rows_field][over].astype(np.int64), "other": trace[other][over].astype(np.int64)}
            stale: dict[tuple[int, int], tuple] = {}  # per (owner, launch): its counters MT202 found unreset
            if kind == Kind.DELIVER:
                for place in zip(columns["rank"].tolist(), columns["launch"].tolist()):
                    if place not in stale:
                        stale[place] = tuple(("MT202", k) for k in _stale_counters(trace, words, *place))
            causes = [stale.get(place, ()) for place in zip(columns["rank"].tolist(), columns["launch"].tolist())]
            extra_columns, tables = coded_columns((("caused_by", causes), ("stale", [bool(c) for c in causes])))
            yield HitColumns(code=self.code, fields=OverCapacity, render=_message, extra=_extra,
                             columns=columns | extra_columns, tables=tables, roles=(kind.wire,),
                             rows=over.astype(np.int64)[:, None], key=H.row_keys(trace, over),
                             constant={"kind": kind.wire, "confidence": Confidence.CERTAIN})


class OverCapacity(NamedTuple):
    """A count announced, or a delivery taken, over its receive capacity."""

    rank: int
    core: int
    launch: int
    kind: str  # count (the sender's announcement) or deliver (the receiver's take)
    rows: int
    other: int  # the rank the count goes to, or the rank the rows came from
    local_expert: int
    capacity: int
    stale: bool  # a deliver whose counter MT202 found left unreset by the launch before


def _message(f: OverCapacity) -> str:
    if f.kind == "count":
        what, excess = f"announced {f.rows} rows to rank {f.other}", "rows over"
    else:
        what, excess = f"took {f.rows} rows from rank {f.other}", "rows written past its segment"
    return (f"rank {f.rank} core {f.core} launch {f.launch}: {what} for local expert {f.local_expert}, capacity "
            f"{f.capacity} ({f.rows - f.capacity} {excess})"
            + (" (its counter was not reset after the previous launch)" if f.stale else ""))


def _extra(f: OverCapacity) -> dict:
    return {"excess": f.rows - f.capacity, "peer" if f.kind == "count" else "src_rank": f.other,
            "local_expert": f.local_expert}


def _stale_counters(trace, words: WordTable, owner: int, launch: int) -> list[tuple]:
    """MT202 keys of the owner's counter regions left unreset by the launch before ``launch``."""
    regions = trace.manifest.regions
    return [k for (o, region, L), (k, _) in words.not_reset().items()
            if o == owner and L == launch - 1 and regions[region].role == Role.COUNTER]
