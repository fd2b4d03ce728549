"""Binary ring dumps (``*.mtr``): decode and encode, vectorized.

A dump file holds one or more rings back to back, each a 64-byte header and
``stored`` 64-byte records in slot order (a raw copy of the device ring, see
``ingest.ring_layout`` and docs/trace-format.md). Record i (the i-th record the
core ever wrote) lives in slot ``i mod capacity``; of ``write_count`` W records
the last ``min(W, capacity)`` survive, the rest were overwritten by ring wrap:
they are reported lost, not an error. A record's seq is its index i.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from .contract import COLUMNS, SCHEMA
from . import ring_fast
from .ring_columns import Records, careful_columns, plain
from .errors import TraceError
from .manifest import Manifest
from .ring_layout import HEADER_DTYPE, HEADER_SIZE, MAGIC, RECORD_SIZE, VERSION

SUFFIX = ".mtr"
_BATCH = 1 << 22  # records decoded at once: bounds the working set


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


def read_ring_file(path: str | Path, manifest: Manifest, careful: bool = False) -> list[RingChunk]:
    """Decode every ring of a dump file. Bad input raises TraceError(path, 'byte N', ...).

    Each chunk goes through the compiled fast path (``ingest.ring_fast``) unless ``careful`` or on a
    big-endian host; the careful decoder (``ingest.ring_columns``) decodes what the fast path cannot vouch
    for, and words the error.
    """
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
            chunks.append(_decode(data, batch, path, manifest, careful))
            batch, size = [], 0
    if batch or not chunks:
        chunks.append(_decode(data, batch, path, manifest, careful))
    return chunks


def ranks_in(path: str | Path, manifest: Manifest) -> frozenset[int] | None:
    """The ranks whose rings a dump holds, from its headers alone; None where they cannot be read (the
    decoder words what is wrong, in its turn)."""
    try:
        data = np.memmap(path, dtype=np.uint8, mode="r").view(np.ndarray)
        return frozenset(r.rank for r in _scan(data, Path(path), manifest))
    except (OSError, ValueError, TraceError):
        return None


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


def _decode(data: np.ndarray, rings: list[_Ring], path: Path, manifest: Manifest, careful: bool) -> RingChunk:
    counts = np.array([r.survivors for r in rings], dtype=np.int64)
    total = int(counts.sum())
    lost = {}
    events_in = 0
    for r in rings:
        events_in += r.write_count
        if r.first:
            lost[(r.rank, r.core)] = lost.get((r.rank, r.core), 0) + r.first
    # A ring's survivors are at most two runs of slots: oldest..end, then 0..newest.
    pieces = []  # (first unit, units, seq of the first, ring)
    for r in rings:
        base = (r.offset + HEADER_SIZE) // RECORD_SIZE
        s = r.first % r.capacity
        n1 = min(r.survivors, r.capacity - s)
        pieces.append((base + s, n1, r.first, r))
        if n1 < r.survivors:
            pieces.append((base, r.survivors - n1, r.first + n1, r))

    def per_piece(dtype, fill) -> np.ndarray:
        out = np.empty(total, dtype)
        o = 0
        for piece in pieces:
            k = piece[1]
            out[o:o + k] = fill(piece)
            o += k
        return out

    seq = per_piece(np.int64, lambda p: np.arange(p[2], p[2] + p[1], dtype=np.int64))
    positions = per_piece(np.int64, lambda p: np.arange(p[0], p[0] + p[1], dtype=np.int64) * RECORD_SIZE)
    cols = None
    if not careful and ring_fast.NATIVE:
        cols = ring_fast.decode(data, np.array([p[:3] for p in pieces], np.int64).reshape(-1, 3), manifest)
    if cols is None:
        cols = careful_columns(Records(data, [p[:2] for p in pieces], seq, positions, path), manifest)
    cols["rank"] = plain(per_piece(np.int16, lambda p: p[3].rank))
    cols["core"] = plain(per_piece(np.int16, lambda p: p[3].core))
    cols["seq"] = plain(seq)
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
    return RingChunk(pa.Table.from_arrays(arrays, schema=SCHEMA), positions, lost, events_in)


# The encoder lives beside the reader; importers use ingest.rings for both.
from .ring_encode import encode_rings, ring_header, write_ring_file  # noqa: E402,F401
