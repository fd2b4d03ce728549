"""The ring decoder's fast path: one compiled pass from a chunk's records to its slots and checked fields.

The careful decoder (``ingest.ring_columns``) makes a numpy pass per slot and
per check. Here each record's 64 bytes are read once, as eight little-endian
words: every slot is cut out of its word into the slot's array, and every field
the record's kind carries in a slot is checked as the careful decoder checks
it (enum codes the kind allows, region and kernel-name ids the manifest knows,
ranks of the manifest where a field addresses memory, every other value inside
``Manifest.value_range``) and marked present in its plan's validity bits. A
column is then its slot's array (cast where the column is narrower or wider)
under those bits, as the careful decoder builds it.

On any record the careful decoder would refuse the pass stops; the careful
decoder then decodes the chunk again and words the error, so both give one
verdict and one message (``tests/fuzz/oracle.py`` holds them to it).
"""

from __future__ import annotations

import functools
import sys
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ._jit import helper, kernel, loaded
from .contract import COLUMN, Kind
from .manifest import Manifest
from .ring_layout import PLANS, RECORD_DTYPE, RECORD_SIZE, REGION_SLOTS, slot_bounds
from .value_ranges import column_range, value_range_of

_KINDS = len(Kind)
_WORDS = RECORD_SIZE // 8
_SLOT = {n: i for i, n in enumerate(RECORD_DTYPE.names)}
TS, SEQ_LO, LAUNCH, KIND, PRESENT = (_SLOT[n] for n in ("ts", "seq_lo", "launch", "kind", "present"))
# The slots that hold fields: every slot but the envelope's and the presence bits.
FIELD_SLOTS = np.array([i for i in range(len(RECORD_DTYPE.names)) if i not in (TS, SEQ_LO, LAUNCH, KIND, PRESENT)],
                       np.int64)
_WIDTHS = (8, 16, 32, 64)  # a slot's values are kept as a signed integer of its width
_TYPES = (np.int8, np.int16, np.int32, np.int64)
# Validity is staged a block of records at a time, a byte per (plan, record), and packed to bits per plan.
BLOCK = 2048
NATIVE = sys.byteorder == "little"  # the words are read as native integers: the fast path runs on such hosts
FAST_FROM = 16_000_000  # records of an input from which the fast path pays for numba's load (``worth_it``)
# Staging rows a multiple of 4 KiB apart alias in the store buffer (each store stalls behind the last row's).
_PAD = 64
# Per kind and field slot: the plan whose field the kind keeps there (``DISCARD`` where none), its presence
# bit (0: required), and the check every reader runs, branch-free: lo <= value <= hi and bit (value & 31) of
# ``codes`` set (all set but for an enum, whose allowed codes it holds; its range is 0..31).
E_PLAN, E_BIT, E_LO, E_HI, E_CODES = range(5)
DISCARD = len(PLANS)
_ANY_CODE = (1 << 32) - 1
_GATHER = np.uint64(0x0102040810204080)  # eight 0/1 bytes, little-endian: byte j to bit 56 + j
_ADD = np.uint64(0x0101010101010101)  # their sum to the top byte


def _slot_fields() -> np.ndarray:
    """Per record slot: its word, shift, mask, sign bit (0 where unsigned or 64 bits wide), and width group."""
    out = np.zeros((len(RECORD_DTYPE.names), 5), np.int64)
    for i, name in enumerate(RECORD_DTYPE.names):
        dtype, offset = RECORD_DTYPE.fields[name][:2]
        bits = dtype.itemsize * 8
        assert offset // 8 == (offset + dtype.itemsize - 1) // 8, f"slot {name} crosses a word"
        sign = 1 << (bits - 1) if dtype.kind == "i" and bits < 64 else 0
        out[i] = offset // 8, offset % 8 * 8, -1 if bits == 64 else (1 << bits) - 1, sign, _WIDTHS.index(bits)
    return out


SLOT_FIELDS = _slot_fields()
# The slots kept, by width (the presence bits and seq_lo are only checked): the kernel's r-th array of
# width g holds slot _BY_WIDTH[g][r].
_BY_WIDTH = tuple([s for s in range(len(SLOT_FIELDS)) if SLOT_FIELDS[s, 4] == g and s not in (SEQ_LO, PRESENT)]
                  for g in range(len(_WIDTHS)))
SLOTS8, SLOTS16, SLOTS32, SLOTS64 = (np.array(slots, np.int64) for slots in _BY_WIDTH)


class Layout(NamedTuple):
    """The checks of one manifest, as the kernel reads them."""
    entries: np.ndarray  # int64[kinds, len(FIELD_SLOTS), 5]: see E_PLAN..E_CODES
    envelope: np.ndarray  # int64[4]: lo, hi of ts, then of launch


class Out(NamedTuple):
    """What the kernel writes: the slots by width (an array each, so that one no column keeps is freed), and
    per plan its validity bits and count of values."""
    out8: tuple
    out16: tuple
    out32: tuple
    out64: tuple
    bits: np.ndarray  # uint8[plans + 1, rows / 8]: bit i of a plan's row for record i
    count: np.ndarray  # int64[plans + 1]


def _slot_range(slot: str, lo: int, hi: int) -> tuple[int, int]:
    return slot_bounds(RECORD_DTYPE.fields[slot][0], lo, hi)


@functools.lru_cache(maxsize=8)
def _entries(ranks: int, cores: int, regions: int, names: int) -> np.ndarray:
    """Per kind and field slot, the plan the kind keeps there and its check, as the careful decoder
    (``ring_columns.careful_columns``) runs them."""
    table = np.zeros((_KINDS, len(FIELD_SLOTS), 5), np.int64)
    table[:, :] = DISCARD, 0, np.iinfo(np.int64).min, np.iinfo(np.int64).max, _ANY_CODE
    where = {int(slot): j for j, slot in enumerate(FIELD_SLOTS)}
    for p, plan in enumerate(PLANS):
        allowed = dict(plan.allowed)
        for kind in Kind:
            if not plan.kinds >> kind & 1:
                continue
            bit = 0 if plan.required[kind] else int(plan.bit[kind])
            codes = _ANY_CODE
            if plan.allowed:
                lo, hi, codes = 0, 31, next(c for k, c in allowed.items() if k >> kind & 1)
            elif plan.slot in REGION_SLOTS:
                lo, hi = 0, regions - 1
            elif plan.column == "name":
                lo, hi = 0, names - 1
            else:
                lo, hi = _slot_range(plan.slot, *value_range_of(ranks, cores, kind, plan.column))
            table[kind, where[_SLOT[plan.slot]]] = p, bit, lo, hi, codes
    return table


@functools.lru_cache(maxsize=1)
def _envelope() -> np.ndarray:
    ts, launch = _slot_range("ts", *column_range("ts")), _slot_range("launch", *column_range("launch"))
    return np.array([ts[0], ts[1], launch[0], launch[1]], np.int64)


@helper
def _field(words, unit, slot):
    """A slot's value in a record, cut out of its little-endian word (sign-extended where signed)."""
    value = (words[unit, SLOT_FIELDS[slot, 0]] >> SLOT_FIELDS[slot, 1]) & SLOT_FIELDS[slot, 2]
    return (value ^ SLOT_FIELDS[slot, 3]) - SLOT_FIELDS[slot, 3]


@helper
def _pack(valid, rows, first, out):
    """Each plan's validity bytes of a block's ``rows`` records as bits, eight to a byte (``first``, the block's
    first record, is a multiple of 8), counted; the bytes are cleared for the next block. A last, partial
    word's bytes past the rows are 0: no record wrote them since they were last cleared."""
    words = (rows + 7) >> 3
    for p in range(DISCARD):
        eights = valid[p].view(np.uint64)
        seen = np.uint64(0)
        for k in range(words):
            word = eights[k]
            out.bits[p, (first >> 3) + k] = (word * _GATHER) >> np.uint64(56)
            seen += (word * _ADD) >> np.uint64(56)
            eights[k] = 0
        out.count[p] += np.int64(seen)


@kernel
def _fill(words, pieces, layout, out):
    """Decode and check every record of ``pieces`` (first unit, records, first seq) in order.

    Returns -1, or the row of the first record the careful decoder must look at.
    """
    entries, envelope = layout.entries, layout.envelope
    valid = np.zeros((DISCARD + 1, BLOCK + _PAD), np.uint8)
    kinds = entries.shape[0]
    i = 0
    b = 0
    for p in range(pieces.shape[0]):
        seq = pieces[p, 2]
        for unit in range(pieces[p, 0], pieces[p, 0] + pieces[p, 1]):
            kind = _field(words, unit, KIND)
            ts = _field(words, unit, TS)
            launch = _field(words, unit, LAUNCH)
            if ((kind >= kinds) | (_field(words, unit, SEQ_LO) != (seq & 0xFFFFFFFF))
                    | (ts < envelope[0]) | (ts > envelope[1]) | (launch < envelope[2]) | (launch > envelope[3])):
                return i
            # Every slot to its array, a width at a time: no branch on a slot's width (mispredicted, it cost
            # more than the rest of the record's decode).
            for r in range(len(SLOTS8)):
                out.out8[r][i] = _field(words, unit, SLOTS8[r])
            for r in range(len(SLOTS16)):
                out.out16[r][i] = _field(words, unit, SLOTS16[r])
            for r in range(len(SLOTS32)):
                out.out32[r][i] = _field(words, unit, SLOTS32[r])
            for r in range(len(SLOTS64)):
                out.out64[r][i] = _field(words, unit, SLOTS64[r])
            present = _field(words, unit, PRESENT)
            bad = False
            for f in range(len(FIELD_SLOTS)):
                value = _field(words, unit, FIELD_SLOTS[f])
                bit = entries[kind, f, E_BIT]
                here = (bit == 0) | ((present & bit) != 0)
                bad |= here & ((value < entries[kind, f, E_LO]) | (value > entries[kind, f, E_HI])
                               | (((entries[kind, f, E_CODES] >> (value & 31)) & 1) == 0))
                valid[entries[kind, f, E_PLAN], b] = here
            if bad:
                return i
            seq += 1
            i += 1
            b += 1
            if b == BLOCK:
                _pack(valid, b, i - b, out)
                b = 0
    _pack(valid, b, i - b, out)
    return -1


def worth_it(records: int) -> bool:
    """Whether to decode ``records`` records (a whole input's) with this path.

    On a little-endian host only (the words are read as native integers; the careful decoder reads any).
    numba's import and its first kernel load cost about 0.4 s, which the fast path pays back only on
    large inputs: below ``FAST_FROM``, it runs only in a process where numba is loaded already.
    Measured with ``moetrace ingest`` on 2 cores: 9.6 M records 1.98-2.09 s careful, 2.21-2.36 s fast;
    99 M records 26.4 s careful, 22.3 s fast (the careful decoder's whole-chunk arrays cost it more
    there than its ~90 ns a record against ~75 says).
    """
    return NATIVE and (records >= FAST_FROM or bool(loaded()))


def decode(data: np.ndarray, pieces: np.ndarray, manifest: Manifest) -> dict[str, pa.Array] | None:
    """Every column the chunk's records fill but rank, core and seq (the caller's, per piece), or None where
    the careful decoder must decide.

    ``data``: the dump's bytes; ``pieces``: int64[n, 3] (first 64-byte unit, records, first seq).
    """
    units = len(data) // RECORD_SIZE
    words = data[: units * RECORD_SIZE].view("<i8").reshape(units, _WORDS)
    total = int(pieces[:, 1].sum())
    entries = _entries(manifest.ranks, manifest.cores, len(manifest.regions), len(manifest.names))
    out = Out(*(tuple(np.empty(total, t) for _ in slots) for slots, t in zip(_BY_WIDTH, _TYPES)),
              np.empty((DISCARD + 1, (total + 7) >> 3), np.uint8), np.zeros(DISCARD + 1, np.int64))
    if _fill(words, pieces, Layout(entries, _envelope()), out) >= 0:
        return None
    return _table(out, total, manifest)


def _slot(out: Out, slot: str) -> np.ndarray:
    s = _SLOT[slot]
    g = int(SLOT_FIELDS[s, 4])
    return out[g][_BY_WIDTH[g].index(s)]


def _table(out: Out, total: int, manifest: Manifest) -> dict[str, pa.Array]:
    """Every column but the envelope's rank, core and seq: its slot's array under its plans' validity bits."""
    cols = {"ts": pa.array(_slot(out, "ts")), "launch": pa.array(_slot(out, "launch")),
            "kind": pa.array(_slot(out, "kind"))}
    for p, plan in enumerate(PLANS):
        count = int(out.count[p])
        if not count:
            continue
        bits = out.bits[p]
        values = _slot(out, plan.slot)
        if plan.column == "name":  # arrow's take checks the id under a null too: make those 0
            here = np.unpackbits(bits, count=total, bitorder="little").view(bool)
            ids = pa.array(np.where(here, values, 0).astype(np.int32), mask=~here)
            got = pa.array(list(manifest.names), pa.string()).take(ids)
        else:
            values = values.astype(COLUMN[plan.column].type.to_pandas_dtype(), copy=False)
            got = pa.Array.from_buffers(COLUMN[plan.column].type, total,
                                        [None if count == total else pa.py_buffer(bits), pa.py_buffer(values)],
                                        null_count=total - count)
        if plan.column in cols:  # a column some kinds keep in another slot: its other plan's rows
            got = pc.if_else(pa.array(np.unpackbits(bits, count=total, bitorder="little").view(bool)),
                             got, cols[plan.column])
        cols[plan.column] = got
    return cols
