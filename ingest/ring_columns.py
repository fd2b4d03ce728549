"""The careful ring decoder (``ingest.rings``): numpy passes, a column and a check at a time.

It decodes what the fast path (``ingest.ring_fast``) cannot vouch for, and words
the first problem it meets.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .contract import COLUMN, Kind
from .errors import TraceError
from .manifest import Manifest
from .ring_layout import PLANS, RECORD_DTYPE, RECORD_SIZE, REGION_SLOTS, Plan, slot_bounds
from .value_ranges import column_range, must_be_rank, range_problem

_BLOCK = 8192  # records copied per slot at a time (512 KiB: stays in cache)
_KINDS = len(Kind)
assert sorted(int(k) for k in Kind) == list(range(_KINDS))  # a code past the last kind is unknown
_NP_TYPE = {pa.int8(): np.int8, pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64}


class Records(NamedTuple):
    """A chunk's records in a dump: the dump's bytes, the runs of 64-byte units (first, count), each record's
    seq and byte position, the dump's path (for errors)."""
    data: np.ndarray
    pieces: list
    seq: np.ndarray
    positions: np.ndarray
    path: Path


def careful_columns(records: Records, manifest: Manifest) -> dict[str, pa.Array]:
    """Every column the records fill but rank, core and seq, checked; TraceError at the first problem."""
    data, seq, positions, path = records.data, records.seq, records.positions, records.path
    total = len(seq)
    units = data[: len(data) // RECORD_SIZE * RECORD_SIZE].view(RECORD_DTYPE)

    # Every slot in one pass over the records, a cache-sized block at a time:
    # slot by slot over the whole chunk would stream all 64 bytes per record
    # from memory once per slot.
    names = [n for n in RECORD_DTYPE.names if n != "pad"]
    slots = {n: np.empty(total, RECORD_DTYPE[n]) for n in names}
    srcs = {n: units[n] for n in names}
    o = 0
    for lo, k in records.pieces:
        for b in range(0, k, _BLOCK):
            m = min(_BLOCK, k - b)
            for n in names:
                slots[n][o:o + m] = srcs[n][lo + b:lo + b + m]
            o += m
    del srcs

    def gather(slot: str) -> np.ndarray:
        return slots[slot]

    def fail(mask: np.ndarray, msg) -> None:
        i = int(np.argmax(mask))
        raise TraceError(path, f"byte {int(positions[i])}", msg(i))

    seq_lo = gather("seq_lo")
    bad = seq_lo != seq.astype(np.uint32)
    if bad.any():
        fail(bad, lambda i: f"record holds seq_lo {int(seq_lo[i])} where record {int(seq[i])} belongs "
                            f"(a corrupt or half-written record)")
    kind = gather("kind")
    bad = kind >= _KINDS
    if bad.any():
        fail(bad, lambda i: f"unknown kind code {int(kind[i])}")

    cols: dict[str, pa.Array] = {}
    everywhere = np.ones(total, bool)
    for name in ("ts", "launch"):
        check_range(gather(name), everywhere, name, kind, fail)
        cols[name] = plain(gather(name))
    cols["kind"] = plain(kind.astype(np.int8))
    here = np.flatnonzero(np.bincount(kind, minlength=_KINDS))
    kinds_here = sum(1 << int(k) for k in here)
    kindbit = np.left_shift(np.uint32(1), kind.astype(np.uint32))
    present = gather("present")
    nreg = len(manifest.regions)
    slot_cache: dict[str, np.ndarray] = {}
    code_cache: dict[str, np.ndarray] = {}
    held: dict[str, int] = {}  # per enum slot, the codes it holds (``_held_codes``)

    kind_masks: dict[int, np.ndarray] = {}

    def of_kinds(mask: int) -> np.ndarray:
        """Rows whose kind is in ``mask`` (shared: callers must not modify it)."""
        mask &= kinds_here
        got = kind_masks.get(mask)
        if got is None:
            if mask == kinds_here:
                got = np.ones(total, bool)
            elif mask == 0:
                got = np.zeros(total, bool)
            else:
                got = (kindbit & np.uint32(mask)) != 0
            kind_masks[mask] = got
        return got

    for plan in PLANS:
        spec = COLUMN[plan.column]
        if not plan.kinds & kinds_here:
            continue
        valid = of_kinds(plan.req_kinds)
        for kmask, b in plan.opt_kinds:
            if kmask & kinds_here:
                valid = valid | (of_kinds(kmask) & ((present & np.uint16(b)) != 0))
        if not valid.any():
            continue
        raw = slot_cache.get(plan.slot)
        if raw is None:
            raw = slot_cache[plan.slot] = gather(plan.slot)
        if plan.allowed and plan.slot not in held:
            held[plan.slot] = _held_codes(raw)
        # Every code the slot holds allowed for every kind of the chunk the plan covers: no row to test.
        if plan.allowed and (held[plan.slot] < 0 or any(held[plan.slot] & ~cmask for kmask, cmask in plan.allowed
                                                          if kmask & kinds_here)):
            code = code_cache.get(plan.slot)
            if code is None:
                bit = np.left_shift(np.uint32(1), raw.astype(np.uint32) & 31)
                code = code_cache[plan.slot] = np.where(raw < 32, bit, 0).astype(np.uint32)
            bad = np.zeros(total, bool)
            for kmask, cmask in plan.allowed:
                if kmask & kinds_here:
                    bad |= of_kinds(kmask) & ((code & np.uint32(cmask)) == 0)
            bad &= valid
            if bad.any():
                fail(bad, lambda i: f"{Kind(int(kind[i])).wire}: {plan.column} code {int(raw[i])} is not "
                                    f"allowed (one of {allowed_names(plan, spec, int(kind[i]))})")
        if plan.slot in REGION_SLOTS and int(raw.max()) >= nreg:
            bad = valid & (raw >= nreg)
            if bad.any():
                fail(bad, lambda i: f"{plan.column} id {int(raw[i])} unknown to the manifest's {nreg} regions")
        rank_kinds = sum(1 << int(k) for k in Kind if must_be_rank(k, plan.column))
        if rank_kinds & plan.kinds & kinds_here and not _within(raw, 0, manifest.ranks - 1):
            bad = valid & of_kinds(rank_kinds) & ((raw < 0) | (raw >= manifest.ranks))
            if bad.any():
                fail(bad, lambda i: f"{Kind(int(kind[i])).wire} event: field {plan.column!r} = {int(raw[i])} is not "
                                    f"a rank of the manifest (ranks 0..{manifest.ranks - 1})")
        if plan.column == "name":
            cols["name"] = name_column(raw, valid, manifest, fail)
            continue
        np_type = _NP_TYPE[spec.type]
        # Enum codes, region ids and ranks were checked above; every other value must lie in
        # its column's range (a slot wider than its column must not wrap, a sentinel is no data).
        if not plan.allowed and plan.slot not in REGION_SLOTS and not _within(raw, *column_range(plan.column)):
            check_range(raw, valid & ~of_kinds(rank_kinds), plan.column, kind, fail)
        got = masked(raw.astype(np_type, copy=False), valid)
        if plan.column in cols:  # a column some kinds keep in another slot: its other plan's rows
            got = pc.if_else(pa.array(valid), got, cols[plan.column])
        cols[plan.column] = got
    return cols


# Whole-slot tests first: a slot's values all inside a check's bounds (as they are in a good dump, where
# the slots a kind leaves unused hold zeros) need no mask of the rows the check covers, which cost more
# than the rest of the decode (four passes and two arrays of the chunk's length a check).

def _within(raw: np.ndarray, lo: int, hi: int) -> bool:
    """Whether every value of the slot lies in [lo, hi]."""
    return len(raw) == 0 or (lo <= int(raw.min()) and int(raw.max()) <= hi)


def _held_codes(raw: np.ndarray) -> int:
    """The codes the slot holds, as bits; -1 where one is past 31 (no enum has such a code)."""
    if not len(raw):
        return 0
    if int(raw.max()) >= 32 or int(raw.min()) < 0:
        return -1
    return int(np.bitwise_or.reduce(np.left_shift(np.uint32(1), raw.astype(np.uint32, copy=False))))


def check_range(raw: np.ndarray, rows: np.ndarray, column: str, kind: np.ndarray, fail) -> None:
    """Fail at the first of ``rows`` whose value lies outside ``column_range(column)``."""
    lo, hi = slot_bounds(raw.dtype, *column_range(column))
    info = np.iinfo(raw.dtype)
    if (lo == info.min and hi == info.max) or _within(raw, lo, hi):
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
