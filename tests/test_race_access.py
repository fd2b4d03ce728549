"""The data-race join's accesses (``rules.analysis._race_access``) against their numpy definition.

One compiled pass and a packed sort replaced a numpy form of some twenty
temporaries and two lexsorts; this holds the two to the same table: each
access's group, words and done row, sorted by (group, start, row), whether the
packed key fits (small offsets) or not (offsets up to 2^62, nbytes null or
negative, elements of several sizes).
"""

from __future__ import annotations

import numpy as np
import pytest

from rules.analysis import codes as C
from rules.analysis._race_access import AccessColumns, running_end, sorted_accesses


def _columns(rng, n: int, huge: bool) -> AccessColumns:
    kinds = np.array([C.K_GET, C.K_PUT, C.K_WRITE, C.K_PUTSIG], np.int8)
    offset = rng.integers(-5, 2**62 if huge else 300, n).astype(np.int64)
    nbytes = rng.integers(-3, 40, n).astype(np.int64)
    nbytes[rng.random(n) < 0.1] = C.NULL64
    return AccessColumns(
        kind=kinds[rng.integers(0, 4, n)], launch=rng.integers(0, 3, n).astype(np.int32),
        rank=rng.integers(0, 4, n).astype(np.int16), peer=rng.integers(0, 4, n).astype(np.int16),
        region=rng.integers(0, 3, n).astype(np.int16), offset=offset, nbytes=nbytes,
        engine=rng.integers(0, 3, n).astype(np.int8), completed=rng.integers(-1, n, n).astype(np.int32),
        drains=rng.integers(-1, n, n).astype(np.int32))


def _expected(rows, is_read: bool, c: AccessColumns, elem_bytes, ranks: int):
    """The numpy form this module replaced, verbatim in what it computes."""
    at = {name: getattr(c, name)[rows].astype(np.int64) for name in ("launch", "rank", "peer", "region", "nbytes")}
    owner = at["peer"] if is_read else np.where(c.kind[rows] == C.K_WRITE, at["rank"], at["peer"])
    group = (at["launch"] * ranks + owner) * len(elem_bytes) + at["region"]
    e = elem_bytes[at["region"]]
    n = np.where(at["nbytes"] == C.NULL64, 1, (np.maximum(at["nbytes"], 0) + e - 1) // np.maximum(e, 1))
    start = c.offset[rows].astype(np.int64)
    end = start + np.maximum(n, 1)
    cov = c.completed[rows].astype(np.int64)
    if is_read:
        dr = c.drains[rows].astype(np.int64)
        both = np.where(cov < 0, dr, np.where(dr < 0, cov, np.minimum(cov, dr)))
        done = np.where(c.engine[rows] == C.E_MTE, both, cov)
    else:
        done = np.where(c.kind[rows] == C.K_WRITE, rows, cov)
    order = np.lexsort((start, group))
    return group[order], start[order], end[order], rows[order], done[order]


@pytest.mark.parametrize("huge", [False, True], ids=["packed", "lexsort"])
@pytest.mark.parametrize("seed", range(6))
def test_sorted_accesses_are_the_numpy_definition(seed, huge):
    rng = np.random.default_rng(seed)
    n = 3000
    c = _columns(rng, n, huge)
    elem_bytes = np.array([1, 2, 4], np.int64)
    rows = np.flatnonzero(rng.random(n) < 0.6).astype(np.int64)
    for is_read in (True, False):
        got = sorted_accesses(rows, is_read, c, elem_bytes, 4)
        want = _expected(rows, is_read, c, elem_bytes, 4)
        for name, a, b in zip(("group", "start", "end", "row", "done"), got, want):
            assert np.array_equal(a, b), name


def test_no_accesses():
    c = _columns(np.random.default_rng(0), 10, False)
    got = sorted_accesses(np.zeros(0, np.int64), True, c, np.array([1, 2, 4], np.int64), 4)
    assert all(len(a) == 0 for a in got)


def test_running_end_restarts_at_each_group():
    group = np.array([0, 0, 0, 1, 1, 2], np.int64)
    end = np.array([5, 3, 9, -2, -7, 4], np.int64)
    out = np.empty(6, np.int64)
    running_end(group, end, out)
    assert out.tolist() == [5, 5, 9, -2, -2, 4]
