"""A parquet column into numpy: the contract's type, nulls as the column's sentinel, copied once.

What ``ingest.dataset`` reads with (``Dataset.arrays`` and ``Dataset.take``): an
integer column goes from its arrow data buffer straight into the destination
array, its nulls set there (a compiled pass where the column is long); a string
column through a dictionary of its few distinct values.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._jit import kernel
from .contract import COLUMN


def _dtype(name: str):
    """The numpy type column ``name`` is read into (its strings as objects)."""
    return object if COLUMN[name].type == pa.string() else COLUMN[name].type.to_pandas_dtype()


def to_numpy(col: pa.ChunkedArray | pa.Array, name: str) -> np.ndarray:
    spec = COLUMN[name]
    if spec.type == pa.string():
        # Through a dictionary: a few distinct kernel names, not one Python str per row.
        if isinstance(col, pa.ChunkedArray):
            col = col.combine_chunks()
        enc = col.dictionary_encode()
        names = np.array(enc.dictionary.to_pylist() + [None], dtype=object)
        return names[enc.indices.fill_null(len(names) - 1).to_numpy(zero_copy_only=False)]
    if col.null_count:
        if col.type != spec.type or not pa.types.is_integer(col.type):
            col = col.fill_null(spec.numpy_null)
        elif isinstance(col, pa.ChunkedArray):
            return np.concatenate([_filled(c, spec.numpy_null) for c in col.chunks])
        else:
            return _filled(col, spec.numpy_null)
    if isinstance(col, pa.ChunkedArray):
        if col.num_chunks == 1:
            return col.chunk(0).to_numpy(zero_copy_only=False)
        return col.to_numpy()
    return col.to_numpy(zero_copy_only=False)


def into(col: pa.ChunkedArray, name: str, dest: np.ndarray) -> None:
    """``to_numpy(col, name)`` written into ``dest`` (as long as ``col``), chunk by chunk.

    An integer column of the contract's type is copied once, from its data
    buffer straight into ``dest``, and its nulls set there; converting first
    and copying after wrote every value twice and paged in a temporary as long
    as the column (0.15-0.2 s of a 10 M-event read of 1.3-1.5 s, measured).
    """
    spec = COLUMN[name]
    if col.null_count == len(col) and spec.type != pa.string():
        dest[:] = spec.numpy_null  # all null: nothing to decode
        return
    if spec.type == pa.string() or col.type != spec.type or not pa.types.is_integer(col.type):
        dest[:] = to_numpy(col, name)
        return
    pos = 0
    for chunk in col.chunks:
        _copy_into(chunk, dest[pos:pos + len(chunk)], spec.numpy_null)
        pos += len(chunk)


def _filled(arr: pa.Array, null: int) -> np.ndarray:
    """An integer array's values, its nulls replaced by ``null``, read from its buffers.

    What arrow's ``fill_null`` gives, without it: that imports ``pyarrow.compute``,
    ~0.04-0.08 s of every diagnose's start-up for one call (bench/RESULTS.md, Start-up).
    """
    out = np.empty(len(arr), arr.type.to_pandas_dtype())
    _copy_into(arr, out, null)
    return out


_KERNEL_FROM = 1 << 16  # rows from which setting nulls in one compiled pass beats loading it (~5 ms per type)


def _copy_into(arr: pa.Array, dest: np.ndarray, null: int) -> None:
    """An integer array's values into ``dest`` (its numpy type), nulls as ``null``."""
    n = len(arr)
    if not n:
        return
    validity, data = arr.buffers()
    lo = arr.offset
    values = np.frombuffer(data, dtype=dest.dtype, count=lo + n)[lo:]
    if validity is None or not arr.null_count:
        dest[:] = values
        return
    bits = np.frombuffer(validity, np.uint8)
    if n < _KERNEL_FROM:
        dest[:] = values
        dest[np.unpackbits(bits, count=lo + n, bitorder="little")[lo:] == 0] = null
    else:
        _copy_with_nulls(values, bits, lo, dest, null)


@kernel
def _copy_with_nulls(values, validity, offset, out, null):
    # values into out, null where arrow's validity bitmap (least significant bit first, from bit
    # ``offset``) has a 0: each element written once, where copying all and then the nulls wrote an
    # optional column twice over (it is mostly runs of nulls: other kinds' rows). Whole bytes of
    # the bitmap at a time between the first and the last byte boundary.
    n = len(out)
    head = min(n, (-offset) & 7)
    body = head + (n - head) // 8 * 8
    for i in range(head):
        b = offset + i
        out[i] = values[i] if (validity[b >> 3] >> (b & 7)) & 1 else null
    for i in range(head, body, 8):
        byte = validity[(offset + i) >> 3]
        for k in range(8):
            out[i + k] = values[i + k] if (byte >> k) & 1 else null
    for i in range(body, n):
        b = offset + i
        out[i] = values[i] if (validity[b >> 3] >> (b & 7)) & 1 else null
