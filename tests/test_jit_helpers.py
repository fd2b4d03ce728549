"""``ingest._jit``: a helper shared by two kernels of one module compiles once and serves both."""

from __future__ import annotations

import importlib
import sys

import numpy as np

MODULE = '''
from ingest._jit import helper, kernel


@helper
def twice(x):
    return 2 * x


@kernel
def first(values):
    return twice(values[0])


@kernel
def second(values):
    return twice(values[-1]) + 1
'''


def test_a_helper_an_earlier_kernel_compiled_serves_the_next(tmp_path, monkeypatch):
    # The first kernel replaces the helper in its module by a dispatcher; the second found the marker on it
    # and tried to compile the dispatcher again (AttributeError: no __globals__).
    (tmp_path / "shared_helper_kernels.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("shared_helper_kernels")
    try:
        values = np.array([3, 5], np.int64)
        assert mod.first(values) == 6
        assert mod.second(values) == 11
    finally:
        sys.modules.pop("shared_helper_kernels", None)
