"""MT302: rows announced or taken beyond the receiver's capacity."""

from __future__ import annotations

import numpy as np

from ingest.contract import Kind, Role

from .analysis import Stage, WordTable
from .analysis import codes as C
from .base import Confidence, Family, Rule, Severity


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
        # (kind, the rows field, the other rank's field, how the excess reads)
        for kind, rows, other, verb, excess_is in (
                (Kind.COUNT, "value", "peer", "announced {n} rows to rank {o}", "rows over"),
                (Kind.DELIVER, "delivered", "src_rank", "took {n} rows from rank {o}", "rows written past its segment")):
            sel = np.flatnonzero(trace["kind"] == int(kind))  # then their fields: no whole-trace copies
            n = trace[rows][sel].astype(np.int64)
            cap = trace["capacity"][sel].astype(np.int64)
            for r in sel[(cap != C.NULL32) & (n != trace.null(rows)) & (n > cap)]:
                d = trace.describe(int(r))
                excess = d[rows] - d["capacity"]
                what = verb.format(n=d[rows], o=d[other])
                msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: {what} for local expert "
                       f"{d['local_expert']}, capacity {d['capacity']} ({excess} {excess_is})")
                stale = _stale_counters(trace, words, d["rank"], d["launch"]) if kind == Kind.DELIVER else ()
                if stale:
                    msg += " (its counter was not reset after the previous launch)"
                yield self.hit(msg, rows=((kind.wire, int(r)),), key=(d["rank"], d["core"], d["seq"]),
                               confidence=Confidence.CERTAIN, caused_by=tuple(("MT202", k) for k in stale),
                               extra={"excess": excess, other: d[other], "local_expert": d["local_expert"]})


def _stale_counters(trace, words: WordTable, owner: int, launch: int) -> list[tuple]:
    """MT202 keys of the owner's counter regions left unreset by the launch before ``launch``."""
    regions = trace.manifest.regions
    return [k for (o, region, L), (k, _) in words.not_reset().items()
            if o == owner and L == launch - 1 and regions[region].role == Role.COUNTER]
