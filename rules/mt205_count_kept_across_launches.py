"""MT205: a "0 = not yet" count polled in a launch that still holds a count from an earlier one."""

from __future__ import annotations

from . import _hits as H
from .analysis import Producers, Stage
from .base import Confidence, Family, Rule, Severity


class CountKeptAcrossLaunches(Rule):
    """A count word polled `!= 0` in launch L that nobody cleaned since an earlier launch wrote it.

    What it does
        Takes every wait on a counter region that polls `!= 0` (the word
        reads 0 until its sender writes it) in a launch after the first. When
        the latest earlier launch that wrote the word wrote it only remotely
        (stores or adds, no local clean among them) and the poller's rank
        writes no clean of it in L either, the word entered L still holding
        that earlier count. One hit per poller rank and launch, at its first
        such poll; the clean belonged to the launch before L.

    Why it matters
        Double-buffered protocols (DeepEP low-latency: a parity half per
        launch) zero the half the next launch polls, one launch ahead
        (next_clean). A skipped clean leaves the count of two launches ago in
        place: the poll passes at once, the receiver takes that many rows
        before this launch's rows land (stale rows), or a wrong number of
        them. A real count then disagrees with what the receiver took (MT502
        names it as a symptom of this).

    Example
        launch 0: rank 1 adds -3 to recv_signal[1] of rank 0; launch 1: rank 0
        cleans the other half only; launch 2: rank 0 polls recv_signal[1] != 0
        and sees -3 at once.

    Evidence
        The first poll that the kept count satisfies, and the write it kept.
    """

    code = "MT205"
    name = "count-kept-across-launches"
    family = Family.STALE_FLAG
    severity = Severity.ERROR
    summary = "A count polled != 0 in a launch still holds an earlier launch's value: its clean was skipped"

    requires = (Stage.PRODUCERS,)

    def check(self, trace, ctx):
        seen = {}
        for row, k in sorted(ctx.stage(Producers).kept_counts().items()):
            rank = int(trace["rank"][row])
            seen.setdefault((rank, k.launch), []).append(k)
        regions = trace.manifest.regions
        for (rank, launch), ks in sorted(seen.items()):
            k = ks[0]
            d, w = trace.describe(k.wait), trace.describe(k.write)
            name = regions[int(trace["region"][k.wait])].name
            words = sorted({int(trace["offset"][x.wait]) for x in ks})
            msg = (f"rank {rank} core {d['core']} launch {launch}: polls {name}[{d['offset']}] != 0, but the word "
                   f"still holds what rank {w['rank']} wrote in launch {k.written} ({w['kind']} {w['value']}): "
                   f"nothing cleaned it in launch {launch - 1} or {launch}, so the poll reads a count from "
                   f"{launch - k.written} launches ago; {len(words)} word(s) of {name} kept so")
            # "Nothing cleaned it" is an absence: any rank may clean the word, in either launch, so
            # a gap in those launches anywhere may hold the clean (a ring wrap, a missing dump).
            everyone = range(trace.manifest.ranks)
            gap = (H.launch_gap(trace, everyone, launch - 1) or H.launch_gap(trace, everyone, launch)) \
                if trace.partial else None
            yield self.hit(msg, rows=(("poll satisfied by the kept count", k.wait), ("the kept write", k.write)),
                           key=(rank, d["core"], d["seq"]), confidence=Confidence.INFERRED, gap=gap,
                           rests_on=((rank, d["core"]),),
                           extra={"words": words, "written_in_launch": k.written})
