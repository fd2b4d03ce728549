"""The binary ring layout, defined once.

``kernels/device/moetrace.h`` writes this layout; ``ingest.rings`` decodes and
encodes it; ``layout_markdown()`` renders the byte-by-byte tables of
docs/trace-format.md. A test compiles the C header and checks its offsets
against ``HEADER_SLOTS`` / ``RECORD_SLOTS``.

Which contract field a kind stores in which record slot is ``SLOT_OF`` (one
slot per column, whatever the kind) restricted to the kind's ``FIELDS``;
``PLANS`` turns that into per-column kind masks for the vectorized decoder
(``ingest.rings``) and encoder (``ingest.ring_encode``).
Optional fields have a presence bit: bit 0 site, bit 1 epoch, bit 2+i the
kind's i-th optional field in ``FIELDS`` order. Required fields are always
present.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .contract import ALLOWED, COLUMN, COLUMNS, COMMON_OPTIONAL, FIELDS, Kind

MAGIC = b"MTRACE"
VERSION = 1
HEADER_SIZE = 64
RECORD_SIZE = 64


@dataclass(frozen=True)
class Slot:
    name: str
    offset: int
    dtype: str  # numpy little-endian type string
    c_type: str
    doc: str


HEADER_SLOTS: tuple[Slot, ...] = (
    Slot("magic", 0, "S6", "char[6]", 'ASCII "MTRACE", no terminator'),
    Slot("version", 6, "<u2", "uint16_t", f"layout version, {VERSION}"),
    Slot("record_size", 8, "<u2", "uint16_t", f"bytes per record, {RECORD_SIZE}"),
    Slot("header_size", 10, "<u2", "uint16_t", f"bytes of this header, {HEADER_SIZE}"),
    Slot("capacity", 12, "<u4", "uint32_t", "records the ring holds (C > 0)"),
    Slot("write_count", 16, "<u8", "uint64_t", "records ever written (W); record i lives in slot i mod C"),
    Slot("rank", 24, "<u4", "uint32_t", "rank (PE) of the writer"),
    Slot("core", 28, "<u4", "uint32_t", "core / block of the writer"),
    Slot("stored", 32, "<u4", "uint32_t",
         "records that follow this header in a dump: C after ring init (a raw copy of the ring); "
         "a host that dumps only the written prefix sets it to min(W, C)"),
    Slot("reserved", 36, "V28", "uint8_t[28]", "zero"),
)

RECORD_SLOTS: tuple[Slot, ...] = (
    Slot("ts", 0, "<i8", "uint64_t", "envelope ts: device cycles"),
    Slot("seq_lo", 8, "<u4", "uint32_t", "low 32 bits of the record's absolute index i (= its seq)"),
    Slot("launch", 12, "<i4", "int32_t", "envelope launch"),
    Slot("kind", 16, "u1", "uint8_t", "contract Kind code"),
    Slot("e0", 17, "u1", "uint8_t", "first enum field"),
    Slot("e1", 18, "u1", "uint8_t", "second enum field"),
    Slot("e2", 19, "u1", "uint8_t", "third enum field (zero where a kind has none)"),
    Slot("present", 20, "<u2", "uint16_t", "presence bits of the optional fields"),
    Slot("h", 22, "<i2", "int16_t", "a rank-sized field"),
    Slot("r0", 24, "<u2", "uint16_t", "a region id (index into the manifest's regions)"),
    Slot("r1", 26, "<u2", "uint16_t", "a second region id"),
    Slot("site", 28, "<i4", "int32_t", "call-site id (present bit 0)"),
    Slot("u", 32, "<i4", "int32_t", "a 32-bit field"),
    Slot("v", 36, "<i4", "int32_t", "a second 32-bit field"),
    Slot("x", 40, "<i8", "int64_t", "a 64-bit field (offsets)"),
    Slot("y", 48, "<i8", "int64_t", "a second 64-bit field (values)"),
    Slot("epoch", 56, "<i8", "int64_t", "the kernel's epoch (present bit 1)"),
)


def _dtype(slots: tuple[Slot, ...], size: int) -> np.dtype:
    return np.dtype({"names": [s.name for s in slots], "formats": [s.dtype for s in slots],
                     "offsets": [s.offset for s in slots], "itemsize": size})


HEADER_DTYPE = _dtype(HEADER_SLOTS, HEADER_SIZE)
RECORD_DTYPE = _dtype(RECORD_SLOTS, RECORD_SIZE)

# Contract column -> record slot, the same for every kind that carries it.
# The kernel name travels as an id into the manifest's ``names``.
SLOT_OF: dict[str, str] = {
    "ts": "ts", "launch": "launch", "kind": "kind", "site": "site", "epoch": "epoch",
    "name": "u",
    "engine": "e0", "cmp": "e0", "pipe_op": "e0", "scope": "e0", "dtype": "e0", "outcome": "e0",
    "op": "e1", "event": "e1",
    "peer": "h", "topk": "h", "src_rank": "h",
    "region": "r0", "local_region": "r1", "sig_region": "r1",
    "nbytes": "u", "words": "u", "token": "u", "local_expert": "u",
    "sig_offset": "v", "expert": "v", "capacity": "v",
    "offset": "x", "dst_rank": "x", "delivered": "x",
    "value": "y", "observed": "y", "local_offset": "y", "slot": "y", "requested": "y",
}

# Where a kind stores a column in another slot than ``SLOT_OF`` says: the default slot is
# taken by a field the kind shipped with first (append-only: shipped slots never move).
SLOT_OF_KIND: dict[tuple[Kind, str], str] = {
    (Kind.AMO, "dtype"): "e2",  # e0 is the amo's engine
    (Kind.PUT, "local_offset"): "v",  # y is the put's value
}


def slot_of(kind: Kind, column: str) -> str:
    """The record slot ``kind`` stores ``column`` in."""
    return SLOT_OF_KIND.get((kind, column), SLOT_OF[column])


def slot_bounds(dtype, lo: int, hi: int) -> tuple[int, int]:
    """[lo, hi] narrowed to what a slot of ``dtype`` can hold: a bound the slot cannot pass needs no test."""
    info = np.iinfo(dtype)
    return max(lo, int(info.min)), min(hi, int(info.max))


# Slots whose values are region ids, checked against the manifest.
REGION_SLOTS = ("r0", "r1")

PRESENT_SITE = 1 << 0
PRESENT_EPOCH = 1 << 1


def presence_bit(kind: Kind, column: str) -> int | None:
    """The presence mask bit of an optional field; None for a required one."""
    if column == "site":
        return PRESENT_SITE
    if column == "epoch":
        return PRESENT_EPOCH
    req, opt = FIELDS[kind]
    if column in req:
        return None
    return 1 << (2 + opt.index(column))


def kind_slots(kind: Kind) -> list[tuple[str, str, int | None]]:
    """(column, slot, presence bit or None) for every field the kind may carry."""
    req, opt = FIELDS[kind]
    return [(c, slot_of(kind, c), presence_bit(kind, c)) for c in req + opt + COMMON_OPTIONAL]


def _check_table() -> None:
    # A slot must never hold two fields of one kind; each field's slot must exist.
    names = {s.name for s in RECORD_SLOTS}
    for kind in Kind:
        used: dict[str, str] = {}
        for col, slot, _ in kind_slots(kind):
            assert slot in names, (col, slot)
            assert slot not in used, f"{kind.wire}: {col} and {used[slot]} share slot {slot}"
            used[slot] = col
    assert set(SLOT_OF) - {"ts", "launch", "kind"} <= set(COLUMN)
    for kind, col in SLOT_OF_KIND:
        assert col in FIELDS[kind][0] + FIELDS[kind][1], (kind, col)


_check_table()


@dataclass(frozen=True)
class Plan:
    """How one contract column is read from the records (of the kinds that keep it in one slot).

    A column some kind keeps elsewhere (``SLOT_OF_KIND``) has one plan per slot,
    each covering only its kinds; readers merge them.

    Kinds are bit masks (bit k = kind code k) so the per-row work is a few
    AND/compare passes over a ``1 << kind`` array instead of gathers.
    """

    column: str
    slot: str
    required: np.ndarray  # bool[256]: kind carries it always (encoder)
    bit: np.ndarray  # uint16[256]: presence bit where optional, else 0 (encoder)
    req_kinds: int  # kinds that always carry it
    opt_kinds: tuple[tuple[int, int], ...]  # (kinds, presence bit) where optional
    allowed: tuple[tuple[int, int], ...]  # enum columns: (kinds, allowed codes as bits)

    @property
    def kinds(self) -> int:
        out = self.req_kinds
        for k, _ in self.opt_kinds:
            out |= k
        return out


def _plans() -> list[Plan]:
    plans = []
    for c in COLUMNS:
        if c.envelope or c.name not in SLOT_OF:
            continue
        slots = [SLOT_OF[c.name]] + sorted({s for (k, col), s in SLOT_OF_KIND.items() if col == c.name})
        for slot_name in slots:
            req = np.zeros(256, bool)
            bit = np.zeros(256, np.uint16)
            req_kinds = 0
            opt: dict[int, int] = {}
            allowed: dict[int, int] = {}
            for kind in Kind:
                for col, slot, b in kind_slots(kind):
                    if col != c.name or slot != slot_name:
                        continue
                    if b is None:
                        req[kind] = True
                        req_kinds |= 1 << kind
                    else:
                        bit[kind] = b
                        opt[b] = opt.get(b, 0) | (1 << kind)
                    if c.enum is not None:
                        codes = ALLOWED.get((kind, col), frozenset(int(m) for m in c.enum))
                        mask = sum(1 << int(x) for x in codes)
                        allowed[mask] = allowed.get(mask, 0) | (1 << kind)
            plans.append(Plan(c.name, slot_name, req, bit, req_kinds,
                              tuple((k, b) for b, k in opt.items()),
                              tuple((k, m) for m, k in allowed.items())))
    return plans


PLANS = _plans()


def _c_field(column: str) -> str:
    return "name id" if column == "name" else column


def layout_markdown() -> str:
    """The byte-by-byte tables of docs/trace-format.md, rendered from this module."""
    out = []
    out.append(f"Ring header ({HEADER_SIZE} bytes, little-endian):\n")
    out.append("| byte | size | type | field | meaning |")
    out.append("|---:|---:|---|---|---|")
    for s in HEADER_SLOTS:
        out.append(f"| {s.offset} | {np.dtype(s.dtype).itemsize} | `{s.c_type}` | `{s.name}` | {s.doc} |")
    out.append(f"\nRecord ({RECORD_SIZE} bytes, little-endian):\n")
    out.append("| byte | size | type | slot | meaning |")
    out.append("|---:|---:|---|---|---|")
    for s in RECORD_SLOTS:
        out.append(f"| {s.offset} | {np.dtype(s.dtype).itemsize} | `{s.c_type}` | `{s.name}` | {s.doc} |")
    slots = [s.name for s in RECORD_SLOTS if s.name in
             ("e0", "e1", "e2", "h", "r0", "r1", "u", "v", "x", "y")]
    out.append("\nPer-kind slot mapping (`field` = required, `field?` = optional, "
               "with its presence bit; every kind may also carry `site` (bit 0) and `epoch` (bit 1)):\n")
    out.append("| code | kind | " + " | ".join(f"`{s}`" for s in slots) + " |")
    out.append("|---:|---|" + "---|" * len(slots))
    for kind in Kind:
        cells = {s: "" for s in slots}
        for col, slot, bit in kind_slots(kind):
            if slot not in cells:
                continue
            text = _c_field(col)
            if bit is not None:
                text += f"? (bit {bit.bit_length() - 1})"
            cells[slot] = text
        out.append(f"| {int(kind)} | `{kind.wire}` | " + " | ".join(cells[s] for s in slots) + " |")
    return "\n".join(out) + "\n"
