"""rules.analysis.codes: the contract's codes as plain ints, and the helpers over them."""

from __future__ import annotations

import numpy as np
import pytest

from rules.analysis.codes import one_of


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("values", [[], [3], [0, 5, 7], [-1, 2**40], list(range(-3, 12)), np.array([4, 9], np.int64)])
def test_one_of_is_isin(dtype, values):
    info = np.iinfo(dtype)
    column = np.random.default_rng(7).integers(max(info.min, -20), min(info.max, 20), 5000).astype(dtype)
    column[:3] = (info.min, info.max, 0)  # the nulls and a code
    expected = np.isin(column, np.asarray(values, np.int64))
    got = one_of(column, values)
    assert got.dtype == np.bool_ and np.array_equal(got, expected)
