"""MT108: a ring consumer polls the tail of another channel than the one whose heads it returns."""

from __future__ import annotations

from .analysis import Producers, Stage
from .base import Confidence, Family, Rule, Severity


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
        seen = set()
        regions = trace.manifest.regions
        for w in ctx.stage(Producers).wrong_polls().values():
            if w.first in seen:
                continue
            seen.add(w.first)
            d = trace.describe(w.first)
            tail = regions[int(trace["region"][w.first])].name
            chans = ", ".join(map(str, w.returned))
            if w.head_write >= 0:
                h = trace.describe(w.head_write)
                head = regions[int(trace["region"][w.head_write])].name
                why = f"returns {head} for channel {chans} (e.g. {head}[{h['offset']}] on rank {h['peer']})"
            else:
                why = f"core {d['core']} of every other rank drains channel {chans}"
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: polls {tail}[{d['offset']}] "
                   f"(channel {', '.join(map(str, w.polled))}) but {why}: it watches another channel's tail "
                   f"than the ring it drains")
            rows = (("poll of the other channel's tail", w.first),) + (
                (("head write", w.head_write),) if w.head_write >= 0 else ())
            yield self.hit(msg, rows=rows,
                           key=(d["rank"], d["core"], d["seq"]), confidence=Confidence.INFERRED,
                           rests_on=((d["rank"], d["core"]),), extra={"polled_channels": list(w.polled), "returned_channels": list(w.returned)})
