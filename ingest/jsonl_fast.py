"""The optimistic JSON-lines path: a compiled parser to typed columns (``ingest.jsonl_scan``) plus vectorised checks.

It only ever says "valid, here is the table" or "not sure": on anything it
cannot vouch for (a parse error, an unexpected key, a blank line, a value out
of range, a seq step back...) it returns None, and ``ingest.jsonl`` reads the
file again line by line, which is authoritative and words the error. So the
two paths accept exactly the same files and this one never has to explain.

Every check is derived from ``ingest.contract`` like the line-by-line path's.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .contract import ALLOWED, COLUMN, COLUMNS, ENVELOPE, FIELDS, SCHEMA, Kind, json_name, kind_columns
from .jsonl_scan import Keys, parse
from .text_stream import BOM
from .manifest import Manifest

_CHUNK = 1 << 26


class _NotSure(Exception):
    pass


def _plan():
    """JSON key -> [(column, kinds carrying it under that key)], and the read schema."""
    keys: dict[str, dict[str, set[int]]] = {}
    for kind in FIELDS:
        for col in tuple(c for c in ENVELOPE if c != "kind") + kind_columns(kind):
            keys.setdefault(json_name(kind, col), {}).setdefault(col, set()).add(int(kind))
    fields = [pa.field("kind", pa.string())]
    for key, cols in keys.items():
        spec = COLUMN[next(iter(cols))]
        numeric = spec.enum is None and spec.ref is None and spec.type != pa.string()
        fields.append(pa.field(key, pa.int64() if numeric else pa.string()))
    return keys, pa.schema(fields)


_KEYS, _READ_SCHEMA = _plan()
_READ_KEYS = Keys(_READ_SCHEMA)
_NKINDS = max(FIELDS) + 1
_KIND_NAMES = [k.wire for k in Kind]
_KIND_CODES = np.array([int(Kind.from_wire(k)) for k in _KIND_NAMES])


def _kind_mask(kinds) -> np.ndarray:
    m = np.zeros(_NKINDS, dtype=bool)
    m[list(kinds)] = True
    return m


def _checks():
    """Per JSON key, per column it fills: what ``validate`` checks, worked out once.

    (column, spec, kinds carrying it (mask), kinds requiring it (mask), its kinds,
    enum names and codes, allowed codes per kind); and the kinds requiring the key.
    """
    checks, required_by = {}, {}
    for key, cols in _KEYS.items():
        entries, req_any = [], set()
        for cname, ks in cols.items():
            spec = COLUMN[cname]
            req = [k for k in ks if cname in FIELDS[Kind(k)][0] or cname in ENVELOPE]
            req_any.update(req)
            names = code_of = None
            if spec.enum is not None:
                names = [m.wire for m in spec.enum]
                code_of = np.array([int(m) for m in spec.enum], dtype=np.int64)
            allowed = {k: np.array(sorted(ALLOWED[(Kind(k), cname)]), dtype=np.int64)
                       for k in ks if (Kind(k), cname) in ALLOWED}
            entries.append((cname, spec, _kind_mask(ks), _kind_mask(req), [(k, Kind(k)) for k in ks],
                            names, code_of, allowed))
        checks[key], required_by[key] = entries, sorted(req_any)
    return checks, required_by


_CHECKS, _REQUIRED_BY = _checks()


def _chunks(path: Path, compression: str | None):
    with pa.input_stream(str(path), compression=compression) as stream:
        tail = b""
        first = True
        while True:
            block = stream.read(_CHUNK)
            if not block:
                break
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


def _parse(data: bytes) -> tuple[pa.Table, dict]:
    got = parse(data, data.count(b"\n"), _READ_KEYS)
    if got is None:
        raise _NotSure
    return got


def _read_chunk(data: bytes, manifest: Manifest) -> pa.Table:
    raw, numeric = _parse(data)
    return validate(raw, manifest, numeric)


def _np(col) -> np.ndarray:
    return col.to_numpy(zero_copy_only=False)


def _codes(col: pa.ChunkedArray, names: list[str]) -> np.ndarray:
    """Index of each value in ``names``; -1 for null or unknown."""
    idx = pc.index_in(col, value_set=pa.array(names, pa.string()))
    return _np(idx.fill_null(-1)).astype(np.int64)


def validate(raw: pa.Table, manifest: Manifest, numeric: dict | None = None) -> pa.Table:
    """The contract table for ``raw`` (one file's rows in order), or _NotSure.

    ``numeric``: key -> (values, present) as numpy arrays, 0 where absent, for the integer
    keys the parser already holds so (``ingest.jsonl_scan.parse``); the rest come from ``raw``.
    """
    numeric = numeric or {}
    n = raw.num_rows
    kind = _codes(raw.column("kind"), _KIND_NAMES)
    if n and (kind < 0).any():
        raise _NotSure
    kinds = _KIND_CODES[kind] if n else kind
    held = _kind_mask(np.unique(kinds))  # the kinds this chunk holds
    out: dict[str, np.ndarray | pa.Array] = {"kind": pa.array(kinds.astype(np.int8))}
    values: dict[str, np.ndarray] = {}
    valid: dict[str, np.ndarray] = {}
    for key, entries in _CHECKS.items():
        col = raw.column(key)
        given = numeric.get(key)
        if (col.null_count == n) if given is None else not given[1].any():
            # On no row: only a kind that requires it can object. Most keys of a small file.
            if held[_REQUIRED_BY[key]].any():
                raise _NotSure
            continue
        present = _np(col.is_valid()) if given is None else given[1]
        carriers = np.zeros(n, dtype=bool)
        for cname, spec, carry, required, ks, names, code_of, allowed in entries:
            if not (carry & held).any() and spec.type != pa.string():
                continue  # no row of a kind filling it: it stays null (and nothing here can fail)
            rows = carry[kinds]
            carriers |= rows
            if (required[kinds] & ~present).any():
                raise _NotSure
            here = rows & present
            if names is not None or spec.ref == "region":
                if spec.ref == "region":
                    names = [r.name for r in manifest.regions]
                    code_of = np.arange(len(names), dtype=np.int64)
                idx = _codes(col, names)
                if (here & (idx < 0)).any():
                    raise _NotSure
                v = np.where(idx >= 0, code_of[np.maximum(idx, 0)] if len(names) else 0, 0)
                for k, codes in allowed.items():
                    if held[k] and not np.isin(v[here & (kinds == k)], codes).all():
                        raise _NotSure
            elif spec.type == pa.string():
                v = None
            else:
                v = _np(col.fill_null(0)) if given is None else given[0]
                # Kinds grouped by the range they allow (a peer is a rank on a put, any int16 on a count).
                ranges: dict[tuple[int, int], list[int]] = {}
                for k, kind_ in ks:
                    if held[k]:
                        ranges.setdefault(manifest.value_range(kind_, cname), []).append(k)
                for (lo, hi), group in ranges.items():
                    sel = v[here if len(ranges) == 1 else here & _kind_mask(group)[kinds]]
                    if len(sel) and (sel.min() < lo or sel.max() > hi):
                        raise _NotSure
            if v is None:
                try:
                    col.validate(full=True)  # UTF-8 the careful path would refuse never gets through
                except pa.ArrowInvalid:
                    raise _NotSure from None
                out[cname] = col  # exact: a string key on a kind without it fails below
                continue
            if cname in values:
                values[cname] = np.where(here, v, values[cname])
                valid[cname] |= here
            else:
                values[cname] = np.where(here, v, 0)
                valid[cname] = here.copy()
        if (present & ~carriers).any():
            raise _NotSure  # a field the event's kind does not carry
    for cname, v in values.items():
        spec = COLUMN[cname]
        dtype = np.dtype(spec.type.to_pandas_dtype())
        arr = v.astype(dtype)
        out[cname] = pa.array(arr, type=spec.type, mask=~valid[cname] if not valid[cname].all() else None)
    arrays = [out[c.name] if c.name in out else pa.nulls(n, c.type) for c in COLUMNS]
    return pa.Table.from_arrays([a if isinstance(a, (pa.Array, pa.ChunkedArray)) else pa.array(a) for a in arrays],
                                schema=SCHEMA)


def _seq_ok(table: pa.Table) -> bool:
    rank = _np(table.column("rank")).astype(np.int64)
    core = _np(table.column("core")).astype(np.int64)
    seq = _np(table.column("seq"))
    key = (rank << 16) | core
    order = np.argsort(key, kind="stable")
    k, s = key[order], seq[order]
    return not ((k[1:] == k[:-1]) & (s[1:] <= s[:-1])).any()


def read_fast(path: Path, manifest: Manifest, compression: str | None):
    """(table, line numbers) or None when the careful path must decide."""
    try:
        tables = [_read_chunk(data, manifest) for data in _chunks(path, compression)]
    except (_NotSure, pa.ArrowException, OSError, ValueError):
        return None
    if not tables:
        return None
    table = pa.concat_tables(tables).combine_chunks() if len(tables) > 1 else tables[0].combine_chunks()
    if not _seq_ok(table):
        return None
    return table, np.arange(1, table.num_rows + 1, dtype=np.int64)
