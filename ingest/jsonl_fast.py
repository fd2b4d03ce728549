"""The optimistic JSON-lines path: a compiled scanner that parses and checks each line (``ingest.jsonl_scan``).

It only ever says "valid, here is the table" or "not sure": on anything it
cannot vouch for (a parse error, an unexpected key, a blank line, a value out
of range, a seq step back...) it returns None, and ``ingest.jsonl`` reads the
file again line by line, which is authoritative and words the error. So the
two paths accept exactly the same files and this one never has to explain.

Every check is derived from ``ingest.contract`` like the line-by-line path's
(``ingest.jsonl_plan`` puts them in the tables the scanner reads).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa

from ._jit import kernel
from .contract import COLUMNS, SCHEMA
from .jsonl_plan import KEY_NAMES, WIDTHS, Plan, plan_for
from .jsonl_scan import Checks, Columns, NameTables, _scan
from .manifest import Manifest
from .text_stream import BOM

_CHUNK = 1 << 26
_TYPES = [np.int8, np.int16, np.int32, np.int64]
_KIND = next(i for i, c in enumerate(COLUMNS) if c.name == "kind")


class _NotSure(Exception):
    pass


class _File:
    """What the scanner carries from one chunk of a file to the next: the last seq per (rank, core),
    the key order last seen per kind (its last row: the last line's)."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.last_seq = np.full(plan.ranks * plan.cores if plan.seq_dense else 1, -(2**63), dtype=np.int64)
        self.pred = np.full((plan.nkinds + 1, len(KEY_NAMES)), -1, dtype=np.int64)

def _chunks(path: Path, compression: str | None):
    """The file's bytes in chunks of whole lines (each ending in b"\n"), about _CHUNK each."""
    # A plain file is read by Python, each read no larger than what is left: a read of _CHUNK
    # bytes from a smaller file (pyarrow's or Python's) took ~0.12 us an event, one of its size ~0.04.
    if compression is None:
        opened = open(path, "rb")
        left = os.fstat(opened.fileno()).st_size
    else:
        opened, left = pa.input_stream(str(path), compression=compression), 0
    with opened as stream:
        tail = b""
        first = True
        while True:
            block = stream.read(min(_CHUNK, left) if left > 0 else _CHUNK)
            if not block:
                break
            left -= len(block)
            if first and block.startswith(BOM):
                block = block[len(BOM):]  # accepted at the start of a file only, as by the careful path
            first = False
            buf = tail + block
            if buf.startswith(BOM):
                raise _NotSure  # pyarrow would skip a BOM opening any later chunk
            cut = buf.rfind(b"\n") + 1
            tail = buf[cut:]
            if cut:
                yield buf[:cut]
        if tail.strip():
            yield tail + b"\n"
        elif tail:
            raise _NotSure  # a whitespace-only unterminated last line: leave it to the careful path


def _parse(data: bytes, f: _File):
    """The chunk's columns as the scanner wrote them (matrices by width, text spans, presence bits), or _NotSure."""
    p = f.plan
    buf = np.frombuffer(data, dtype=np.uint8)
    rows = _lines(buf)
    sizes = p.group_sizes()
    out = [np.zeros((sizes[g], rows), dtype=t) for g, t in enumerate(_TYPES)]
    text = np.zeros((sizes[len(WIDTHS)], 2, rows), dtype=np.int64)
    bits = np.zeros((len(COLUMNS), (rows + 7) >> 3), dtype=np.uint8)
    count = np.zeros(len(COLUMNS), dtype=np.int64)
    nm = p.names
    names = NameTables(nm.bytes, nm.start, nm.length, nm.code, nm.slots, nm.offset, nm.mask)
    checks = Checks(p.kstr, p.col, p.req, p.nreq, p.tab, p.lo, p.hi, p.envelope, p.cores, p.seq_dense,
                    p.out_group, p.out_pos)
    if _scan(buf, rows, names, checks, Columns(*out, text, bits, count), f.last_seq, f.pred):
        raise _NotSure
    return data, rows, out, text, bits, count


@kernel
def _lines(data):
    """How many b"\n" in data: bytes.count took ~0.07 us an event here, this ~0.02."""
    rows = 0
    for b in data:
        rows += b == 10
    return rows


@kernel
def _gather(data, start, length, present, offsets, chars):
    """One text column's characters, end to end, and its offsets (a null is empty)."""
    pos = 0
    for r in range(len(start)):
        offsets[r] = pos
        if present[r >> 3] & (1 << (r & 7)):
            s = start[r]
            for j in range(length[r]):
                chars[pos + j] = data[s + j]
            pos += length[r]
    offsets[len(start)] = pos


def _table(scanned, plan: Plan) -> pa.Table:
    """The contract table of a scanned chunk: each column a row of its matrix, no copy (text gathered)."""
    data, rows, out, text, bits, count = scanned
    arrays = []
    for c, spec in enumerate(COLUMNS):
        g, pos = plan.out_group[c], plan.out_pos[c]
        if c == _KIND:
            arrays.append(pa.Array.from_buffers(pa.int8(), rows, [None, pa.py_buffer(out[0][pos])]))
            continue
        if not count[c]:
            arrays.append(pa.nulls(rows, spec.type))
            continue
        validity = None if count[c] == rows else pa.py_buffer(bits[c])
        if g == len(WIDTHS):
            start, length = text[pos]
            offsets = np.empty(rows + 1, dtype=np.int32)
            chars = np.empty(int(length.sum()), dtype=np.uint8)
            _gather(np.frombuffer(data, dtype=np.uint8), start, length, bits[c], offsets, chars)
            arrays.append(pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(chars), validity))
        else:
            arrays.append(pa.Array.from_buffers(spec.type, rows, [validity, pa.py_buffer(out[g][pos])]))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def _np(col) -> np.ndarray:
    return col.to_numpy(zero_copy_only=False)


def _seq_ok(table: pa.Table) -> bool:
    """Seq strictly increasing per (rank, core), for a manifest too wide for the scanner's dense check."""
    rank = _np(table.column("rank")).astype(np.int64)
    core = _np(table.column("core")).astype(np.int64)
    seq = _np(table.column("seq"))
    key = (rank << 16) | core
    order = np.argsort(key, kind="stable")
    k, s = key[order], seq[order]
    return not ((k[1:] == k[:-1]) & (s[1:] <= s[:-1])).any()


def read_fast(path: Path, manifest: Manifest, compression: str | None):
    """(table, line numbers) or None when the careful path must decide."""
    plan = plan_for(manifest)
    f = _File(plan)
    try:
        tables = [_table(_parse(data, f), plan) for data in _chunks(path, compression)]
    except (_NotSure, pa.ArrowException, OSError, ValueError):
        return None
    if not tables:
        return None
    table = pa.concat_tables(tables).combine_chunks() if len(tables) > 1 else tables[0].combine_chunks()
    if not plan.seq_dense and not _seq_ok(table):
        return None
    return table, np.arange(1, table.num_rows + 1, dtype=np.int64)
