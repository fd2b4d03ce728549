"""Binary ring dumps (``*.mtr``): decode and encode, vectorized.

A dump file holds one or more rings back to back, each a 64-byte header and
``stored`` 64-byte records in slot order (a raw copy of the device ring, see
``ingest.ring_layout`` and docs/trace-format.md). Record i (the i-th record the
core ever wrote) lives in slot ``i mod capacity``; of ``write_count`` W records
the last ``min(W, capacity)`` survive, the rest were overwritten by ring wrap:
they are reported lost, not an error. A record's seq is its index i.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from .contract import COLUMN, COLUMNS, SCHEMA, Kind
from .errors import TraceError
from .manifest import Manifest
from ._ring_kernel import (ALLOWED, ENVELOPE, GROUPS, KINDS, NAME, OUTPUTS, PRESENT_OFF, PROGRAM, RANK, REGION,
                           SEQ_LO_OFF, decode_records)
from .ring_layout import HEADER_DTYPE, HEADER_SIZE, MAGIC, PLANS, RECORD_DTYPE, RECORD_SIZE, VERSION, Plan

SUFFIX = ".mtr"
_BATCH = 1 << 22  # records decoded at once: bounds the working set
_BLOCK = 4096  # records grouped by kind at a time (256 KiB of records: stays in cache)
assert sorted(int(k) for k in Kind) == list(range(KINDS))

# Row columns the kernel fills for every row: the envelope slots, the ring's
# rank and core, the seq, and each record's byte offset (for errors).
_ENVELOPE_TYPES = {c: COLUMN[c].type.to_pandas_dtype() for c in ("seq", "rank", "core") + ENVELOPE}
_ENVELOPE_TYPES["pos"] = np.int64
_ENV_OFF = np.array([RECORD_DTYPE.fields[c][1] for c in ENVELOPE], np.int64)
# The kernel reads the envelope slots as 8-, 4- and 1-byte values.
assert [RECORD_DTYPE.fields[c][0].itemsize for c in ENVELOPE] == [8, 4, 1]


@dataclass
class RingChunk:
    """Decoded rows of one or more whole rings of a dump file."""

    table: pa.Table  # contract columns (SCHEMA), rings in file order, each oldest first
    positions: np.ndarray  # int64 byte offset of each row's record in the file
    lost: dict[tuple[int, int], int] = field(default_factory=dict)  # overwritten by wrap
    events_in: int = 0  # rows + lost


@dataclass(frozen=True)
class _Ring:
    offset: int  # byte offset of the header
    rank: int
    core: int
    capacity: int
    write_count: int

    @property
    def survivors(self) -> int:
        return min(self.write_count, self.capacity)

    @property
    def first(self) -> int:
        return self.write_count - self.survivors


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------


def read_ring_file(path: str | Path, manifest: Manifest) -> list[RingChunk]:
    """Decode every ring of a dump file. Bad input raises TraceError(path, 'byte N', ...)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        # Mapped, not read: each slot is copied straight out of the page cache.
        data = np.memmap(path, dtype=np.uint8, mode="r").view(np.ndarray) if size else np.zeros(0, np.uint8)
    except OSError as e:
        raise TraceError(path, "", f"cannot read ring dump: {e.strerror or e}") from None
    rings = _scan(data, path, manifest)
    chunks, batch, size = [], [], 0
    for ring in rings:
        batch.append(ring)
        size += ring.survivors
        if size >= _BATCH:
            chunks.append(_decode(data, batch, path, manifest))
            batch, size = [], 0
    if batch or not chunks:
        chunks.append(_decode(data, batch, path, manifest))
    return chunks


def _scan(data: np.ndarray, path: Path, manifest: Manifest) -> list[_Ring]:
    """Walk the ring headers (a Python loop over rings, never over records)."""
    if len(data) == 0:
        raise TraceError(path, "byte 0", "empty ring dump: no ring header")
    rings, off, n = [], 0, len(data)
    while off < n:
        def err(where: int, msg: str) -> TraceError:
            return TraceError(path, f"byte {where}", msg)

        if n - off < HEADER_SIZE:
            raise err(off, f"ring header torn at the end of the dump ({n - off} of {HEADER_SIZE} bytes)")
        h = data[off:off + HEADER_SIZE].view(HEADER_DTYPE)[0]
        if bytes(h["magic"]) != MAGIC:
            raise err(off, f"bad magic {bytes(data[off:off + 6])!r}; expected {MAGIC!r} (not a moetrace ring dump)")
        if int(h["version"]) != VERSION:
            raise err(off + 6, f"unsupported ring version {int(h['version'])}; this moetrace reads version {VERSION}")
        if int(h["record_size"]) != RECORD_SIZE or int(h["header_size"]) != HEADER_SIZE:
            raise err(off + 8, f"record/header size {int(h['record_size'])}/{int(h['header_size'])} bytes; "
                               f"version {VERSION} has {RECORD_SIZE}/{HEADER_SIZE}")
        rank, core = int(h["rank"]), int(h["core"])
        if rank >= manifest.ranks:
            raise err(off + 24, f"rank {rank} outside the manifest's {manifest.ranks} ranks")
        if core >= manifest.cores:
            raise err(off + 28, f"core {core} outside the manifest's {manifest.cores} cores")
        cap, wc, stored = int(h["capacity"]), int(h["write_count"]), int(h["stored"])
        if cap == 0:
            raise err(off + 12, "ring capacity is 0")
        if wc >= 1 << 62:
            raise err(off + 16, f"implausible write_count {wc} (a corrupt header)")
        ring = _Ring(off, rank, core, cap, wc)
        if not ring.survivors <= stored <= cap:
            raise err(off + 32, f"ring of rank {rank} core {core} stores {stored} records; with capacity {cap} "
                                f"and write_count {wc} it must store {ring.survivors}..{cap}")
        start = off + HEADER_SIZE
        end = start + stored * RECORD_SIZE
        if end > n:
            whole = (n - start) // RECORD_SIZE
            torn = start + whole * RECORD_SIZE
            what = "record torn" if torn < n else "records missing"
            raise err(torn, f"{what} at the end of the dump: ring of rank {rank} core {core} stores {stored} "
                            f"records, the file holds {whole} and {n - torn} bytes")
        rings.append(ring)
        off = end
    return rings


def _decode(data: np.ndarray, rings: list[_Ring], path: Path, manifest: Manifest) -> RingChunk:
    lost = {}
    events_in = 0
    for r in rings:
        events_in += r.write_count
        if r.first:
            lost[(r.rank, r.core)] = lost.get((r.rank, r.core), 0) + r.first
    # A ring's survivors are at most two runs of slots: oldest..end, then 0..newest.
    pieces = []  # (first unit, units, seq of the first, rank, core)
    for r in rings:
        base = (r.offset + HEADER_SIZE) // RECORD_SIZE
        s = r.first % r.capacity
        n1 = min(r.survivors, r.capacity - s)
        pieces.append((base + s, n1, r.first, r.rank, r.core))
        if n1 < r.survivors:
            pieces.append((base, r.survivors - n1, r.first + n1, r.rank, r.core))
    pieces = np.array(pieces, np.int64).reshape(-1, 5)
    total = int(pieces[:, 1].sum())

    # The kernel stores only valid values, so null rows keep the zero and a
    # column no row fills is never touched: its pages cost no memory.
    P = PROGRAM
    env = {c: np.empty(total, t) for c, t in _ENVELOPE_TYPES.items()}
    mats = [_fresh_zeros((max(1, n), total), t) for n, t in zip(OUTPUTS, GROUPS)]
    outs = [mats[g][i] for g, i in zip(P.out_group, P.out_index)]
    bits = _fresh_zeros((len(outs), total // 8 + 1), np.uint8)
    nvalid = np.zeros(len(outs), np.int64)
    first_bad = np.full(2 + len(P.checks), -1, np.int64)
    lo, hi = P.limits(len(manifest.regions), manifest.ranks, len(manifest.names))
    units = data[: len(data) // RECORD_SIZE * RECORD_SIZE]
    views = [units.view(t).reshape(-1, RECORD_SIZE // np.dtype(t).itemsize)
             for t in (np.uint8, np.int16, np.int32, np.int64)]
    decode_records(*views, pieces, _BLOCK, _ENV_OFF, SEQ_LO_OFF, PRESENT_OFF, KINDS,
                   P.slot_off, P.slot_size, P.slot_signed, P.out_group, P.out_index, P.carry, P.kind_cols,
                   P.kind_ncols, P.allowed, P.col_checks, P.check_what, lo, hi,
                   env["seq"], env["pos"], env["rank"], env["core"], env["ts"], env["launch"], env["kind"],
                   *mats, bits, nvalid, first_bad)
    positions = env.pop("pos")
    failed = np.flatnonzero(first_bad >= 0)
    if len(failed):
        row = first_bad[failed[0]]
        raise _error(int(failed[0]), int(positions[row]), int(env["seq"][row]), units, path, manifest)

    cols: dict[str, pa.Array] = {c: _plain(env[c]) for c in env}
    for j, plan in enumerate(PLANS):
        if not nvalid[j]:
            continue
        if plan.column == "name":
            cols["name"] = _names(outs[j], bits[j], int(nvalid[j]), manifest)
        else:
            cols[plan.column] = _masked(outs[j], bits[j], int(nvalid[j]))
    arrays = [cols[c.name] if c.name in cols else None for c in COLUMNS]
    if None in arrays:
        # All-null columns share one lazily zeroed buffer: nothing is touched.
        bitmap = pa.py_buffer(np.zeros(total // 8 + 1, np.uint8))
        zeros = pa.py_buffer(np.zeros(total * 8 + 8, np.uint8))
        empty = pa.py_buffer(b"")
        arrays = [a if a is not None else
                  pa.Array.from_buffers(c.type, total, [bitmap, zeros] + ([empty] if c.type == pa.string() else []),
                                        null_count=total)
                  for a, c in zip(arrays, COLUMNS)]
    table = pa.Table.from_arrays(arrays, schema=SCHEMA)
    return RingChunk(table, positions, lost, events_in)


def _error(check: int, byte: int, seq: int, units: np.ndarray, path: Path, manifest: Manifest) -> TraceError:
    """The error of the first failed check, worded from the record at ``byte`` (row ``seq``)."""
    rec = units[byte:byte + RECORD_SIZE].view(RECORD_DTYPE)[0]
    kind = int(rec["kind"])
    if check == 0:
        msg = (f"record holds seq_lo {int(rec['seq_lo'])} where record {seq} belongs "
               f"(a corrupt or half-written record)")
    elif check == 1:
        msg = f"unknown kind code {kind}"
    else:
        chk = PROGRAM.checks[check - 2]
        plan, spec = chk.plan, COLUMN[chk.plan.column]
        raw = int(rec[plan.slot])
        if chk.what == ALLOWED:
            msg = (f"{Kind(kind).wire}: {plan.column} code {raw} is not "
                   f"allowed (one of {_allowed_names(plan, spec, kind)})")
        elif chk.what == REGION:
            msg = f"{plan.column} id {raw} unknown to the manifest's {len(manifest.regions)} regions"
        elif chk.what == RANK:
            msg = (f"{Kind(kind).wire} event: field {plan.column!r} = {raw} is not "
                   f"a rank of the manifest (ranks 0..{manifest.ranks - 1})")
        elif chk.what == NAME:
            msg = f"kernel name id {raw} unknown to the manifest's {len(manifest.names)} names"
        else:
            msg = f"{plan.column} {raw} does not fit {spec.type}"
    return TraceError(path, f"byte {byte}", msg)


def _allowed_names(plan: Plan, spec, kind: int) -> str:
    cmask = next(c for k, c in plan.allowed if k >> kind & 1)
    return ", ".join(f"{m.wire}={int(m)}" for m in spec.enum if cmask >> int(m) & 1)


def _fresh_zeros(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Zeros straight from the kernel: untouched pages stay unbacked.

    np.zeros takes memory below glibc's (growing) mmap threshold from the heap
    and clears it, which backs every page of a column no row fills.
    """
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    if size < 1 << 20:
        return np.zeros(shape, dtype)
    mem = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    return np.frombuffer(mem, dtype).reshape(shape)


def _plain(values: np.ndarray) -> pa.Array:
    return pa.array(values)


def _masked(values: np.ndarray, bits: np.ndarray, nvalid: int) -> pa.Array:
    n = len(values)
    bitmap = None if nvalid == n else pa.py_buffer(bits)
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), n, [bitmap, pa.py_buffer(values)],
                                 null_count=n - nvalid)


def _names(ids: np.ndarray, bits: np.ndarray, nvalid: int, manifest: Manifest) -> pa.Array:
    # Null rows hold id 0 (the kernel leaves them zero), so the take needs no mask pass.
    return pa.array(list(manifest.names), pa.string()).take(_masked(ids, bits, nvalid))


# The encoder lives beside the reader; importers use ingest.rings for both.
from .ring_encode import encode_rings, ring_header, write_ring_file  # noqa: E402,F401
