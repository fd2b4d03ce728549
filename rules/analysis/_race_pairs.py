"""Reads of a peer's symmetric memory against the writes of the same words, ordered by
happens-before: what the data-race rules MT601 / MT602 share.

A read is a ``get`` from another rank's non-flag region (flags are read by waits, which
race by design). A write into such a word is a local ``write`` of its owner or a
``put`` / ``put_signal`` into it. Each access has a row where it is done: a write at
its own row (local) or at the quiet that completes it (put); a read at the quiet that
completes it or, for an MTE get, the pipe drain (WaitFlag MTE3_S / MTE3_MTE2,
PipeBarrier MTE3 / ALL) that does. -1: not done in the launch.

Happens-before between a done row ``a`` and a row ``b`` of one launch, never by ts:
the same core: program order; the same rank: a core barrier or sync_all between
(``phase_core``); different ranks: a cross-rank barrier between (``phase_all``, which
counts both barrier layouts). Launch boundaries are global barriers, so only pairs of
one launch can race. Flag observations (a wait_end ordered before the read whose value
needed a write the writer's rank issued after the write) are checked per pair found, in
``WordTable.flag_edge``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import PipeEvent, PipeOp

from .._jit import kernel
from . import _passes as P
from . import _phases
from . import codes as C
from . import regions as R
from ._cache import cached
from ._race_access import AccessColumns, Accesses, accesses, laid_out, running_end, sorted_accesses
from .stages import Stage

K_PIPE, K_BEGIN = C.K_PIPE, C.K_BEGIN
WAIT_FLAG, PIPE_BARRIER = int(PipeOp.WAIT_FLAG), int(PipeOp.PIPE_BARRIER)
EV_MTE3_S, EV_MTE3_MTE2, EV_MTE3, EV_ALL = (int(e) for e in (PipeEvent.MTE3_S, PipeEvent.MTE3_MTE2,
                                                             PipeEvent.MTE3, PipeEvent.ALL))


class Order(NamedTuple):
    """What happens-before between two rows reads: their rank and core, their cross-rank and
    core barrier phases (``_phases.phases``)."""
    rank: np.ndarray
    core: np.ndarray
    phase_all: np.ndarray
    phase_core: np.ndarray


@kernel
def _drain_kernel(seg, kind, pipe_op, event, out):
    # Backward per core: the nearest later pipe drain of the MTE3 writes (a get's landing).
    for s in range(len(seg) - 1):
        nxt = -1
        for i in range(seg[s + 1] - 1, seg[s] - 1, -1):
            k = kind[i]
            if k == K_BEGIN:
                out[i] = -1
                nxt = -1
                continue
            out[i] = nxt
            if k == K_PIPE:
                op, ev = pipe_op[i], event[i]
                if (op == WAIT_FLAG and (ev == EV_MTE3_S or ev == EV_MTE3_MTE2)) or \
                        (op == PIPE_BARRIER and (ev == EV_MTE3 or ev == EV_ALL)):
                    nxt = i


@kernel
def _pairs_kernel(reads, writes, pmax, order, conc, nconc, before):
    # Reads and writes sorted by (group, start); pmax: the running maximum of the writes' ends
    # within their group, so one forward pointer skips every write that ends before a read starts.
    rg, rstart, rend, ri, rd = reads
    wg, wstart, wend, wi, wd = writes
    rank, core, pa, pc = order
    lo = 0
    for i in range(len(rg)):
        g = rg[i]
        while lo < len(wg) and (wg[lo] < g or (wg[lo] == g and pmax[lo] <= rstart[i])):
            lo += 1
        j = lo
        while j < len(wg) and wg[j] == g and wstart[j] < rend[i]:
            if wend[j] > rstart[i]:
                # Does done row a happen before row b? (same core: program order; same rank:
                # a core barrier between; ranks apart: a cross-rank barrier between.)
                a, b = wd[j], ri[i]
                w_before = a >= 0 and ((rank[a] == rank[b] and core[a] == core[b] and a < b) or
                                       (rank[a] == rank[b] and core[a] != core[b] and pc[a] < pc[b]) or
                                       (rank[a] != rank[b] and pa[a] < pa[b]))
                a, b = rd[i], wi[j]
                r_before = a >= 0 and ((rank[a] == rank[b] and core[a] == core[b] and a < b) or
                                       (rank[a] == rank[b] and core[a] != core[b] and pc[a] < pc[b]) or
                                       (rank[a] != rank[b] and pa[a] < pa[b]))
                if w_before:
                    if before[i] < 0:
                        before[i] = j
                elif not r_before:
                    if conc[i] < 0:
                        conc[i] = j
                    nconc[i] += 1
            j += 1


def drains(trace) -> np.ndarray:
    """Per row, the nearest later pipe drain of its core's MTE3 writes in its launch; -1 if none."""
    def build():
        out = C.rows_full(trace.n)
        if trace.n:
            _drain_kernel(trace.segments, trace["kind"], trace["pipe_op"], trace["event"], out)
        return out
    return cached(trace, "mte_drains", build, Stage.HAPPENS_BEFORE)


def done_of(trace, rows: np.ndarray, is_read: bool) -> np.ndarray:
    """The row where each of ``rows`` (all reads or all writes) is done; -1 where not in its launch."""
    rows = np.asarray(rows, np.int64)
    return laid_out(rows, is_read, _access_columns(trace), R.region_table(trace)["elem_bytes"],
                    int(trace.manifest.ranks))[3]


def _access_columns(trace) -> AccessColumns:
    return AccessColumns(*(trace[c] for c in ("kind", "launch", "rank", "peer", "region", "offset", "nbytes",
                                              "engine")), P.completed_at(trace), drains(trace))


def races(trace):
    """Per race-checked read: (read rows, first concurrent write row, concurrent writes, first write
    ordered before it), over reads with at least one concurrent write; cached on the view."""
    def build():
        empty = np.zeros(0, np.int64)
        if trace.n == 0:
            return empty, empty, empty, empty
        rt = R.region_table(trace)
        reads, writes = accesses(trace["kind"], trace["region"], trace["rank"], trace["peer"], rt["flaglike"])
        if not len(reads) or not len(writes):
            return empty, empty, empty, empty
        columns = _access_columns(trace)
        ranks = int(trace.manifest.ranks)
        read = sorted_accesses(reads, True, columns, rt["elem_bytes"], ranks)
        write = sorted_accesses(writes, False, columns, rt["elem_bytes"], ranks)
        reads, writes = read.row, write.row
        pmax = np.empty(len(writes), np.int64)
        running_end(write.group, write.end, pmax)
        order = Order(trace["rank"], trace["core"], *_phases.phases(trace))
        conc = np.full(len(reads), -1, np.int64)
        nconc = np.zeros(len(reads), np.int64)
        before = np.full(len(reads), -1, np.int64)
        _pairs_kernel(read, write, pmax, order, conc, nconc, before)
        hit = conc >= 0
        bw = np.where(before >= 0, writes[np.maximum(before, 0)], -1)
        _released(read, writes, hit, conc, bw, order)
        return reads[hit], writes[conc[hit]], nconc[hit], bw[hit]
    return cached(trace, "races", build, Stage.WORD_TABLE)


def _released(reads: Accesses, writes, hit, conc, bw, order: Order) -> None:
    """A stage reused properly, then read too early, is a missing pre barrier, not a post one.

    A read with a write ordered before it (w0) and an unordered later write (w) looks like
    w overwriting what the read wanted. But where another read of the same rank of those
    words finished before w (the rank had released w0's stage: the post barrier of that
    stage was there), w is the next stage's legitimate write, and this read, unordered with
    it, is missing its pre barrier: its "write before" is forgotten (in place).
    """
    rank, core, pa, pc = order
    rg, rs, re, rows, rdone = reads
    for i in np.flatnonzero(hit & (bw >= 0)):
        w = int(writes[conc[i]])
        same = np.flatnonzero((rg == rg[i]) & (rank[rows] == rank[rows[i]]) & (rs < re[i]) & (re > rs[i]))
        for j in same:
            d = int(rdone[j])
            if j == i or d < 0:
                continue
            if (rank[d] == rank[w] and ((core[d] == core[w] and d < w) or (core[d] != core[w] and pc[d] < pc[w]))) \
                    or (rank[d] != rank[w] and pa[d] < pa[w]):
                bw[i] = -1
                break
