"""The JSON-lines fast path's parser: one compiled pass from bytes to typed columns.

pyarrow's JSON reader was 77% of a JSON-lines ingest (~25-35 MiB/s here: it
is general JSON, builds every value, then we re-check them). The events are
flat objects of known keys whose values are integers or plain strings, so a
parser that knows that runs the bytes once: per line it matches each key
against the read schema (a hash, then a byte compare), parses integers in
place, and records where each string lies; a gather builds the string
columns afterwards. The result is the table pyarrow's reader would give
(the read schema of ``ingest.jsonl_fast``), so the fast path's checks run
unchanged.

It accepts a strict subset of JSON and answers "not sure" (None) on
anything else, leaving it to the careful path, which is the authority:
a line that is not exactly one object, a key outside the schema or given
twice with a value, ``true``/``false``, a fraction or an exponent, a leading
zero, an integer past int64, a string with an escape or a byte that is not
printable ASCII, a string where an integer is expected or the other way round.
``null`` is read as the key's absence, as the careful path reads it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._jit import kernel

_SLOTS = 256  # open-addressing table of key hashes: > 4x the keys, so probes stay short; a power of 2
_INT64_TOP = (2**63 - 1) // 10  # 18 digits always fit int64; a 19th must keep the value within it


def _hash(key: bytes) -> int:
    h = 0
    for b in key:
        h = (h * 31 + b) & 0xFFFFFFFF
    return h


class Keys:
    """The read schema as the scanner wants it: key bytes, where each key's bytes lie, its slot table."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.names = [f.name for f in schema]
        self.is_str = np.array([f.type == pa.string() for f in schema], dtype=np.bool_)
        raw = [n.encode("ascii") for n in self.names]
        self.bytes = np.frombuffer(b"".join(raw), dtype=np.uint8).copy()
        self.start = np.cumsum([0] + [len(r) for r in raw[:-1]]).astype(np.int64)
        self.length = np.array([len(r) for r in raw], dtype=np.int64)
        self.slots = np.full(_SLOTS, -1, dtype=np.int64)
        for i, r in enumerate(raw):
            s = _hash(r) & (_SLOTS - 1)
            while self.slots[s] >= 0:
                s = (s + 1) & (_SLOTS - 1)
            self.slots[s] = i


@kernel
def _scan(data, rows, kbytes, kstart, klen, kstr, slots, val, slen, present):
    """Parse ``rows`` lines of ``data`` (each ending in b"\\n") into val/slen/present [key, row].

    Integers go to val; a string's start offset to val and its length to slen.
    Returns 0, or 1 at the first construct outside the accepted subset (nothing says
    which: the careful path reads the chunk again and words it).
    """
    n = len(data)
    i = 0
    mask = len(slots) - 1  # a mask, not a modulo: no division per key
    v = np.int64(0)
    for row in range(rows):
        # Leading whitespace, then one object.
        while i < n and (data[i] == 32 or data[i] == 9 or data[i] == 13):
            i += 1
        if i >= n or data[i] != 123:  # '{'
            return 1
        i += 1
        while i < n and (data[i] == 32 or data[i] == 9 or data[i] == 13):
            i += 1
        if i < n and data[i] == 125:  # '{}': no kind, the careful path words it
            return 1
        while True:
            if i >= n or data[i] != 34:  # '"' opening a key
                return 1
            i += 1
            k0 = i
            h = 0
            while i < n and data[i] != 34:
                c = np.int64(data[i])
                if c == 92 or c < 32 or c > 126:  # an escape, a control or non-ASCII byte
                    return 1
                h = (h * 31 + c) & 0xFFFFFFFF
                i += 1
            if i >= n:
                return 1
            klength = i - k0
            i += 1
            s = h & mask
            key = -1
            while slots[s] >= 0:
                cand = slots[s]
                if klen[cand] == klength:
                    same = True
                    for j in range(klength):
                        if kbytes[kstart[cand] + j] != data[k0 + j]:
                            same = False
                            break
                    if same:
                        key = cand
                        break
                s = (s + 1) & mask
            if key < 0 or present[key, row]:  # unknown, or given twice
                return 1
            while i < n and (data[i] == 32 or data[i] == 9 or data[i] == 13):
                i += 1
            if i >= n or data[i] != 58:  # ':'
                return 1
            i += 1
            while i < n and (data[i] == 32 or data[i] == 9 or data[i] == 13):
                i += 1
            if i >= n:
                return 1
            if data[i] == 110:  # null: the careful path reads it as the key's absence, so do we
                if i + 4 > n or data[i + 1] != 117 or data[i + 2] != 108 or data[i + 3] != 108:
                    return 1
                i += 4
            elif kstr[key]:
                if data[i] != 34:
                    return 1
                i += 1
                v0 = i
                while i < n and data[i] != 34:
                    c = data[i]
                    if c == 92 or c < 32 or c > 126:
                        return 1
                    i += 1
                if i >= n:
                    return 1
                val[key, row] = v0
                slen[key, row] = i - v0
                present[key, row] = True
                i += 1
            else:
                neg = False
                if data[i] == 45:  # '-'
                    neg = True
                    i += 1
                d0 = i
                v = 0
                while i < n and 48 <= data[i] <= 57 and i - d0 < 18:
                    v = v * 10 + (np.int64(data[i]) - 48)
                    i += 1
                last = -1  # a 19th digit, checked against int64's bounds before it is added
                if i < n and 48 <= data[i] <= 57:
                    last = np.int64(data[i]) - 48
                    i += 1
                    if i < n and 48 <= data[i] <= 57:
                        return 1  # 20 digits or more
                digits = i - d0
                if digits == 0 or (digits > 1 and data[d0] == 48):
                    return 1
                if last < 0:
                    val[key, row] = -v if neg else v
                elif v > _INT64_TOP or (v == _INT64_TOP and last > 7 + (1 if neg else 0)):
                    return 1  # past int64: out of every column's range, the careful path words it
                else:
                    val[key, row] = -(v * 10) - last if neg else v * 10 + last
                present[key, row] = True
            while i < n and (data[i] == 32 or data[i] == 9 or data[i] == 13):
                i += 1
            if i >= n:
                return 1
            if data[i] == 44:  # ','
                i += 1
                while i < n and (data[i] == 32 or data[i] == 9 or data[i] == 13):
                    i += 1
                continue
            if data[i] == 125:  # '}'
                i += 1
                break
            return 1  # '.', 'e', a second value, anything else
        while i < n and (data[i] == 32 or data[i] == 9 or data[i] == 13):
            i += 1
        if i >= n or data[i] != 10:  # one object per line
            return 1
        i += 1
    return 0 if i == n else 1


@kernel
def _gather(data, start, length, present, offsets, chars):
    """One string column's characters, end to end, and its offsets (a null is empty)."""
    pos = 0
    for r in range(len(start)):
        offsets[r] = pos
        if present[r]:
            s = start[r]
            for j in range(length[r]):
                chars[pos + j] = data[s + j]
            pos += length[r]
    offsets[len(start)] = pos


def parse(data: bytes, rows: int, keys: Keys) -> tuple[pa.Table, dict[str, tuple[np.ndarray, np.ndarray]]] | None:
    """The raw table (``keys.schema``) of ``rows`` lines, or None where the careful path must read them.

    Also each integer key's (values, present) as the numpy arrays the table's columns
    were made from (0 where absent), so the checks need not convert them back.
    """
    buf = np.frombuffer(data, dtype=np.uint8)
    nk = len(keys.names)
    val = np.zeros((nk, rows), dtype=np.int64)
    slen = np.zeros((nk, rows), dtype=np.int64)
    present = np.zeros((nk, rows), dtype=np.bool_)
    if _scan(buf, rows, keys.bytes, keys.start, keys.length, keys.is_str, keys.slots, val, slen, present):
        return None
    columns, numeric = [], {}
    for k, field in enumerate(keys.schema):
        here = present[k]
        if not keys.is_str[k]:
            numeric[field.name] = (val[k], here)
        if not here.any():
            columns.append(pa.nulls(rows, field.type))
            continue
        validity = None if here.all() else pa.py_buffer(np.packbits(here, bitorder="little"))
        if keys.is_str[k]:
            offsets = np.empty(rows + 1, dtype=np.int32)
            chars = np.empty(int(slen[k][here].sum()), dtype=np.uint8)
            _gather(buf, val[k], slen[k], here, offsets, chars)
            columns.append(pa.StringArray.from_buffers(rows, pa.py_buffer(offsets), pa.py_buffer(chars), validity))
        else:
            columns.append(pa.Array.from_buffers(pa.int64(), rows, [validity, pa.py_buffer(val[k])]))
    return pa.Table.from_arrays(columns, schema=keys.schema), numeric
