"""MT202: a flag not back at its reset value when its launch ends."""

from __future__ import annotations

import numpy as np

from . import _hits as H
from ._flag_causes import behind_stale_counts, late_puts
from .analysis import HappensBefore, Stage, WordTable
from .analysis import codes as C
from .base import Confidence, Family, Rule, Severity

_SHOW = 16  # offsets named in a message


class FlagNotReset(Rule):
    """A flag word left off its region's `reset` value at the end of a launch.

    What it does
        For every word of a region with `reset` (and not `monotonic`), takes
        the value it holds at the end of each launch from the launch's writes
        in happens-before order (unknown after a put that carries no value;
        barrier phases; a write after a wait on the word on the same core
        follows the write that satisfied the wait) and
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
        hits = [self._hit(trace, order, w, members, int(wait_row))
                for members, wait_row in zip(unreset.groups, unreset.wait_row.tolist())]
        yield from behind_stale_counts(trace, hits)

    def _hit(self, trace, order, w, members, wait_row: int):
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
        _, first_at = np.unique(last_rows, return_index=True)
        rows += [("last write", int(r)) for r in last_rows[np.sort(first_at)[:_SHOW]].tolist()]
        nwords = len(members)
        # trace.decode_key's offset of the members shown.
        rest = w.key_of(members[:_SHOW]) % trace.manifest.words_per_rank
        base = trace.region_base
        offs = (rest - base[np.searchsorted(base, rest, "right") - 1]).tolist()
        after = w.after[members]
        vals = sorted(set(np.unique(after[after != C.NULL64]).tolist())
                      | ({"unknown"} if (after == C.NULL64).any() else set()), key=str)
        dl = trace.describe(int(w.row[m0]))
        shown = ", ".join(map(str, offs)) + (" ..." if nwords > _SHOW else "")
        msg = (f"rank {own} launch {launch}: {nwords} word(s) of {H.region_name(trace, region)} not back at "
               f"reset {reset} at the end of the launch (offsets {shown}; value(s) {', '.join(map(str, vals))}); "
               f"last written by rank {dl['rank']} core {dl['core']} seq {dl['seq']} ({dl['kind']}); ")
        causes = late_puts(trace, order, last_rows)
        if causes:  # the producer's missing drain, not the owner's reset, left them set
            msg += (f"each was last written by a put still in flight at the producer's flag write (MT401): it "
                    f"landed after rank {own} took the slots it saw and reset those")
        else:
            msg += f"rank {own} should have reset them"
        conf = H.confidence_for(trace, ranks=sorted({own, dl["rank"]})) or Confidence.INFERRED
        weak = {"message": msg, "confidence": conf}
        # The reset is an absence: where the owner's (or a writer's) launch is not whole, the
        # reset, or the write order that made it unneeded, may be in the lost part of a ring.
        gap = H.launch_gap(trace, {own} | set(np.unique(trace["rank"][last_rows]).tolist()), launch)
        if gap:
            weak = H.weakened(msg, gap)
        first = rows[0][1]
        return self.hit(rows=tuple(rows), caused_by=causes, **weak,
                        key=(int(trace["rank"][first]), int(trace["core"][first]), int(trace["seq"][first])),
                        location={"rank": own, "launch": launch, "region": H.region_name(trace, region),
                                  "offset": off0},
                        extra={"owner": own, "words": nwords, "offsets": offs, "values": vals})
