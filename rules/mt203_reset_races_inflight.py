"""MT203: a flag reset that races a write still in flight from the previous round."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from ._jit import kernel
from .analysis import HappensBefore, Stage, WordTable
from .analysis import codes as C
from .base import Confidence, Family, Rule, Severity, hits_of
from .hit_columns import HitColumns, coded_columns

K_WRITE, K_PUT, K_PUTSIG, K_SIGNAL, K_AMO = C.K_WRITE, C.K_PUT, C.K_PUTSIG, C.K_SIGNAL, C.K_AMO
E_MTE, E_LOCAL, E_P2P = C.E_MTE, C.E_LOCAL, C.E_P2P
_LOOKBACK = 64  # earlier writes of the same word examined per reset
# A round, (launch, phase), is packed as ((launch - launch_min) << 32) + phase: one int64 that
# orders like the pair (phases count from 0).


@kernel
def _round_of_cover(kind, engine, cov, launch, phase_all, launch_min, out):
    # Per row, in row order (cov is a later row of the same core: no random reads): -2 not a
    # write that can be in flight, -1 never completed, else its completion's (launch, phase).
    for i in range(len(kind)):
        k = kind[i]
        out[i] = -2
        if not (k == K_PUT or k == K_PUTSIG or k == K_SIGNAL or k == K_AMO):
            continue
        # MTE signals and atomics are a store plus a pipe barrier: complete at issue; a p2p
        # (NVLink) store is complete by its kernel's end, before any later launch's reset.
        if (k == K_SIGNAL or k == K_AMO) and (engine[i] == E_MTE or engine[i] == E_LOCAL or engine[i] == E_P2P):
            continue
        q = cov[i]
        out[i] = -1 if q < 0 else ((launch[q] - launch_min) << 32) + phase_all[q]


class Table(NamedTuple):
    """The word table's columns ``_scan`` reads (``analysis.WordTable``)."""
    key_launch: np.ndarray
    launch_span: np.int64
    row: np.ndarray
    phase: np.ndarray
    kind: np.ndarray


@kernel
def _scan(table, cround, cov, rank, core, excused):
    # Per key run of the table: (j, x) of each reset and the write racing it, in reset order.
    # A reset looks back, newest first, at the candidate writes of its run still linked: a write
    # that raced (reported once) or completed before a reset's round is unlinked, since the
    # run's rounds only grow. Plain arrays sized once and hits in a list: an array variable
    # reassigned in the loop makes numba count references on every inner iteration.
    # Within a key's run key_launch is (launch - launch_min) plus a constant: it orders and rebuilds launches.
    # excused: sorted j * m + x of the pairs a flag orders (the write's quiet before the reset),
    # passed over like a write its quiet completes earlier on the reset's own core.
    key_launch, launch_span, wrow, wphase, wkind = table
    m = len(wrow)
    longest = 0
    a = 0
    while a < m:
        b = a
        end = (key_launch[a] // launch_span + 1) * launch_span  # the key's entries: key_launch below the next key's
        while b < m and key_launch[b] < end:
            b += 1
        longest = max(longest, b - a)
        a = b
    cr = np.empty(longest, np.int64)  # cround of each entry of the run
    prv = np.empty(longest, np.int64)  # the linked candidates, as entry indices (-1: none)
    nxt = np.empty(longest, np.int64)
    hits = [(np.int64(0), np.int64(0)) for _ in range(0)]
    a = 0
    while a < m:
        b = a
        resets = False
        end = (key_launch[a] // launch_span + 1) * launch_span
        while b < m and key_launch[b] < end:
            resets = resets or wkind[b] == K_WRITE
            b += 1
        if not resets:
            a = b
            continue
        for x in range(a, b):
            cr[x - a] = cround[wrow[x]]
        tail = -1
        for j in range(a, b):
            if wkind[j] == K_WRITE:
                r = wrow[j]
                rj = ((key_launch[j] - (end - launch_span)) << 32) + wphase[j]
                x = tail
                while x >= 0 and x >= j - _LOOKBACK:
                    px = prv[x - a]
                    c = cr[x - a]
                    # Only writes of an earlier round: a previous launch or barrier phase.
                    if key_launch[x] < key_launch[j] or wphase[x] < wphase[j]:
                        raced = True
                        if c >= 0:
                            if c < rj:  # completed before the boundary the reset comes after
                                raced = False
                            else:
                                q = cov[wrow[x]]
                                if rank[q] == rank[r] and core[q] == core[r] and q < r:
                                    x = px
                                    continue
                                if len(excused):
                                    e = np.searchsorted(excused, j * m + x)
                                    if e < len(excused) and excused[e] == j * m + x:
                                        x = px
                                        continue
                        nx = nxt[x - a]
                        if px >= 0:
                            nxt[px - a] = nx
                        if nx >= 0:
                            prv[nx - a] = px
                        else:
                            tail = px
                        if raced:
                            hits.append((np.int64(j), np.int64(x)))
                            break
                    x = px
            if cr[j - a] != -2:
                prv[j - a] = tail
                nxt[j - a] = -1
                if tail >= 0:
                    nxt[tail - a] = j
                tail = j
        a = b
    return hits


class ResetRacesInflight(Rule):
    """A reset of a flag while a write to it from the previous round may still land.

    What it does
        For each local `write` (a reset or clean) of a word of a flag-like
        region, looks back at earlier writes to the same word from an
        earlier launch or barrier phase: puts, put_signals, and signals or
        amos on DMA engines (MTE signals and atomics complete at issue). If
        the write's issuer has no quiet of its engine (or all; of that peer)
        that completes it before the boundary the reset comes after, and no
        flag orders that quiet before the reset (the reset's core waited on
        a word whose observed value needed a write made after the quiet), the
        write can land after the reset. Each racing write is reported once.
        Where the write in flight is an amo that MT404 found relied on
        before its quiet, the hit cites that MT404: the missing quiet is
        the defect, this race one place it shows.

    Why it matters
        The late write re-sets the word the owner just cleaned, so the next
        round starts with a stale non-zero flag or head: corrupted data and
        then a hang. This is DeepEP PR #310 (head-update WQEs arriving after
        the next round's buffer clean); the fix quiets every queue pair
        before cleaning.

    Example
        launch 0: rank 1 amo roce add peer=0 head[2] += 4 (no roce quiet)
        launch 1: rank 0 write head[2] = 0
        -- quiet the RoCE engine before the kernel returns or before the barrier.

    Evidence
        The reset (first) and the write still in flight.
    """

    code = "MT203"
    name = "reset-races-inflight"
    family = Family.STALE_FLAG
    severity = Severity.ERROR
    summary = "Flag reset while a put/signal to it from the previous round is still in flight"
    requires = (Stage.HAPPENS_BEFORE, Stage.WORD_TABLE)
    # An atomic in flight at the reset is one MT404 found relied on before its quiet: that
    # missing quiet is the defect, the race with the reset one place it shows.
    cites = ("MT404",)
    infers_from = ("reset", "slot_words")

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        w = ctx.stage(WordTable).table
        if not len(w.row):
            return
        order = ctx.stage(HappensBefore)
        phase_all, cov, launch = order.phase_all, order.completed_at(), trace["launch"]
        launch_min = np.int64(w.launch_min)  # the table's: its key_launch holds launch - launch_min
        cround = np.empty(trace.n, np.int64)
        _round_of_cover(trace["kind"], trace["engine"], cov, launch, phase_all, launch_min, cround)
        table = Table(w.key_launch, np.int64(w.launch_span), w.row, w.phase, w.kind)
        pairs = _unordered_pairs(table, cround, cov, trace, ctx.stage(WordTable))
        del cround
        pairs = np.array(pairs, np.int64).reshape(-1, 2)
        if not len(pairs):
            return
        # One hit per reset event, however many words it cleans: its first pair.
        once = pairs[np.sort(np.unique(w.row[pairs[:, 0]], return_index=True)[1])]
        reset, write = (w.row[once[:, i]].astype(np.int64) for i in (0, 1))
        yield _batch(self, trace, w, once[:, 0], reset, write)


def _batch(rule, trace, w, entry: np.ndarray, reset: np.ndarray, write: np.ndarray) -> HitColumns:
    """One typed member per reset: the word of its word-table ``entry`` it cleans, and the write in flight."""
    d = H.described(trace, reset, ("rank", "core", "launch", "value", "seq"))
    dx = H.described(trace, write, ("rank", "core", "engine", "kind", "launch", "seq"))
    _, region, offset = trace.decode_keys(w.key_of(entry))
    unquieted = _amo_groups(trace)
    causes = [unquieted.get(g) for g in _groups_of(trace, write)] if unquieted else [None] * len(write)
    columns, tables = coded_columns((
        *d.items(), *((f"writer_{name}", values) for name, values in dx.items()),
        ("region", [H.region_name(trace, r) for r in region.tolist()]), ("offset", offset.tolist()),
        ("relied_on", [c is not None for c in causes]),
        ("caused_by", [(("MT404", c),) if c is not None else () for c in causes]),
        ("rests_on", [((r, None),) for r in dx["rank"]])))
    return HitColumns(code=rule.code, fields=ResetInFlight, render=_message, extra=_extra, columns=columns,
                      tables=tables, roles=("reset", "in-flight write"), rows=np.stack((reset, write), axis=1),
                      key=H.row_keys(trace, reset), constant={"confidence": Confidence.INFERRED})


class ResetInFlight(NamedTuple):
    """A reset of a word that a write of an earlier round, not completed yet, may still land on."""

    rank: int
    core: int
    launch: int
    value: int | None  # what the reset writes
    seq: int
    writer_rank: int  # the write in flight
    writer_core: int
    writer_engine: str
    writer_kind: str
    writer_launch: int
    writer_seq: int
    region: str  # the word reset (of the reset's words, the one the write lands on)
    offset: int
    relied_on: bool  # the write is an amo MT404 found relied on before its quiet


def _message(f: ResetInFlight) -> str:
    where = "the launch boundary" if f.writer_launch < f.launch else "the barrier"
    return (f"rank {f.rank} core {f.core} launch {f.launch}: reset of {f.region}[{f.offset}] to {f.value} at seq "
            f"{f.seq} races rank {f.writer_rank} core {f.writer_core}'s {f.writer_engine} {f.writer_kind} to it "
            f"(launch {f.writer_launch}, seq {f.writer_seq}), which no {f.writer_engine} quiet completed before "
            f"{where}: it can land after the reset"
            + (" (the atomic was relied on before its quiet: MT404)" if f.relied_on else ""))


def _extra(f: ResetInFlight) -> dict:
    return {"writer": f.writer_rank, "engine": f.writer_engine}


def _unordered_pairs(table: Table, cround, cov, trace, words: WordTable) -> list:
    """``_scan``'s (reset, write) pairs less those a flag orders: the reset's core waited on a word
    whose observed value needed a write made after the quiet that completes the write in flight
    (``WordTable.flag_edge``; the barriers and program order ``_scan`` reads itself). Such a pair
    is passed over and the reset looks further back, so the scan runs again with it excused;
    a few rounds at most, since only pairs already found are asked about."""
    rank, core, m = trace["rank"], trace["core"], len(table.row)
    excused: set[int] = set()
    for _ in range(_RESCANS):
        pairs = _scan(table, cround, cov, rank, core, np.array(sorted(excused), np.int64))
        ordered = {j * m + x for j, x in pairs if _flag_ordered(table, cov, words, int(j), int(x))}
        if not ordered:
            return pairs
        excused |= ordered
    return [(j, x) for j, x in pairs if not _flag_ordered(table, cov, words, int(j), int(x))]


_RESCANS = 4  # scans with the flag-ordered pairs excused; past them, such a pair is dropped, not replaced


def _flag_ordered(table: Table, cov, words: WordTable, j: int, x: int) -> bool:
    quiet = int(cov[int(table.row[x])])
    return quiet >= 0 and words.flag_edge(quiet, int(table.row[j])) == "ordered"


def _groups_of(trace, rows: np.ndarray) -> list[tuple]:
    """MT404's grouping of amos: (rank, core, launch, site) of each of ``rows``."""
    return list(zip(*(trace[c][rows].tolist() for c in ("rank", "core", "launch", "site"))))


def _amo_groups(trace) -> dict:
    """MT404's hits of this run by the group of their first amo: {group: hit key}."""
    hits = [h for h in hits_of(trace, "MT404") if h.rows]
    return dict(zip(_groups_of(trace, np.array([h.rows[0][1] for h in hits], np.int64)), (h.key for h in hits)))
