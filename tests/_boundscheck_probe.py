"""Run only by tests/test_boundscheck.py, in its bounds-checked subprocess: the flag is in effect.

A kernel compiled through ``ingest._jit.kernel`` (the only way kernels are
made) raises IndexError on an index past the end instead of reading garbage.
"""

import numpy as np
import pytest

from ingest._jit import kernel


@kernel
def _at(values, i):
    return values[i]


def test_kernels_check_bounds():
    with pytest.raises(IndexError):
        _at(np.arange(3), 10)
