"""MT107: a ring's consumer took the rows but never returned the head the sender waits for."""

from __future__ import annotations

from .analysis import Producers, Stage
from .analysis.producers import channel_words
from .base import Confidence, Family, Rule, Severity


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
        regions = trace.manifest.regions
        P_ = trace.manifest.ranks
        for row, h in sorted(ctx.stage(Producers).withheld_heads().items()):
            c = trace.describe(h.consumer)
            s = trace.describe(row)
            tw = trace.describe(h.tail_write)
            reg = trace["region"]
            head = channel_words(regions[int(reg[row])], s["offset"], P_)
            tail = channel_words(regions[int(reg[h.tail_write])], tw["offset"], P_)
            back = "never stored it" if h.returned is None else f"stored it only up to {h.returned}"
            msg = (f"rank {c['rank']} core {c['core']} launch {c['launch']}: saw {tail} reach {h.seen} "
                   f"(rows sent by rank {s['rank']}), but {back} on rank {s['rank']}: rank {s['rank']} core "
                   f"{s['core']} waits for free space on {head} >= {h.need} forever")
            rows = (("consumer saw the tail", h.consumer), ("sender waits for the head", row),
                    ("sender's tail write", h.tail_write))
            if h.head_write >= 0:
                rows += (("consumer's last head write", h.head_write),)
            yield self.hit(msg, rows=rows, key=(c["rank"], c["core"], c["seq"]), confidence=Confidence.INFERRED,
                           rests_on=((c["rank"], c["core"]), (s["rank"], s["core"])),
                           extra={"sender": s["rank"], "need": h.need, "seen": h.seen, "returned": h.returned})
