"""``ingest._jit``: a helper shared by two kernels compiles once and serves both; a cache an older version
of a module left behind is replaced, not a crash."""

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


CACHED = '''
from typing import NamedTuple

from ingest._jit import kernel


class {name}(NamedTuple):
    left: int
    right: int


@kernel
def total(pair):
    return pair.left + pair.right
'''


def test_a_cache_an_older_version_of_the_module_wrote_is_replaced(tmp_path, monkeypatch):
    # numba unpickles a kernel's cache index (the types of its cached signatures) before it checks that
    # the source is unchanged: an index whose NamedTuple the module has renamed since raised AttributeError.
    monkeypatch.syspath_prepend(str(tmp_path))
    source = tmp_path / "renamed_tuple_kernels.py"
    for name in ("Pair", "Couple"):  # the same kernel on the same line, its argument's type renamed
        source.write_text(CACHED.format(name=name))
        sys.modules.pop("renamed_tuple_kernels", None)
        mod = importlib.import_module("renamed_tuple_kernels")
        try:
            assert mod.total(getattr(mod, name)(2, 3)) == 5
        finally:
            sys.modules.pop("renamed_tuple_kernels", None)
    assert list((tmp_path / "__pycache__").glob("renamed_tuple_kernels.total-*.nbi"))
