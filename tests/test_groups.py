"""rules.analysis.groups against the numpy forms they replace (np.unique(axis=1); inverse, argsort, split)."""

from __future__ import annotations

import numpy as np
import pytest

from rules.analysis.groups import group_columns, split_groups


def _cols(seed: int, wide: bool):
    rng = np.random.default_rng(seed)
    n = 500
    a = rng.integers(0, 5, n)
    b = rng.integers(-3, 3, n).astype(np.int16)
    c = rng.integers(0, 2**40 if wide else 7, n)  # wide: the packed key overflows, the lexsort form runs
    return (a, b, c) if not wide else (a, c, c, b)


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_group_columns_is_unique_axis1(seed: int, wide: bool) -> None:
    cols = _cols(seed, wide)
    g = group_columns(cols)
    u, first, inv, cnt = np.unique(np.stack([c.astype(np.int64) for c in cols]), axis=1,
                                   return_index=True, return_inverse=True, return_counts=True)
    assert (g.values == u).all() and (g.first == first).all()
    assert (g.inverse == inv.reshape(-1)).all() and (g.counts == cnt).all()


@pytest.mark.parametrize("wide", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_split_groups_is_the_split_of_the_inverse(seed: int, wide: bool) -> None:
    cols = _cols(seed, wide)
    items = np.arange(len(cols[0])) * 3 + 1
    g = group_columns(cols).inverse
    order = np.argsort(g, kind="stable")
    parts = np.split(items[order], np.flatnonzero(np.diff(g[order])) + 1)
    want = [parts[int(i)] for i in g[np.sort(np.unique(g, return_index=True)[1])]]
    got = split_groups(cols, items)
    assert len(got) == len(want)
    assert all((a == b).all() for a, b in zip(got, want))
    assert split_groups([np.zeros(0, np.int64)], np.zeros(0, np.int64)) == []
