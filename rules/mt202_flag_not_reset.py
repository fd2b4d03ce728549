"""MT202: a flag not back at its reset value when its launch ends."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from ._flag_causes import late_puts, stale_counts
from ._jit import kernel
from .analysis import HappensBefore, Stage, WordTable
from .analysis import codes as C
from .analysis.groups import distinct_per_group, group_columns
from .base import Confidence, Family, Rule, Severity
from .hit_columns import HitColumns, coded

_SHOW = 16  # offsets and last writes a hit names


@kernel
def _first_distinct(values, members, bounds, k, out):
    # Per group g (values[members[bounds[g]:bounds[g + 1]]]), its first k distinct values in order of
    # first appearance into out[g] (-1 past them): a group's words may number a million, written
    # by a few rows, so no sort of them all for the 16 rows a hit names.
    for g in range(len(bounds) - 1):
        n = 0
        for i in range(bounds[g], bounds[g + 1]):
            v = values[members[i]]
            seen = False
            for j in range(n):
                if out[g, j] == v:
                    seen = True
                    break
            if not seen:
                out[g, n] = v
                n += 1
                if n == k:
                    break


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
        w, u = words.table, words.unreset()
        count = len(u)
        if not count:
            return
        order = ctx.stage(HappensBefore)
        sizes = np.diff(u.bounds)
        # Every group's facts at once, from its words (millions, maybe) without a copy as long as
        # they are: its distinct last writes and values, the offsets and last writes it names.
        written, edges = distinct_per_group(w.row, u.members, u.bounds)
        of_written = np.repeat(np.arange(count, dtype=np.int64), np.diff(edges))
        written = written.astype(np.int64)
        causes = late_puts(trace, order, of_written, written, count)
        waited = u.wait_row >= 0
        stale = stale_counts(trace, u.owner, u.region, u.launch, waited, causes)
        evidence = np.full((count, _SHOW), -1, np.int64)
        _first_distinct(w.row, u.members, u.bounds, _SHOW, evidence)
        # An entry stands for w.unit of its region's words (a whole slot), so a group's words are its
        # entries times that; the first _SHOW words named are its first entries' words.
        named = u.bounds[:-1, None] + np.arange(_SHOW)  # the first _SHOW entries of each group
        named = named[named < u.bounds[1:, None]]
        firsts = _split(trace.decode_keys(w.key_of(u.members[named]))[2], np.minimum(sizes, _SHOW))
        offsets = [tuple(w.words_from(first, r)[:_SHOW].tolist()) for first, r in zip(firsts, u.region.tolist())]
        sizes = sizes * w.unit[u.region]
        value, value_edges = distinct_per_group(w.after, u.members, u.bounds)
        values = [_shown_values(v) for v in _split(value, np.diff(value_edges))]
        first_rows = w.row[u.first()].astype(np.int64)
        writer = H.described(trace, first_rows, ("rank", "core", "seq", "kind"))
        gaps = _gaps(trace, u, of_written, written)
        regions = [H.region_name(trace, r) for r in range(len(trace.manifest.regions))]
        region = [regions[r] for r in u.region.tolist()]
        reset = [trace.manifest.regions[r].reset for r in u.region.tolist()]
        owner, launch = u.owner.tolist(), u.launch.tolist()
        # A stale count's group, named by its hit's key, its region and launch.
        key_rows = u.key_rows(w)
        keys = H.row_keys(trace, key_rows)
        key_list = [tuple(k) for k in keys.tolist()]
        why = [("late-put" if c else "stale-count" if s is not None else "not-reset") for c, s in zip(causes, stale)]
        caused_by = [c if c else (("MT202", key_list[s]),) if s is not None else () for c, s in zip(causes, stale)]
        columns: dict[str, np.ndarray] = {}
        tables: dict[str, tuple] = {}
        for name, column in (
                ("owner", owner), ("launch", launch), ("region", region), ("reset", reset),
                ("words", sizes.tolist()), ("offsets", offsets), ("values", values),
                ("writer_rank", writer["rank"]), ("writer_core", writer["core"]), ("writer_seq", writer["seq"]),
                ("writer_kind", writer["kind"]), ("why", why),
                ("stale_region", [None if s is None else region[s] for s in stale]),
                ("stale_launch", [None if s is None else launch[s] for s in stale]),
                ("caused_by", caused_by), ("gap", gaps),
                ("rests_on", [tuple((r, None) for r in sorted({o, b})) for o, b in zip(owner, writer["rank"])]),
                ("location", [(("rank", o), ("launch", L), ("region", r), ("offset", offs[0]))
                              for o, L, r, offs in zip(owner, launch, region, offsets)])):
            columns[name], tables[name] = coded(column)
        tables["location"] = tuple(dict(items) for items in tables["location"])
        # The reset is an absence: where the owner's (or a writer's) launch is not whole, the reset,
        # or the write order that made it unneeded, may be in the lost part of a ring (the gap
        # makes it a partial-trace note); else the hit is inferred from the write order.
        confidence = (Confidence.INFERRED, Confidence.CERTAIN)
        columns["confidence"] = np.array([g is not None for g in gaps], np.int64)
        tables["confidence"] = confidence
        rows = np.concatenate((u.wait_row[:, None], evidence), axis=1)
        yield HitColumns(code=self.code, fields=NotReset, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=ROLES, rows=rows, key=keys)


ROLES = ("owner's wait",) + ("last write",) * _SHOW


class NotReset(NamedTuple):
    """A group of words of one region an owner left off reset at the end of a launch."""

    owner: int
    launch: int
    region: str
    reset: int | None  # the region's reset value
    words: int
    offsets: tuple  # the first _SHOW words' offsets
    values: tuple  # the values the words hold (sorted as text; "unknown" after a put without one)
    writer_rank: int  # the first word's last write
    writer_core: int
    writer_seq: int
    writer_kind: str
    why: str  # late-put (an MT401's put landed late), stale-count (rows a stale count skipped), not-reset
    stale_region: str | None  # stale-count: the counter region left off reset, and its launch
    stale_launch: int | None


def _message(f: NotReset) -> str:
    shown = ", ".join(map(str, f.offsets)) + (" ..." if f.words > _SHOW else "")
    head = (f"rank {f.owner} launch {f.launch}: {f.words} word(s) of {f.region} not back at reset {f.reset} at "
            f"the end of the launch (offsets {shown}; value(s) {', '.join(map(str, f.values))}); last written "
            f"by rank {f.writer_rank} core {f.writer_core} seq {f.writer_seq} ({f.writer_kind}); ")
    if f.why == "late-put":  # the producer's missing drain, not the owner's reset, left them set
        return head + (f"each was last written by a put still in flight at the producer's flag write (MT401): it "
                       f"landed after rank {f.owner} took the slots it saw and reset those")
    if f.why == "stale-count":
        return head + (f"rank {f.owner} never waited on them: rows it did not take, its count being last launch's "
                       f"({f.stale_region} not reset in launch {f.stale_launch})")
    return head + f"rank {f.owner} should have reset them"


def _extra(f: NotReset) -> dict:
    return {"owner": f.owner, "words": f.words, "offsets": list(f.offsets), "values": list(f.values)}


def _split(values: np.ndarray, sizes: np.ndarray) -> list[tuple]:
    """``values`` cut into consecutive tuples of ``sizes``."""
    values = values.tolist()
    edges = np.concatenate(([0], np.cumsum(sizes))).tolist()
    return [tuple(values[a:b]) for a, b in zip(edges[:-1], edges[1:])]


def _shown_values(distinct: tuple) -> tuple:
    """A group's distinct values as a message names them: "unknown" for no value, sorted as text."""
    return tuple(sorted({v for v in distinct if v != C.NULL64} | ({"unknown"} if C.NULL64 in distinct else set()),
                        key=str))


def _gaps(trace, u, of_written: np.ndarray, written: np.ndarray) -> list[str | None]:
    """Per group, why its owner's or a writer's launch is not whole in the trace, else None."""
    if not trace.partial:
        return [None] * len(u)
    of_rank, rank = group_columns((of_written, trace["rank"][written].astype(np.int64))).values
    ranks = _split(rank, np.bincount(of_rank, minlength=len(u)))
    return [H.launch_gap(trace, {o, *r}, L) for o, r, L in zip(u.owner.tolist(), ranks, u.launch.tolist())]
