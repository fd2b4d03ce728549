"""The JSON-lines fast path's scanner: one compiled pass from bytes to the contract's checked columns.

The events are flat objects of known keys whose values are integers or plain
strings, so one pass over the bytes does it all: per line it finds each key
(predicted from the last line of the same kind, else hashed and looked up),
parses integers in place and hashes strings, and at the line's end, while it
is in cache, checks the event as the careful path would (``ingest.jsonl_plan``:
the kind's keys, the required ones, integer ranges, enum and region names,
seq increasing per (rank, core)) and writes it into typed column matrices.
A separate pass of numpy checks per column cost more than the scan itself.

It accepts a strict subset of JSON and answers "not sure" on anything else,
leaving it to the careful path, which is the authority and words the error:
a line that is not exactly one object, a key outside the schema or given
twice with a value, ``true``/``false``, a fraction or an exponent, a leading
zero, an integer past int64, a string with an escape or a byte that is not
printable ASCII, a string where an integer is expected or the other way round,
and any event the careful path would refuse. ``null`` is read as the key's
absence, as the careful path reads it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._jit import helper, kernel
from .jsonl_plan import KEYS, KINDS, STR

_INT64_TOP = (2**63 - 1) // 10  # 18 digits always fit int64; a 19th must keep the value within it


class NameTables(NamedTuple):
    """``jsonl_plan.Names`` as the scanner reads it: every table's names end to end, hashed slots."""
    name_bytes: np.ndarray
    start: np.ndarray
    length: np.ndarray
    code: np.ndarray
    slots: np.ndarray
    slot_offset: np.ndarray  # per table: where its slots start
    slot_mask: np.ndarray    # per table: its slot count - 1


class Checks(NamedTuple):
    """The plan's (kind, key) tables and where each column goes (``jsonl_plan.Plan``)."""
    key_is_str: np.ndarray
    col: np.ndarray
    req: np.ndarray
    nreq: np.ndarray
    tab: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    envelope: np.ndarray
    cores: int
    seq_dense: bool
    out_group: np.ndarray
    out_pos: np.ndarray


class Columns(NamedTuple):
    """What the scan writes: matrices by width, free text spans, presence bits and counts."""
    o8: np.ndarray
    o16: np.ndarray
    o32: np.ndarray
    o64: np.ndarray
    text: np.ndarray
    bits: np.ndarray
    count: np.ndarray


@kernel
def _scan(data, rows, names, checks, columns, last_seq, pred):
    """Read ``rows`` lines of ``data`` (each ending in b"\\n") into the output matrices; 0, or 1 if not sure.

    Names (keys, kinds, enum and region names) are looked up in the hashed tables
    ``names`` (``jsonl_plan.Names``); ``checks``' (kind, key) tables col..hi say what each key
    is on each kind. Row r of column c goes to o8/o16/o32/o64[out_pos[c], r] of ``columns`` by its
    width, or text[out_pos[c], :, r] (start, length) for free text; bit r of bits[c]
    marks it present, count[c] counts them. last_seq[rank * cores + core] is the last
    seq seen (int64 min: none), kept across a file's chunks; pred[kind, j] the j-th key
    of the last line of that kind, also kept across chunks (the last row: the last line).
    """
    nbytes, nstart, nlen = names.name_bytes, names.start, names.length
    kstr, col, req, nreq, tab, lo, hi, envelope, cores, seq_dense, out_group, out_pos = checks
    o8, o16, o32, o64, text, bits, count = columns
    n = len(data)
    nk = len(kstr)
    val = np.zeros(nk, dtype=np.int64)  # per key of this line: the integer, or a string's start
    vlen = np.zeros(nk, dtype=np.int64)  # a string's length
    vhash = np.zeros(nk, dtype=np.int64)  # a string's hash
    has = np.zeros(nk, dtype=np.bool_)  # given with a value on this line
    given = np.zeros(nk, dtype=np.int64)  # the keys given a value, in line order
    last_kind = len(pred) - 1
    # Every line ends in b"\n", which no loop below reads past (it is no digit, blank,
    # quote or printable byte), so the loops need no end-of-data test of their own.
    if n == 0 or data[n - 1] != 10:
        return 1
    i = 0
    for row in range(rows):
        ngiven = 0
        kind = -1
        guess = last_kind  # whose key order to predict from: the last line's until this line's kind is read
        j = 0  # the key's place on the line
        while data[i] <= 32 and (data[i] == 32 or data[i] == 9 or data[i] == 13):
            i += 1
        if data[i] != 123:  # '{'
            return 1
        i += 1
        while data[i] <= 32 and (data[i] == 32 or data[i] == 9 or data[i] == 13):
            i += 1
        if data[i] == 125:  # '{}': no kind, the careful path words it
            return 1
        while True:
            if data[i] != 34:  # '"' opening a key
                return 1
            i += 1
            k0 = i
            # The key: most lines of a kind give their keys in one order, so compare the
            # predicted key's bytes first; only a miss pays the hash and the table probe.
            key = -1
            p = pred[guess, j] if j < nk else -1
            if p >= 0:
                m = nlen[p]
                if k0 + m < n and data[k0 + m] == 34:
                    s = nstart[p]
                    same = True
                    for t in range(m):
                        if nbytes[s + t] != data[k0 + t]:
                            same = False
                            break
                    if same:
                        key = p
                        i = k0 + m
            if key < 0:
                h = 0
                while data[i] != 34:
                    c = np.int64(data[i])
                    if c == 92 or c < 32 or c > 126:  # an escape, a control or non-ASCII byte
                        return 1
                    h = (h * 31 + c) & 0xFFFFFFFF
                    i += 1
                key = _lookup(KEYS, data, k0, i - k0, h, names)
                if key < 0:
                    return 1  # a key outside the schema
            i += 1
            if has[key]:  # given twice
                return 1
            if j < nk:
                pred[last_kind, j] = key
            j += 1
            while data[i] <= 32 and (data[i] == 32 or data[i] == 9 or data[i] == 13):
                i += 1
            if data[i] != 58:  # ':'
                return 1
            i += 1
            while data[i] <= 32 and (data[i] == 32 or data[i] == 9 or data[i] == 13):
                i += 1
            if data[i] == 110:  # null: the careful path reads it as the key's absence, so do we
                if data[i + 1] != 117 or data[i + 2] != 108 or data[i + 3] != 108:
                    return 1
                i += 4
            elif kstr[key]:
                if data[i] != 34:
                    return 1
                i += 1
                v0 = i
                h = 0
                while data[i] != 34:
                    c = np.int64(data[i])
                    if c == 92 or c < 32 or c > 126:
                        return 1
                    h = (h * 31 + c) & 0xFFFFFFFF
                    i += 1
                val[key], vlen[key], vhash[key] = v0, i - v0, h
                has[key] = True
                given[ngiven] = key
                ngiven += 1
                i += 1
                if key == 0:  # the kind: from here on, predict keys from the last line of this kind
                    kind = _lookup(KINDS, data, v0, i - 1 - v0, h, names)
                    if kind < 0:
                        return 1
                    guess = kind
            else:
                neg = False
                if data[i] == 45:  # '-'
                    neg = True
                    i += 1
                d0 = i
                v = np.int64(0)
                while 48 <= data[i] <= 57 and i - d0 < 18:
                    v = v * 10 + (np.int64(data[i]) - 48)
                    i += 1
                last = np.int64(-1)  # a 19th digit, checked against int64's bounds before it is added
                if 48 <= data[i] <= 57:
                    last = np.int64(data[i]) - 48
                    i += 1
                    if 48 <= data[i] <= 57:
                        return 1  # 20 digits or more
                digits = i - d0
                if digits == 0 or (digits > 1 and data[d0] == 48):
                    return 1
                if last < 0:
                    val[key] = -v if neg else v
                elif v > _INT64_TOP or (v == _INT64_TOP and last > 7 + (1 if neg else 0)):
                    return 1  # past int64: out of every column's range, the careful path words it
                else:
                    val[key] = -(v * 10) - last if neg else v * 10 + last
                has[key] = True
                given[ngiven] = key
                ngiven += 1
            while data[i] <= 32 and (data[i] == 32 or data[i] == 9 or data[i] == 13):
                i += 1
            if data[i] == 44:  # ','
                i += 1
                while data[i] <= 32 and (data[i] == 32 or data[i] == 9 or data[i] == 13):
                    i += 1
                continue
            if data[i] == 125:  # '}'
                i += 1
                break
            return 1  # '.', 'e', a second value, anything else
        while data[i] <= 32 and (data[i] == 32 or data[i] == 9 or data[i] == 13):
            i += 1
        if data[i] != 10:  # one object per line
            return 1
        i += 1
        if kind < 0:
            return 1  # no kind (or a null one)
        # The event's checks, as the careful path's (ingest.jsonl_plan says which).
        required = 0
        for g in range(ngiven):
            key = given[g]
            has[key] = False  # ready for the next line
            if key == 0:
                continue
            c = col[kind, key]
            if c < 0:
                return 1  # a field the kind does not carry
            if req[kind, key]:
                required += 1
            t = tab[kind, key]
            if t == STR:  # free text
                text[out_pos[c], 0, row] = val[key]
                text[out_pos[c], 1, row] = vlen[key]
            else:
                v = val[key]
                if t >= 0:
                    v = _lookup(t, data, v, vlen[key], vhash[key], names)
                    if v < 0:
                        return 1  # not a name this kind allows
                elif v < lo[kind, key] or v > hi[kind, key]:
                    return 1
                g_ = out_group[c]
                if g_ == 0:
                    o8[out_pos[c], row] = v
                elif g_ == 1:
                    o16[out_pos[c], row] = v
                elif g_ == 2:
                    o32[out_pos[c], row] = v
                else:
                    o64[out_pos[c], row] = v
            bits[c, row >> 3] |= np.uint8(1 << (row & 7))
            count[c] += 1
        has[0] = False
        if required != nreq[kind]:
            return 1  # a required field missing
        if seq_dense:
            rc = val[envelope[0]] * cores + val[envelope[1]]  # both in range: checked above
            if val[envelope[2]] <= last_seq[rc]:
                return 1
            last_seq[rc] = val[envelope[2]]
        o8[0, row] = kind  # kind is the first 8-bit column (asserted by the caller)
        for t in range(min(j, nk)):
            pred[kind, t] = pred[last_kind, t]
        if j < nk:
            pred[kind, j] = -1
            pred[last_kind, j] = -1
    return 0 if i == n else 1


@helper
def _lookup(t, data, s, length, h, names):
    """The code of data[s:s+length] (hash h) in name table t, or -1."""
    nbytes, nstart, nlen, ncode, slots, soff, smask = names
    mask = smask[t]
    q = h & mask
    while True:
        e = slots[soff[t] + q]
        if e < 0:
            return -1
        if nlen[e] == length:
            same = True
            for u in range(length):
                if nbytes[nstart[e] + u] != data[s + u]:
                    same = False
                    break
            if same:
                return ncode[e]
        q = (q + 1) & mask
