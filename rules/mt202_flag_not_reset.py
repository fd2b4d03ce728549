"""MT202: a flag not back at its reset value when its launch ends."""

from __future__ import annotations

import numpy as np

from . import _hits as H
from ._flag_causes import behind_stale_counts, late_puts
from ._jit import kernel
from .analysis import HappensBefore, Stage, WordTable
from .analysis import codes as C
from .base import Confidence, Family, Rule, Severity

_SHOW = 16  # offsets named in a message


@kernel
def _first_distinct(values, k):
    """The first ``k`` distinct values in order of first appearance (a group's words may number a
    million, written by a few rows: a sort of them all for 16 rows cost most of a hit)."""
    out = np.empty(min(k, len(values)), values.dtype)
    n = 0
    for i in range(len(values)):
        seen = False
        for j in range(n):
            if out[j] == values[i]:
                seen = True
                break
        if not seen:
            out[n] = values[i]
            n += 1
            if n == k:
                break
    return out[:n]


class FlagNotReset(Rule):
    """A flag word left off its region's `reset` value at the end of a launch.

    What it does
        For every word of a region with `reset` (and not `monotonic`), takes
        the value it holds at the end of each launch from the launch's writes
        in happens-before order (unknown after a put that carries no value;
        barrier phases; a write after a wait on the word on the same core
        follows the write that satisfied the wait; an owner's reset that a
        core barrier or a flag it waited on orders after the last write, a
        sibling core's or a peer's, is that write's successor) and
        reports words not at `reset`. Hits are grouped per (owner rank,
        region, launch) and located at the owner, who should have reset them.
        Skipped: launches of the owner that did not finish or never began
        (a core stuck or without kernel_end, or the owner still stuck in an
        earlier launch: the hang rules explain those), and words whose
        next launch begins by resetting them (clean-before-use, as DeepEP's
        low-latency `next_clean` does), or whose key showed that pattern.
        Where every reported word was last written by a payload put that a
        flag write of its producer overtook (an MT401 hit), the hit cites
        that MT401 as its cause: the put landed after the owner took and
        reset the slots it saw, so the missing drain is the root. A group
        whose words the owner never waited on, in a launch it began with a
        counter word not reset (this rule's hit on a counter region the
        launch before), cites that hit: rows the stale count made it skip.
        Where the owner's or a writer's launch is not whole in the trace
        (ring wrap, missing dump) the reset may be in the gap: the hit is
        then a partial-trace note naming it.

    Why it matters
        The next round's wait on that word is satisfied at once, by the old
        value: the consumer reads rows that are not there yet (MT201 catches
        it where the trace can order it), or a count is off by the old value.

    Example
        rank 1 signals ready[3]=1 to rank 0; rank 0 waits ready[3]==1 and
        copies the row, but never writes ready[3]=0.

    Evidence
        The owner's wait on the word (first, when it waited) and the last
        write of the launch to each reported word (up to 16).
    """

    code = "MT202"
    name = "flag-not-reset"
    family = Family.STALE_FLAG
    severity = Severity.ERROR
    summary = "Flag not back at its reset value at the end of a launch"
    requires = (Stage.HAPPENS_BEFORE, Stage.WORD_TABLE)
    cites = ("MT401",)
    infers_from = ("reset", "slot_words")

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        words = ctx.stage(WordTable)
        w, unreset = words.table, words.unreset()
        order = ctx.stage(HappensBefore)
        # The first word's last write of each group, the writer the message names: its fields a
        # column at a time, not trace.describe per hit.
        named = ("rank", "core", "seq", "kind")
        writer = H.described(trace, w.row[[int(g[0]) for g in unreset.groups]], named)
        hits = [self._hit(trace, order, w, members, wait_row, by)
                for members, wait_row, *by in zip(unreset.groups, unreset.wait_row.tolist(),
                                                  *(writer[f] for f in named))]
        yield from behind_stale_counts(trace, hits)

    def _hit(self, trace, order, w, members, wait_row: int, writer: list):
        m0 = int(members[0])
        own, region, off0 = trace.decode_key(int(w.key_of(m0)))
        launch = int(w.launch_of(m0))
        reset = trace.manifest.regions[region].reset
        rows = []
        # The owner's last wait on the first word, if it waited: it consumed and then did not reset.
        if wait_row >= 0:
            rows.append(("owner's wait", wait_row))
        # A hit can name thousands of words: only the first _SHOW rows and offsets become Python values.
        last_rows = w.row[members]
        rows += [("last write", int(r)) for r in _first_distinct(last_rows, _SHOW).tolist()]
        written = _distinct(last_rows)  # the group's last writes, once each
        nwords = len(members)
        # trace.decode_key's offset of the members shown.
        rest = w.key_of(members[:_SHOW]) % trace.manifest.words_per_rank
        base = trace.region_base
        offs = (rest - base[np.searchsorted(base, rest, "right") - 1]).tolist()
        after = _distinct(w.after[members]).tolist()
        vals = sorted({v for v in after if v != C.NULL64} | ({"unknown"} if C.NULL64 in after else set()), key=str)
        by_rank, by_core, by_seq, by_kind = writer
        shown = ", ".join(map(str, offs)) + (" ..." if nwords > _SHOW else "")
        msg = (f"rank {own} launch {launch}: {nwords} word(s) of {H.region_name(trace, region)} not back at "
               f"reset {reset} at the end of the launch (offsets {shown}; value(s) {', '.join(map(str, vals))}); "
               f"last written by rank {by_rank} core {by_core} seq {by_seq} ({by_kind}); ")
        causes = late_puts(trace, order, written)
        if causes:  # the producer's missing drain, not the owner's reset, left them set
            msg += (f"each was last written by a put still in flight at the producer's flag write (MT401): it "
                    f"landed after rank {own} took the slots it saw and reset those")
        else:
            msg += f"rank {own} should have reset them"
        weak = {"message": msg, "confidence": Confidence.INFERRED}
        # The reset is an absence: where the owner's (or a writer's) launch is not whole, the
        # reset, or the write order that made it unneeded, may be in the lost part of a ring.
        gap = H.launch_gap(trace, {own} | set(_distinct(trace["rank"][written]).tolist()), launch)
        if gap:
            weak = H.weakened(msg, gap)
        first = rows[0][1]
        return self.hit(rows=tuple(rows), caused_by=causes, **weak,
                        rests_on=tuple((r, None) for r in sorted({own, by_rank})),
                        key=(int(trace["rank"][first]), int(trace["core"][first]), int(trace["seq"][first])),
                        location={"rank": own, "launch": launch, "region": H.region_name(trace, region),
                                  "offset": off0},
                        extra={"owner": own, "words": nwords, "offsets": offs, "values": vals})


def _distinct(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``: its sorted distinct values. A group's words run in key order, and a run
    of them shares its last write (a put writes many) and often its value: runs are collapsed
    first, so the sort sees a fraction of them; np.unique's hashing cost ~0.1 ms a group even so."""
    def collapsed(x):
        return x[np.concatenate(([True], x[1:] != x[:-1]))]
    return collapsed(np.sort(collapsed(values)))
