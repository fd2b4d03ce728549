"""A dataset's integer columns come out of ``ingest.column_read.to_numpy`` with nulls as the column's
sentinel, filled from the validity bitmap (numpy, or a compiled pass for long chunks; so that
reading a dataset needs no ``pyarrow.compute``): the same arrays, dtypes included, as arrow's
``fill_null``; ``into`` writes them straight into a window's array."""

from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401  (the reference below: fill_null)
import pytest

from ingest.contract import COLUMN
from ingest import column_read as D
from ingest.column_read import into, to_numpy


def _reference(col, name):
    return col.fill_null(COLUMN[name].numpy_null).to_numpy()


@pytest.mark.parametrize("name", ["rank", "kind", "launch", "seq", "value", "words"])
def test_nulls_filled_as_fill_null_fills_them(name):
    rng = random.Random(name)
    type_ = COLUMN[name].type
    for _ in range(100):
        n = rng.randint(1, 70)  # across bitmap bytes, and slices that start mid-byte
        values = [None if rng.random() < 0.3 else rng.randint(-5, 100) for _ in range(n)]
        whole = pa.array(values, type_)
        lo = rng.randint(0, n - 1)
        part = whole.slice(lo, rng.randint(0, n - lo))
        for col in (part, pa.chunked_array([whole.slice(0, lo), part, whole, pa.array([1], type_)], type_)):
            if not col.null_count:
                continue
            got, want = to_numpy(col, name), _reference(col, name)
            assert got.dtype == want.dtype and got.tolist() == want.tolist(), (values, lo, len(part))
            dest = np.full(len(col) + 2, 99, want.dtype)  # the window's array, this file's rows in its middle
            into(pa.chunked_array(col) if isinstance(col, pa.Array) else col, name, dest[1:-1])
            assert dest[[0, -1]].tolist() == [99, 99] and dest[1:-1].tolist() == want.tolist()


def test_every_null_and_empty_chunks():
    type_ = COLUMN["peer"].type
    col = pa.chunked_array([pa.array([], type_), pa.nulls(3, type_), pa.array([7, None], type_)], type_)
    got = to_numpy(col, "peer")
    assert got.dtype == np.int16 and got.tolist() == _reference(col, "peer").tolist() == [-(2**15)] * 3 + [7, -(2**15)]


@pytest.mark.parametrize("name", ["offset", "peer", "outcome"])
def test_long_chunks_filled_by_the_compiled_pass_as_fill_null_fills_them(name, monkeypatch):
    """From ``_KERNEL_FROM`` rows the nulls are set by a compiled pass over the bitmap: the same values,
    at chunk offsets that start mid-byte."""
    monkeypatch.setattr(D, "_KERNEL_FROM", 8)
    rng = np.random.default_rng(len(name))
    type_ = COLUMN[name].type
    values = rng.integers(-3, 100, 1000)
    nulls = rng.random(1000) < 0.4
    nulls[100:300], nulls[600:700] = True, False  # runs of whole bitmap bytes: all null, no null
    whole = pa.array(values, type_, mask=nulls)
    col = pa.chunked_array([whole.slice(3, 500), whole.slice(11, 9), whole.slice(0, 5), whole.slice(517)], type_)
    dest = np.empty(len(col), _reference(col, name).dtype)
    into(col, name, dest)
    assert dest.tolist() == _reference(col, name).tolist()


@pytest.mark.parametrize("n", [1000, 200_003], ids=["numpy", "compiled"])
@pytest.mark.parametrize("offset", [0, 3, 8])
def test_an_integer_column_is_copied_with_its_nulls_as_the_sentinel(n, offset):
    """``column_read._copy_into``: each value where arrow has one, the sentinel where it has a null,
    from an array that starts inside its buffers (a slice), whichever path the length takes."""
    rng = np.random.default_rng(n + offset)
    values = rng.integers(-2**40, 2**40, n + offset + 5)
    valid = rng.random(len(values)) < 0.3
    valid[offset + 16:offset + 80] = True  # whole bytes of values, and of nulls
    valid[offset + 80:offset + 200] = False
    arr = pa.array(values, mask=~valid).slice(offset, n)
    null = -(2**63)
    out = np.empty(n, np.int64)
    D._copy_into(arr, out, null)
    assert np.array_equal(out, np.where(valid[offset:offset + n], values[offset:offset + n], null))
