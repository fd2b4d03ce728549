"""Encode events as binary ring dumps (``*.mtr``), vectorized.

The inverse of ``ingest.rings.read_ring_file``, for tests, the benchmark and
the simulator: ``encode_rings`` lays events out exactly as the device header
(kernels/device/moetrace.h) would, including what a wrapped ring overwrote.
Import it from ``ingest.rings``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from .contract import COLUMN, Kind
from .manifest import Manifest
from .ring_layout import HEADER_DTYPE, HEADER_SIZE, MAGIC, PLANS, RECORD_DTYPE, RECORD_SIZE, REGION_SLOTS, VERSION

_KINDS = len(Kind)
# Which kinds carry each plan's column (row p for PLANS[p]), and each slot's value range:
# a few events touch a handful of the plans, and finding them is one pass, not one per plan.
_CARRIES = np.stack([p.required | (p.bit != 0) for p in PLANS])
_SLOT_RANGE = {p.slot: (int(np.iinfo(RECORD_DTYPE[p.slot]).min), int(np.iinfo(RECORD_DTYPE[p.slot]).max))
               for p in PLANS}

def _columns_of(events) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray], int]:
    """Values and validity of every contract column present in a table or dict of arrays."""
    vals, valid = {}, {}
    if isinstance(events, pa.Table):
        n = events.num_rows
        for name in events.column_names:
            if name not in COLUMN:
                continue
            col = events.column(name)
            ok = np.ones(n, bool) if col.null_count == 0 else col.is_valid().to_numpy(zero_copy_only=False)
            if COLUMN[name].type == pa.string():
                vals[name] = np.asarray(col.to_pylist(), dtype=object)
            else:
                vals[name] = col.fill_null(0).to_numpy() if col.null_count else col.to_numpy()
            valid[name] = ok
    else:
        n = len(next(iter(events.values()))) if events else 0
        for name, arr in events.items():
            if name not in COLUMN:
                continue
            arr = np.asarray(arr)
            if COLUMN[name].type == pa.string():
                ok = np.array([v is not None for v in arr], dtype=bool)
            else:
                ok = arr != COLUMN[name].numpy_null
            vals[name], valid[name] = arr, ok
    for name in ("rank", "core", "seq", "ts", "kind"):
        if name not in vals or not valid[name].all():
            raise ValueError(f"encode_rings: column {name!r} is missing or has nulls")
    return vals, valid, n


def encode_rings(events, manifest: Manifest, capacity: int | None = None,
                 renumber: bool = False, full: bool = False) -> bytes:
    """Encode events as a ring dump, one ring per (rank, core) in (rank, core) order.

    ``events``: a pa.Table of contract columns (region fields as ids) or a dict
    of numpy arrays (nulls as each column's sentinel). seq must be 0..n-1 per
    (rank, core), as a device writes it, unless ``renumber`` replaces it by
    program order. With ``capacity`` a ring keeps only its last ``capacity``
    records, exactly as the device would after wrapping (the rest count lost);
    without, each ring is just big enough. ``full`` dumps all ``capacity``
    slots even of a ring that never wrapped, like a raw device copy.
    """
    vals, valid, n = _columns_of(events)
    rank = vals["rank"].astype(np.int64)
    core = vals["core"].astype(np.int64)
    seq = vals["seq"].astype(np.int64)
    order = np.lexsort((seq, core, rank))
    sorted_key = (rank * 65536 + core)[order]
    bounds = np.flatnonzero(np.diff(sorted_key)) + 1
    gstart = np.concatenate(([0], bounds)) if n else np.zeros(0, np.int64)
    gend = np.concatenate((bounds, [n])) if n else np.zeros(0, np.int64)
    gsize = gend - gstart
    idx = np.arange(n, dtype=np.int64) - np.repeat(gstart, gsize)
    if renumber:
        seq = np.empty(n, np.int64)
        seq[order] = idx
    elif not np.array_equal(seq[order], idx):
        raise ValueError("encode_rings: seq must run 0..n-1 per (rank, core) (pass renumber=True)")
    recs = _records(vals, valid, n, seq, manifest)
    recs = recs[order]
    pieces = []
    for s, e in zip(gstart, gend):
        r, c = int(rank[order[s]]), int(core[order[s]])
        if not (0 <= r < manifest.ranks and 0 <= c < manifest.cores):
            raise ValueError(f"encode_rings: rank {r} core {c} outside the manifest")
        count = int(e - s)
        cap = count if capacity is None else int(capacity)
        if cap <= 0:
            raise ValueError("encode_rings: capacity must be > 0")
        keep = min(count, cap)
        stored = cap if (full or count > cap) else count
        slots = np.zeros(stored, RECORD_DTYPE)
        slots[np.arange(count - keep, count) % cap] = recs[e - keep:e]
        pieces.append(ring_header(r, c, cap, count, stored))
        pieces.append(slots.tobytes())
    return b"".join(pieces)


def ring_header(rank: int, core: int, capacity: int, write_count: int, stored: int | None = None) -> bytes:
    h = np.zeros(1, HEADER_DTYPE)
    h["magic"], h["version"] = MAGIC, VERSION
    h["record_size"], h["header_size"] = RECORD_SIZE, HEADER_SIZE
    h["capacity"], h["write_count"] = capacity, write_count
    h["rank"], h["core"] = rank, core
    h["stored"] = capacity if stored is None else stored
    return h.tobytes()


def _records(vals, valid, n, seq, manifest: Manifest) -> np.ndarray:
    recs = np.zeros(n, RECORD_DTYPE)
    kind = vals["kind"].astype(np.int64)
    if n and (kind.min() < 0 or kind.max() >= _KINDS):
        raise ValueError("encode_rings: unknown kind code")
    recs["ts"] = vals["ts"]
    recs["seq_lo"] = (seq & 0xFFFFFFFF).astype(np.uint32)
    recs["launch"] = vals["launch"] if "launch" in vals else 0
    recs["kind"] = kind
    present = np.zeros(n, np.uint16)
    kind_i = kind.astype(np.intp)
    held = np.zeros(len(_CARRIES[0]), bool)
    held[kind_i] = True
    for p in np.flatnonzero(_CARRIES[:, held].any(axis=1)):
        plan = PLANS[p]
        carried = _CARRIES[p][kind_i]
        ok = valid.get(plan.column, np.zeros(n, bool)) & carried
        missing = plan.required[kind_i] & ~ok
        if missing.any():
            i = int(np.argmax(missing))
            raise ValueError(f"encode_rings: {Kind(kind[i]).wire} event {i} lacks required {plan.column}")
        if not ok.any():
            continue
        v = vals[plan.column][ok]
        if plan.column == "name":
            ids = {name: k for k, name in enumerate(manifest.names)}
            try:
                v = np.array([ids[x] for x in v], dtype=np.int64)
            except KeyError as e:
                raise ValueError(f"encode_rings: kernel name {e.args[0]!r} not in the manifest's names") from None
        slot_type = recs.dtype[plan.slot]
        v = np.asarray(v).astype(np.int64)
        lo, hi = _SLOT_RANGE[plan.slot]
        if v.min() < lo or v.max() > hi:
            raise ValueError(f"encode_rings: {plan.column} out of range for its {slot_type} slot")
        if plan.slot in REGION_SLOTS and v.max() >= len(manifest.regions):
            raise ValueError(f"encode_rings: {plan.column} id {int(v.max())} unknown to the manifest")
        recs[plan.slot][ok] = v
        opt = ok & (plan.bit[kind_i] != 0)
        present[opt] |= plan.bit[kind_i][opt]
    recs["present"] = present
    return recs


def write_ring_file(path: str | Path, events, manifest: Manifest, **kw) -> None:
    Path(path).write_bytes(encode_rings(events, manifest, **kw))
