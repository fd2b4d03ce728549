"""The accesses the data-race pairs join (``_race_pairs``): which rows read or write a plain
word of another rank's memory, and each one's group, words and done row, sorted for the join.

What a read, a write and an access's done row are: ``_race_pairs`` (its ``done_of`` asks
``_layout`` too, for a few rows). An access's group is (launch, owner rank, region): only
accesses of one group can touch the same words in one launch. Its words are
[start, end) in elements of the region, at least one.

One compiled pass per side computes all four from the trace's columns, and one sort
of a packed key orders them: on a reduce-scatter, where every event is an access, the
numpy form made some twenty int64 temporaries as long as the accesses and two lexsorts
(0.9 s of a 6 M-event window, against the join's 0.09).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import kernel
from . import codes as C

K_PUT, K_GET, K_PUTSIG, K_WRITE = C.K_PUT, C.K_GET, C.K_PUTSIG, C.K_WRITE
E_MTE = C.E_MTE
NULL64 = C.NULL64


class Accesses(NamedTuple):
    """Reads or writes sorted by (group, start): the words [start, end) of one (launch, owner, region)
    group, the access's row and the row where it is done (-1: never in the launch)."""
    group: np.ndarray
    start: np.ndarray
    end: np.ndarray
    row: np.ndarray
    done: np.ndarray


class AccessColumns(NamedTuple):
    """What ``_layout`` reads per event: the trace's columns, and where each row completes."""
    kind: np.ndarray
    launch: np.ndarray
    rank: np.ndarray
    peer: np.ndarray
    region: np.ndarray
    offset: np.ndarray
    nbytes: np.ndarray
    engine: np.ndarray
    completed: np.ndarray  # the quiet that completes the row (``_passes.completed_at``), -1: none
    drains: np.ndarray     # the pipe drain that lands an MTE get (``_race_pairs.drains``), -1: none


def accesses(kind, region, rank, peer, flaglike) -> tuple[np.ndarray, np.ndarray]:
    """(reads, writes): the rows of gets from another rank's plain (not flag-like) region, and
    of local writes, puts and put_signals into a plain region."""
    counts = _accesses_kernel(kind, region, rank, peer, flaglike, np.zeros(0, np.int64), np.zeros(0, np.int64))
    reads, writes = np.empty(counts[0], np.int64), np.empty(counts[1], np.int64)
    _accesses_kernel(kind, region, rank, peer, flaglike, reads, writes)
    return reads, writes


@kernel
def _accesses_kernel(kind, region, rank, peer, flaglike, reads, writes):
    # One pass, twice: counting (empty outputs), then filling; no trace-long temporaries.
    fill = len(reads) > 0 or len(writes) > 0
    nr = 0
    nw = 0
    for i in range(len(kind)):
        r = region[i]
        if r < 0 or r >= len(flaglike) or flaglike[r]:
            continue
        k = kind[i]
        if k == K_GET and peer[i] != rank[i]:
            if fill:
                reads[nr] = i
            nr += 1
        elif k == K_WRITE or k == K_PUT or k == K_PUTSIG:
            if fill:
                writes[nw] = i
            nw += 1
    return nr, nw


def laid_out(rows: np.ndarray, is_read: bool, columns: AccessColumns, elem_bytes: np.ndarray,
             ranks: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(group, start, end, done) of each of ``rows`` (all reads or all writes), in their order."""
    m = len(rows)
    out = tuple(np.empty(m, np.int64) for _ in range(4))
    _layout(rows, is_read, columns, (elem_bytes, np.int64(ranks)), out)
    return out


def sorted_accesses(rows: np.ndarray, is_read: bool, columns: AccessColumns, elem_bytes: np.ndarray,
                    ranks: int) -> Accesses:
    """``rows`` (ascending; all reads or all writes) as ``Accesses``, sorted by (group, start, row)."""
    m = len(rows)
    group, start, end, done = laid_out(rows, is_read, columns, elem_bytes, ranks)
    if not m:
        return Accesses(group, start, end, rows.astype(np.int64), done)
    gmin, smin = int(group.min()), int(start.min())
    gspan, sspan = int(group.max()) - gmin + 1, int(start.max()) - smin + 1
    if gspan * sspan * m >= 2**63:  # keys too far apart to pack: the same order, stable on the row
        order = np.lexsort((start, group))
        return Accesses(group[order], start[order], end[order], rows[order].astype(np.int64), done[order])
    # One packed key, unique by its position, sorted in place; group and start decode from it, so
    # only the rest is gathered (in one pass: the positions are a permutation, each a cache miss).
    key = ((group - gmin) * np.int64(sspan) + (start - smin)) * np.int64(m) + np.arange(m, dtype=np.int64)
    key.sort()
    out = Accesses(group, start, np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, np.int64))
    _unpack(key, np.int64(gmin), np.int64(smin), np.int64(sspan), rows, end, done, out)
    return out


@kernel
def _unpack(key, gmin, smin, sspan, rows, end, done, out):
    # key[j] = ((group - gmin) * sspan + start - smin) * m + position, ascending: the sorted accesses.
    m = len(key)
    group, start, end_out, row_out, done_out = out
    for j in range(m):
        q, at = divmod(key[j], m)
        g, s = divmod(q, sspan)
        group[j] = g + gmin
        start[j] = s + smin
        end_out[j] = end[at]
        row_out[j] = rows[at]
        done_out[j] = done[at]


@kernel
def _layout(rows, is_read, columns, shape, out):
    # Per access: its group (launch, owner, region), its words [start, end), its done row.
    # shape: each region's element bytes, and the manifest's ranks.
    kind, launch, rank, peer, region, offset, nbytes, engine, completed, drains = columns
    elem_bytes, ranks = shape
    nreg = len(elem_bytes)
    group, start, end, done = out
    for j in range(len(rows)):
        i = rows[j]
        r = np.int64(region[i])
        if is_read or kind[i] != K_WRITE:
            owner = np.int64(peer[i])
        else:
            owner = np.int64(rank[i])
        group[j] = (np.int64(launch[i]) * ranks + owner) * nreg + r
        nb = np.int64(nbytes[i])
        e = elem_bytes[r]
        n = np.int64(1) if nb == NULL64 else (max(nb, 0) + e - 1) // max(e, 1)
        s = np.int64(offset[i])
        start[j] = s
        end[j] = s + max(n, 1)
        cov = np.int64(completed[i])
        if not is_read:
            done[j] = i if kind[i] == K_WRITE else cov
        elif engine[i] == E_MTE:
            dr = np.int64(drains[i])
            done[j] = dr if cov < 0 else (cov if dr < 0 else min(cov, dr))
        else:
            done[j] = cov


@kernel
def running_end(group, end, out):
    # The largest end so far within each group of the sorted writes: the join skips, with one
    # forward pointer, every write that ends before a read starts.
    cur = np.int64(0)
    for j in range(len(group)):
        if j == 0 or group[j] != group[j - 1] or end[j] > cur:
            cur = end[j]
        out[j] = cur
