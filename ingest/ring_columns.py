"""Column builders and value checks of the ring decoder (``ingest.rings``), one column at a time."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .contract import Kind
from .manifest import Manifest
from .ring_layout import Plan
from .value_ranges import column_range, range_problem


def check_range(raw: np.ndarray, rows: np.ndarray, column: str, kind: np.ndarray, fail) -> None:
    """Fail at the first of ``rows`` whose value lies outside ``column_range(column)``."""
    lo, hi = column_range(column)
    info = np.iinfo(raw.dtype)
    lo, hi = max(lo, int(info.min)), min(hi, int(info.max))  # bounds the slot cannot pass need no test
    if lo == info.min and hi == info.max:
        return
    bad = rows & ((raw < lo) | (raw > hi))
    if bad.any():
        fail(bad, lambda i: f"{Kind(int(kind[i])).wire} event: field {column!r} = {int(raw[i])} "
                            f"{range_problem(column, int(raw[i]))}")


def allowed_names(plan: Plan, spec, kind: int) -> str:
    cmask = next(c for k, c in plan.allowed if k >> kind & 1)
    return ", ".join(f"{m.wire}={int(m)}" for m in spec.enum if cmask >> int(m) & 1)


def plain(values: np.ndarray) -> pa.Array:
    return pa.array(values)


def masked(values: np.ndarray, valid: np.ndarray) -> pa.Array:
    n = len(values)
    typ = pa.from_numpy_dtype(values.dtype)
    nulls = n - int(np.count_nonzero(valid))
    bitmap = None if nulls == 0 else pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(typ, n, [bitmap, pa.py_buffer(np.ascontiguousarray(values))], null_count=nulls)


def name_column(raw: np.ndarray, valid: np.ndarray, manifest: Manifest, fail) -> pa.Array:
    k = len(manifest.names)
    bad = valid & ((raw < 0) | (raw >= k))
    if bad.any():
        fail(bad, lambda i: f"kernel name id {int(raw[i])} unknown to the manifest's {k} names")
    idx = masked(np.where(valid, raw, 0).astype(np.int32), valid)
    return pa.array(list(manifest.names), pa.string()).take(idx)
