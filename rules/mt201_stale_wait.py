"""MT201: a wait satisfied by a value left over from an earlier launch."""

from __future__ import annotations

from . import _hits as H
from .analysis import CoreScan, Stage, WordTable
from .analysis import codes as C
from .base import Family, Rule, Severity


class StaleWait(Rule):
    """A wait satisfied by a value written in an earlier launch and never reset.

    What it does
        For every wait_end that completed (outcome not timeout), looks at the
        writes of the same launch to the waited word (its first word). If
        none of them can precede the wait_end (each is later on the waiting
        core itself, or issued after a barrier of scope all that the waiter
        had not reached yet) while an earlier launch did write the word, the
        wait was satisfied by that older value. The hit names the wait and
        the last earlier-launch write. Where the launch is not whole on any
        rank (ring wrap, a cut start, a missing dump), this launch's write
        may be in the gap (a one-sided write may come from any rank, also
        one never seen writing the word): a partial-trace note naming it.

    Why it matters
        The consumer proceeds before this round's producer wrote anything:
        it reads last round's rows (silent corruption), and the producer's
        late write then satisfies the *next* round's wait early, so the
        error propagates. The flag should have been reset after use, or the
        wait should compare against this round's generation. Where the
        owner left the word off reset at the end of the launch that wrote
        the value (MT202's finding), the hit cites it: that is the defect.

    Example
        launch 0: rank 1 signals ready[3]=1; rank 0 waits ready[3]==1 (no reset)
        launch 1: rank 0 waits ready[3]==1, satisfied at once; rank 1's signal
        comes after the barrier that follows the wait.

    Evidence
        The wait_end (first), its wait_begin, and the earlier-launch write
        whose value it saw.
    """

    code = "MT201"
    name = "stale-wait"
    family = Family.STALE_FLAG
    severity = Severity.ERROR
    summary = "Wait satisfied by a value written in an earlier launch and never reset"
    requires = (Stage.CORE_SCAN, Stage.WORD_TABLE)
    cites = ("MT202",)
    infers_from = ("reset", "slot_words", "monotonic")

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        words = ctx.stage(WordTable)
        w, stale = words.table, words.stale_waits()
        _, e2b = ctx.stage(CoreScan).wait_pairs()
        everyone = tuple((r, None) for r in range(trace.manifest.ranks))  # a write may come from any rank
        not_reset = words.not_reset() if len(stale.ends) else {}  # built only where a wait is stale
        for e, src in zip(stale.ends.tolist(), stale.source.tolist()):
            b = int(e2b[e])
            d, ds = trace.describe(e), trace.describe(int(w.row[src]))
            want = ""
            if b >= 0:
                db = trace.describe(b)
                want = f" {db['cmp']} {db['value']}"
            held = int(w.after[src])
            held_s = "unknown" if held == C.NULL64 else str(held)
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: wait on {d['region']}[{d['offset']}]"
                   f"{want} was satisfied (observed {d['observed']}) with no write of launch {d['launch']} before "
                   f"it; the word still held {held_s} from rank {ds['rank']}'s {ds['kind']} in launch "
                   f"{ds['launch']} (seq {ds['seq']}), never reset")
            rows = [("stale wait_end", e)] + ([("wait_begin", b)] if b >= 0 else []) + \
                [("earlier write", int(w.row[src]))]
            # "No write of this launch before it" is an absence, and a one-sided write may come
            # from any rank: from one whose launch is not whole too, even one the trace never shows
            # writing the word (a core cut before its first write of it, a missing dump).
            gap = H.launch_gap(trace, range(trace.manifest.ranks), int(d["launch"])) if trace.partial else None
            weak = H.weakened(msg, gap) if gap else {"message": msg}
            yield self.hit(rows=tuple(rows), key=(d["rank"], d["core"], d["seq"]), **weak, rests_on=everyone,
                           caused_by=_left_set(trace, not_reset, int(trace.key[e]), int(ds["launch"])),
                           extra={"observed": d["observed"], "written_launch": ds["launch"]})


def _left_set(trace, not_reset: dict, key: int, launch: int) -> tuple:
    """MT202's finding on the word where the owner left it off reset at the end of ``launch``, the
    launch whose value the wait saw: that is the defect, the stale wait its consequence."""
    owner, region, offset = trace.decode_key(key)
    found = not_reset.get((owner, region, launch))
    if found is None or not (found[1] == offset).any():
        return ()
    return (("MT202", found[0]),)
