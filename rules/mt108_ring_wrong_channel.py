"""MT108: a ring consumer polls the tail of another channel than the one whose heads it returns."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from .analysis import Producers, Stage
from .base import Confidence, Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


class RingWrongChannel(Rule):
    """A consumer core that waits on one channel's tails and returns another channel's heads.

    What it does
        Ring indices are the regions whose manifest name has the word `head`
        or `tail`; a slot of one is `channel * ranks + peer` (the layout
        docs/instrumenting-deepep.md asks for), so its channel is
        `slot // ranks`. Per core, takes the channels of the tails it polls
        (threshold waits) and of the heads it stores back to senders, ring by
        ring (the i-th tail region with the i-th head region). When the two
        sets share no channel, the core drains one channel's ring while it
        watches another's tail: one hit per such core, at its first poll.

    Why it matters
        The tail it watches belongs to rows it does not read: it waits for
        rows that channel never sends it (a hang, with the sender of its own
        channel waiting for free space), or reads its ring rows before they
        were written (stale rows), and the channel's own consumer races it.
        DeepEP's receiver timeout prints the tail it polled, not the one it
        should have.

    Example
        rank 3 core 1 waits channel_tail[5] > 0 (channel 1) but stores
        channel_head[3] on ranks 0-2 (channel 0).

    Evidence
        The core's first poll of the other channel's tail, and one of its head
        writes.
    """

    code = "MT108"
    name = "ring-wrong-channel"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A ring consumer polls another channel's tail than the one whose heads it returns"

    requires = (Stage.PRODUCERS,)

    def check(self, trace, ctx):
        # One member per core: every poll of a core maps to the core's one WrongPoll.
        polls = list({w.first: w for w in ctx.stage(Producers).wrong_polls().values()}.values())
        if not polls:
            return
        first = np.array([w.first for w in polls], np.int64)
        heads = np.array([w.head_write for w in polls], np.int64)
        d = H.described(trace, first, ("rank", "core", "launch", "region", "offset"))
        h = H.described(trace, np.maximum(heads, 0), ("region", "offset", "peer"))
        # No head write of its own (-1): the member names none (row 0 stood in for it above).
        none = [None] * len(polls)
        columns, tables = coded_columns((
            *d.items(), ("polled", [w.polled for w in polls]), ("returned", [w.returned for w in polls]),
            *((f"head_{name}", [v if r >= 0 else n for v, r, n in zip(h[name], heads.tolist(), none)])
              for name in ("region", "offset", "peer")),
            ("rests_on", [((r, c),) for r, c in zip(d["rank"], d["core"])])))
        yield HitColumns(code=self.code, fields=WrongChannelPoll, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=ROLES, rows=np.stack((first, heads), axis=1), key=H.row_keys(trace, first),
                         constant={"confidence": Confidence.INFERRED})


ROLES = ("poll of the other channel's tail", "head write")


class WrongChannelPoll(NamedTuple):
    """A consumer core's first poll of a tail of another channel than the one whose heads it returns."""

    rank: int
    core: int
    launch: int
    region: str  # the tail it polls, and its slot
    offset: int
    polled: tuple  # the channels whose tails the core polls
    returned: tuple  # the channels whose heads it returns (or the same core of every other rank does)
    head_region: str | None  # one of its head writes: its region, slot and peer (None: it wrote no head)
    head_offset: int | None
    head_peer: int | None


def _message(f: WrongChannelPoll) -> str:
    chans = ", ".join(map(str, f.returned))
    if f.head_region is not None:
        why = (f"returns {f.head_region} for channel {chans} (e.g. {f.head_region}[{f.head_offset}] on rank "
               f"{f.head_peer})")
    else:
        why = f"core {f.core} of every other rank drains channel {chans}"
    return (f"rank {f.rank} core {f.core} launch {f.launch}: polls {f.region}[{f.offset}] "
            f"(channel {', '.join(map(str, f.polled))}) but {why}: it watches another channel's tail "
            f"than the ring it drains")


def _extra(f: WrongChannelPoll) -> dict:
    return {"polled_channels": list(f.polled), "returned_channels": list(f.returned)}
