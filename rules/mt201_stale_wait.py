"""MT201: a wait satisfied by a value left over from an earlier launch."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from .analysis import CoreScan, Stage, WordTable
from .analysis import codes as C
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


class StaleWait(Rule):
    """A wait satisfied by a value written in an earlier launch and never reset.

    What it does
        For every wait_end that completed (outcome not timeout), looks at the
        writes of the same launch to the waited word (its first word). If
        none of them can precede the wait_end (each is later on the waiting
        core itself, issued after a barrier of scope all that the waiter had
        not reached yet, or issued after its writer waited on a flag whose
        value needed a write made after the wait_end) while an earlier
        launch did write the word, the
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
        whose value it saw. Flags are asked only where the word's leftover
        value is the one the wait observed.
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
        if not len(stale.ends):
            return
        ends = stale.ends.astype(np.int64)
        begins = ctx.stage(CoreScan).wait_pairs()[1][ends].astype(np.int64)
        writes = w.row[stale.source].astype(np.int64)
        d = H.described(trace, ends, ("rank", "core", "seq", "launch", "region", "offset", "observed"))
        has_begin = begins >= 0
        db = H.described(trace, np.where(has_begin, begins, ends), ("cmp", "value"))
        dw = H.described(trace, writes, ("rank", "kind", "launch", "seq"))
        held = [None if v == C.NULL64 else v for v in w.after[stale.source].tolist()]
        not_reset = words.not_reset()
        keys = trace.key[ends].tolist()
        # "No write of this launch before it" is an absence, and a one-sided write may come
        # from any rank: from one whose launch is not whole too, even one the trace never shows
        # writing the word (a core cut before its first write of it, a missing dump).
        everyone = range(trace.manifest.ranks)
        gaps = [H.launch_gap(trace, everyone, L) if trace.partial else None for L in d["launch"]]
        columns, tables = coded_columns((
            *((name, d[name]) for name in ("rank", "core", "launch", "region", "offset", "observed")),
            ("cmp", [c if b else None for c, b in zip(db["cmp"], has_begin.tolist())]),
            ("target", [v if b else None for v, b in zip(db["value"], has_begin.tolist())]),
            ("held", held), ("writer_rank", dw["rank"]), ("writer_kind", dw["kind"]),
            ("written", dw["launch"]), ("writer_seq", dw["seq"]), ("by_flags", stale.by_flags.tolist()),
            ("gap", gaps),
            ("caused_by", [_left_set(trace, words, not_reset, k, L) for k, L in zip(keys, dw["launch"])])))
        yield HitColumns(code=self.code, fields=LeftoverSeen, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=("stale wait_end", "wait_begin", "earlier write"),
                         rows=np.stack((ends, begins, writes), axis=1), key=H.row_keys(trace, ends),
                         constant={"rests_on": tuple((r, None) for r in everyone)})


class LeftoverSeen(NamedTuple):
    """A completed wait whose launch wrote its word only after it: it saw an earlier launch's value."""

    rank: int
    core: int
    launch: int
    region: str
    offset: int
    observed: int | None
    cmp: str | None  # the wait_begin's comparison (None: its begin is not in the trace)
    target: int | None
    held: int | None  # the word's value after the earlier launch's last write (None: unknown)
    writer_rank: int  # that write
    writer_kind: str
    written: int  # its launch
    writer_seq: int
    by_flags: bool  # a write of this launch is ordered after the wait by flags alone


def _message(f: LeftoverSeen) -> str:
    want = f" {f.cmp} {f.target}" if f.cmp is not None else ""
    held = "unknown" if f.held is None else str(f.held)
    how = (f" (its writes of launch {f.launch} wait on flags that were set only after this wait)"
           if f.by_flags else "")
    return (f"rank {f.rank} core {f.core} launch {f.launch}: wait on {f.region}[{f.offset}]{want} was satisfied "
            f"(observed {f.observed}) with no write of launch {f.launch} before it{how}; the word still held "
            f"{held} from rank {f.writer_rank}'s {f.writer_kind} in launch {f.written} (seq {f.writer_seq}), "
            f"never reset")


def _extra(f: LeftoverSeen) -> dict:
    return {"observed": f.observed, "written_launch": f.written}


def _left_set(trace, words: WordTable, not_reset: dict, key: int, launch: int) -> tuple:
    """MT202's finding on the word where the owner left it off reset at the end of ``launch``, the
    launch whose value the wait saw: that is the defect, the stale wait its consequence."""
    owner, region, offset = trace.decode_key(key)
    found = not_reset.get((owner, region, launch))
    if found is None or not (words.not_reset_offsets(found[1]) == offset).any():
        return ()
    return (("MT202", found[0]),)
