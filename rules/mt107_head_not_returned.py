"""MT107: a ring's consumer took the rows but never returned the head the sender waits for."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.manifest import Region

from . import _hits as H
from .analysis import Producers, Stage
from .analysis.producers import channel_words
from .base import Confidence, Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


class HeadNotReturned(Rule):
    """A sender stuck waiting for ring space whose consumer took the rows and kept the head.

    What it does
        Ring indices are the regions whose manifest name has the word `head`
        or `tail` (role counter or flag). For each stuck threshold wait (>=, >)
        on a head, takes the sender's last tail write before it (the queue it
        fills: rank, slot), the consumer's waits on that tail (what tail it
        saw) and the consumer's head writes back to the sender's slot. When
        the consumer saw a tail at or past the head the sender waits for, yet
        returned no head that far, the consumer is the root: one hit, at the
        consumer's last wait on that tail.

    Why it matters
        The head is how the consumer hands ring rows back. A consumer that
        drains rows but does not store the head (a skipped store, a store to
        another channel) leaves the sender waiting for free space forever,
        and then waits itself for rows behind the ones it kept: the two wait
        on each other, and every rank behind them hangs. DeepEP prints this
        as "timeout for dispatch senders" on the sender, which names the
        wrong side.

    Example
        rank 1 core 0 waits channel_head[4] >= 1; its last tail write was
        channel_tail[1] = 2 on rank 3; rank 3 core 1 saw channel_tail[1] = 2
        and never stored channel_head[4] on rank 1.

    Evidence
        The consumer's wait that saw the tail, the sender's stuck head wait,
        the sender's tail write, and the consumer's last head write back if
        it made one.
    """

    code = "MT107"
    name = "head-not-returned"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A ring consumer saw the rows but never returned the head its stuck sender waits for"

    requires = (Stage.PRODUCERS,)

    def check(self, trace, ctx):
        withheld = sorted(ctx.stage(Producers).withheld_heads().items())
        if not withheld:
            return
        regions, region = trace.manifest.regions, trace["region"]
        waits = np.array([row for row, _ in withheld], np.int64)
        consumers = np.array([h.consumer for _, h in withheld], np.int64)
        tail_writes = np.array([h.tail_write for _, h in withheld], np.int64)
        c = H.described(trace, consumers, ("rank", "core", "launch"))
        s = H.described(trace, waits, ("rank", "core", "offset"))
        tw = H.described(trace, tail_writes, ("offset",))
        columns, tables = coded_columns((
            *c.items(), ("tail", [regions[int(region[r])] for r in tail_writes.tolist()]),
            ("tail_offset", tw["offset"]), ("seen", [h.seen for _, h in withheld]),
            ("sender", s["rank"]), ("sender_core", s["core"]),
            ("head", [regions[int(region[r])] for r in waits.tolist()]), ("head_offset", s["offset"]),
            ("need", [h.need for _, h in withheld]), ("returned", [h.returned for _, h in withheld]),
            ("ranks", [trace.manifest.ranks] * len(withheld)),
            ("rests_on", [((cr, cc), (sr, sc)) for cr, cc, sr, sc in zip(c["rank"], c["core"], s["rank"], s["core"])])))
        # The consumer's last head write back, where it made one (-1 where not: Withheld's none too).
        rows = np.stack((consumers, waits, tail_writes, [h.head_write for _, h in withheld]), axis=1).astype(np.int64)
        yield HitColumns(code=self.code, fields=WithheldHead, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=ROLES, rows=rows, key=H.row_keys(trace, consumers),
                         constant={"confidence": Confidence.INFERRED})


ROLES = ("consumer saw the tail", "sender waits for the head", "sender's tail write", "consumer's last head write")


class WithheldHead(NamedTuple):
    """A ring consumer that saw the rows of a stuck sender and never returned the head it waits for."""

    rank: int  # the consumer's wait that saw the tail
    core: int
    launch: int
    tail: Region  # the tail the sender last wrote (the queue it fills), and its slot
    tail_offset: int
    seen: int  # the tail value the consumer saw
    sender: int
    sender_core: int
    head: Region  # the head the sender waits on, and its slot
    head_offset: int
    need: int  # the head value it waits for
    returned: int | None  # the largest head the consumer returned (None: none)
    ranks: int  # the manifest's: a ring slot is channel * ranks + peer


def _message(f: WithheldHead) -> str:
    back = "never stored it" if f.returned is None else f"stored it only up to {f.returned}"
    return (f"rank {f.rank} core {f.core} launch {f.launch}: saw {channel_words(f.tail, f.tail_offset, f.ranks)} "
            f"reach {f.seen} (rows sent by rank {f.sender}), but {back} on rank {f.sender}: rank {f.sender} core "
            f"{f.sender_core} waits for free space on {channel_words(f.head, f.head_offset, f.ranks)} >= {f.need} "
            f"forever")


def _extra(f: WithheldHead) -> dict:
    return {"sender": f.sender, "need": f.need, "seen": f.seen, "returned": f.returned}
