"""MT205: a "0 = not yet" count polled in a launch that still holds a count from an earlier one."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from .analysis import Producers, Stage
from .base import Confidence, Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


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
        if not seen:
            return
        # One member per (rank, launch): its first kept count's poll and the write it still holds.
        groups = sorted(seen.items())
        poll = np.array([ks[0].wait for _, ks in groups], np.int64)
        write = np.array([ks[0].write for _, ks in groups], np.int64)
        d = H.described(trace, poll, ("rank", "core", "offset"))
        dw = H.described(trace, write, ("rank", "kind", "value"))
        regions, region, offset = trace.manifest.regions, trace["region"], trace["offset"]
        launch = [L for (_, L), _ in groups]
        gaps = [_gap(trace, L) for L in launch]
        columns, tables = coded_columns((
            *d.items(), ("launch", launch), ("region", [regions[int(region[p])].name for p in poll.tolist()]),
            ("writer_rank", dw["rank"]), ("writer_kind", dw["kind"]), ("writer_value", dw["value"]),
            ("written", [ks[0].written for _, ks in groups]),
            ("words", [tuple(sorted({int(offset[x.wait]) for x in ks})) for _, ks in groups]),
            ("gap", gaps), ("rests_on", [((r, c),) for r, c in zip(d["rank"], d["core"])])))
        yield HitColumns(code=self.code, fields=KeptCount, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=("poll satisfied by the kept count", "the kept write"),
                         rows=np.stack((poll, write), axis=1), key=H.row_keys(trace, poll),
                         constant={"confidence": Confidence.INFERRED})


def _gap(trace, launch: int) -> str | None:
    """"Nothing cleaned it" is an absence: any rank may clean the word, in either launch, so a gap in
    those launches anywhere may hold the clean (a ring wrap, a missing dump)."""
    if not trace.partial:
        return None
    everyone = range(trace.manifest.ranks)
    return H.launch_gap(trace, everyone, launch - 1) or H.launch_gap(trace, everyone, launch)


class KeptCount(NamedTuple):
    """A poll of a count word that still holds an earlier launch's count."""

    rank: int
    core: int
    offset: int
    launch: int
    region: str
    writer_rank: int  # the write it still holds
    writer_kind: str
    writer_value: int
    written: int  # the launch of that write
    words: tuple  # the offsets of the rank's words kept so in the launch


def _message(f: KeptCount) -> str:
    return (f"rank {f.rank} core {f.core} launch {f.launch}: polls {f.region}[{f.offset}] != 0, but the word still "
            f"holds what rank {f.writer_rank} wrote in launch {f.written} ({f.writer_kind} {f.writer_value}): "
            f"nothing cleaned it in launch {f.launch - 1} or {f.launch}, so the poll reads a count from "
            f"{f.launch - f.written} launches ago; {len(f.words)} word(s) of {f.region} kept so")


def _extra(f: KeptCount) -> dict:
    return {"words": list(f.words), "written_in_launch": f.written}
