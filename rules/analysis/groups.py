"""Groups of equal key tuples over parallel integer columns: ``np.unique(np.stack(cols), axis=1)`` without its cost.

``np.unique(..., axis=1)`` views the columns as one structured (void) dtype
and argsorts that with a generic field-by-field compare: on the synthetic
trace's millions of word-table entries that one sort was most of MT202's
time. Here the columns are packed into one int64 when their value ranges
allow (the common case: ranks, launches, regions, keys) and sorted once,
stable; otherwise they are lexsorted. The groups come out in the same order
(lexicographic by the columns, first column most significant) with the same
ids, first indices and counts as ``np.unique``'s.
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

import numpy as np

from .._jit import kernel


class Groups(NamedTuple):
    values: np.ndarray   # (len(cols), groups): each group's key tuple, as np.unique's first output
    first: np.ndarray    # index of each group's first member
    inverse: np.ndarray  # group id of every element
    counts: np.ndarray   # members per group


def group_columns(cols: Sequence[np.ndarray]) -> Groups:
    """The distinct tuples of ``cols`` (equal-length integer arrays), in lexicographic order."""
    cols = [np.asarray(c) for c in cols]
    n = len(cols[0]) if cols else 0
    dtype = np.result_type(*cols) if cols else np.int64
    if n == 0:
        empty = np.zeros(0, np.intp)
        return Groups(np.zeros((len(cols), 0), dtype), empty, empty, empty)
    order, starts = _sorted_runs(cols)
    first = order[starts]
    ids = np.zeros(n, np.intp)
    ids[starts[1:]] = 1
    inverse = np.empty(n, np.intp)
    inverse[order] = np.cumsum(ids)
    counts = np.diff(np.append(starts, n))
    values = np.stack([c[first] for c in cols]).astype(dtype, copy=False)
    return Groups(values, first, inverse, counts)


def _sorted_runs(cols: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """A stable order of the (non-empty) tuples of ``cols`` and where each run of equal tuples
    starts in it: one int64 sort where the packed key fits, else a lexsort."""
    key = _packed(cols)
    if key is not None:
        order = np.argsort(key, kind="stable")
        sk = key[order]
        return order, np.flatnonzero(np.concatenate(([True], sk[1:] != sk[:-1])))
    order = np.lexsort(cols[::-1])  # lexsort is stable: equal tuples keep their index order
    change = np.zeros(len(order), bool)
    change[0] = True
    for c in cols:
        sc = c[order]
        change[1:] |= sc[1:] != sc[:-1]
    return order, np.flatnonzero(change)


def _packed(cols: Sequence[np.ndarray]) -> np.ndarray | None:
    """One int64 per element that orders as the tuple does; None where the ranges do not fit in 63 bits."""
    if not all(c.dtype.kind in "iub" for c in cols):
        return None
    lows, spans = [], []
    total = 1
    for c in cols:
        lo, hi = int(c.min()), int(c.max())
        if hi >= 2**63:
            return None
        span = hi - lo + 1
        total *= span
        if total >= 2**62:
            return None
        lows.append(lo)
        spans.append(span)
    key = np.zeros(len(cols[0]), np.int64)
    for c, lo, span in zip(cols, lows, spans):
        key *= span
        key += c.astype(np.int64) - lo
    return key


def split_groups(cols: Sequence[np.ndarray], items: np.ndarray) -> list[np.ndarray]:
    """``items`` split by the distinct tuples of ``cols``: one array per group, the groups in order of
    their first member, each group's members in index order.

    What ``group_columns(cols).inverse``, a stable argsort of it, ``np.split`` and the order of first
    occurrence gave, from the one sort ``group_columns`` makes.
    """
    cols = [np.asarray(c) for c in cols]
    items = np.asarray(items)
    n = len(items)
    if n == 0:
        return []
    order, starts = _sorted_runs(cols)
    parts = np.split(items[order], starts[1:])
    return [parts[i] for i in np.argsort(order[starts], kind="stable").tolist()]


@kernel
def _distinct(values, members, bounds, out, out_bounds):
    # Per group g, the sorted distinct values of values[members[bounds[g]:bounds[g + 1]]] into
    # out[out_bounds[g]:out_bounds[g + 1]]; returns how many in all. A group's words run in key
    # order and a run of them shares its last write (a put writes many) and often its value: runs
    # are collapsed as they are read, so the sort sees a fraction of them. out: room for every
    # member and group.
    pos = 0
    out_bounds[0] = 0
    for g in range(len(bounds) - 1):
        start = pos
        for i in range(bounds[g], bounds[g + 1]):
            v = values[members[i]]
            if i == bounds[g] or v != out[pos - 1]:
                out[pos] = v
                pos += 1
        out[start:pos] = np.sort(out[start:pos])
        kept = start
        for i in range(start, pos):
            if i == start or out[i] != out[kept - 1]:
                out[kept] = out[i]
                kept += 1
        pos = kept
        out_bounds[g + 1] = pos
    return pos


def distinct_per_group(values: np.ndarray, members: np.ndarray, bounds: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct, edges): group g's sorted distinct ``values[members[bounds[g]:bounds[g + 1]]]`` are
    ``distinct[edges[g]:edges[g + 1]]``. The scratch is as long as the members and groups, but only
    the runs written into it are ever touched (a page is only paid for once written), and the
    result is copied out of it."""
    out = np.empty(len(members) + len(bounds), values.dtype)
    edges = np.empty(len(bounds), np.int64)
    return out[:_distinct(values, members, bounds, out, edges)].copy(), edges
