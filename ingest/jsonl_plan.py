"""What the fast JSON-lines scanner checks on each line, as arrays, worked out from the contract and the manifest.

The scanner (``ingest.jsonl_scan``) checks each event while its line is in
cache, so the careful path's checks (``ingest.jsonl``: the kind's fields, the
required ones, integer ranges, the names an enum or region field may take)
are given to it as tables indexed by (kind, JSON key):

- ``col``: the contract column the key fills on that kind, -1 where the kind
  does not carry it (a value there is not sure; a null is an absent field);
- ``req``: whether the kind requires it (``nreq``: how many keys a kind requires);
- ``tab``: the name table an enum or region value is looked up in (only the
  names the kind allows, as the careful path's tables hold), ``INT`` for an
  integer, ``STR`` for free text;
- ``lo``, ``hi``: the integers it may hold (``Manifest.value_range``).

Names (the JSON keys, the kinds, each enum's allowed names, the manifest's
regions) are hashed tables in flat arrays (``Names``). Output columns are
grouped by width (``out_group``, ``out_pos``) so each column is a contiguous
row of one typed matrix, handed to arrow without a copy. Nothing is listed
here: every field list comes from ``ingest.contract``.
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from .contract import ALLOWED, COLUMN, COLUMNS, ENVELOPE, FIELDS, Kind, json_name, kind_columns
from .manifest import Manifest

INT, STR = -1, -2  # ``tab`` of an integer key, of a free-text key; >= 0: a name table
KEYS, KINDS = 0, 1  # the name tables of the JSON keys and of the kinds
KIND_KEY = 0  # "kind" is key 0
WIDTHS = (8, 16, 32, 64)  # out_group 0..3 by bit width; 4 is text
SEQ_DENSE = 1 << 20  # ranks x cores up to this: the scanner checks seq per (rank, core) in a dense array


def str_hash(raw: bytes) -> int:
    """The scanner's hash of a key or a name (it computes the same while reading the bytes)."""
    h = 0
    for b in raw:
        h = (h * 31 + b) & 0xFFFFFFFF
    return h


class Names:
    """Name tables as flat arrays: each table an open-addressing slot array (> 2x its names, a power of 2)."""

    def __init__(self, tables: list[list[tuple[bytes, int]]]):
        raw = [name for t in tables for name, _ in t]
        self.bytes = np.frombuffer(b"".join(raw) or b"\0", dtype=np.uint8).copy()
        self.length = np.array([len(r) for r in raw] or [0], dtype=np.int64)
        self.start = np.concatenate(([0], np.cumsum(self.length)[:-1])).astype(np.int64)
        self.code = np.array([c for t in tables for _, c in t] or [0], dtype=np.int64)
        slots, off, mask, first = [], [], [], 0
        for t in tables:
            size = 4
            while size < 2 * len(t) + 1:
                size *= 2
            s = np.full(size, -1, dtype=np.int64)
            for i, (name, _) in enumerate(t):
                p = str_hash(name) & (size - 1)
                while s[p] >= 0:
                    p = (p + 1) & (size - 1)
                s[p] = first + i
            off.append(sum(len(x) for x in slots))
            mask.append(size - 1)
            slots.append(s)
            first += len(t)
        self.slots = np.concatenate(slots)
        self.offset = np.array(off, dtype=np.int64)
        self.mask = np.array(mask, dtype=np.int64)


def _read_keys() -> list[str]:
    """Every JSON key an event may carry, "kind" first, in contract order."""
    keys = ["kind"]
    for kind in FIELDS:
        for col in tuple(c for c in ENVELOPE if c != "kind") + kind_columns(kind):
            if json_name(kind, col) not in keys:
                keys.append(json_name(kind, col))
    return keys


KEY_NAMES = _read_keys()


def _name_table(col: str, kind: Kind) -> list[tuple[bytes, int]] | None:
    """The (wire name, code) pairs ``col`` may hold on ``kind``; None where it is not an enum."""
    spec = COLUMN[col]
    if spec.enum is None:
        return None
    allowed = ALLOWED.get((kind, col), frozenset(spec.enum))
    return [(spec.enum(c).wire.encode("ascii"), int(c)) for c in sorted(allowed)]


@functools.lru_cache(maxsize=None)
def _static():
    """The manifest-independent part: name tables (the region table goes last), per (kind, key) plan, output layout."""
    nkinds, nk = max(FIELDS) + 1, len(KEY_NAMES)
    key_of = {k: i for i, k in enumerate(KEY_NAMES)}
    tables = [[(k.encode("ascii"), i) for i, k in enumerate(KEY_NAMES)],
              [(k.wire.encode("ascii"), int(k)) for k in FIELDS]]
    col = np.full((nkinds, nk), -1, dtype=np.int64)
    req = np.zeros((nkinds, nk), dtype=np.bool_)
    tab = np.full((nkinds, nk), INT, dtype=np.int64)
    kstr = np.zeros(nk, dtype=np.bool_)  # the key's JSON value is a string (a name or text), on every kind
    kstr[KIND_KEY] = True
    typed: set[int] = set()
    region = []  # (kind, key) whose value is a region name: its table is the manifest's
    col_index = {c.name: i for i, c in enumerate(COLUMNS)}
    for kind in FIELDS:
        required = set(FIELDS[kind][0]) | set(ENVELOPE)
        for c in tuple(c for c in ENVELOPE if c != "kind") + kind_columns(kind):
            k = key_of[json_name(kind, c)]
            spec = COLUMN[c]
            col[kind, k], req[kind, k] = col_index[c], c in required
            names = _name_table(c, kind)
            if names is not None:
                if names not in tables:
                    tables.append(names)
                tab[kind, k] = tables.index(names)
            elif spec.ref == "region":
                region.append((int(kind), k))
            elif spec.type == pa.string():
                tab[kind, k] = STR
            text = names is not None or spec.ref is not None or spec.type == pa.string()
            assert k not in typed or kstr[k] == text, f"{c}: the scanner needs a key's JSON type on every kind"
            typed.add(k)
            kstr[k] = text
    for kind, k in region:
        tab[kind, k] = len(tables)
    group = np.array([4 if c.type == pa.string() else WIDTHS.index(c.type.bit_width) for c in COLUMNS],
                     dtype=np.int64)
    pos = np.array([int((group[:i] == group[i]).sum()) for i in range(len(COLUMNS))], dtype=np.int64)
    nreq = req.sum(axis=1).astype(np.int64)
    kind = [c.name for c in COLUMNS].index("kind")
    assert group[kind] == 0 and pos[kind] == 0, "the scanner writes the kind as the first 8-bit column"
    return tables, col, req, nreq, tab, kstr, group, pos


class Plan:
    """Everything the scanner needs for one manifest (cached per ranks, cores and region names)."""

    def __init__(self, manifest: Manifest):
        tables, self.col, self.req, self.nreq, self.tab, self.kstr, self.out_group, self.out_pos = _static()
        self.names = Names(tables + [[(r.name.encode("utf-8"), r.id) for r in manifest.regions]])
        self.lo = np.zeros(self.col.shape, dtype=np.int64)
        self.hi = np.zeros(self.col.shape, dtype=np.int64)
        for kind in FIELDS:
            for k in np.flatnonzero((self.col[kind] >= 0) & (self.tab[kind] == INT)):
                self.lo[kind, k], self.hi[kind, k] = manifest.value_range(kind, COLUMNS[self.col[kind, k]].name)
        self.envelope = np.array([KEY_NAMES.index(c) for c in ("rank", "core", "seq")], dtype=np.int64)
        self.ranks, self.cores = manifest.ranks, manifest.cores
        self.seq_dense = manifest.ranks * manifest.cores <= SEQ_DENSE
        self.nkinds = self.col.shape[0]

    def group_sizes(self) -> list[int]:
        return [int((self.out_group == g).sum()) for g in range(len(WIDTHS) + 1)]


_PLANS: dict[tuple, Plan] = {}


def plan_for(manifest: Manifest) -> Plan:
    """The plan for ``manifest`` (a trace's files share one): it depends on its ranks, cores and region names."""
    key = (manifest.ranks, manifest.cores, tuple(r.name for r in manifest.regions))
    if key not in _PLANS:
        if len(_PLANS) >= 8:
            _PLANS.clear()
        _PLANS[key] = Plan(manifest)
    return _PLANS[key]
