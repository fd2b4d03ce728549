"""JSON-lines events: one JSON object per line, plain, gzip or zstd.

Every check is derived from ``ingest.contract`` (``FIELDS``, ``COLUMN``,
``ALLOWED``, ``JSON_NAME``) and the manifest; nothing here lists fields.

Two paths. ``ingest.jsonl_fast`` parses and checks each line in one compiled pass to typed
columns (``ingest.jsonl_scan``, its checks in ``ingest.jsonl_plan``); it answers only "valid" or
"not sure". This module's
line-by-line path is the authority: it runs when the fast one is not sure,
and names the first offending line. Per line it costs one C-scanner JSON
decode, one dict lookup for the kind and a generated straight-line check per
kind; rows are kept per kind (a kind's field set is fixed, so no per-row
padding of 40 columns) and put back in file order at the end.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from json.scanner import make_scanner
from pathlib import Path

import numpy as np
import pyarrow as pa

from .contract import ALLOWED, COLUMN, COLUMNS, COMMON_OPTIONAL, ENVELOPE, FIELDS, SCHEMA, Kind, json_name
from .value_ranges import must_be_rank, range_problem
from .errors import TraceError
from .manifest import Manifest
from .text_stream import BOM, detect_compression, line_lists  # noqa: F401 (BOM, detect_compression: re-exported)


_INT, _CODE, _STR = 0, 1, 2
_BY_WIRE = {k.wire: k for k in FIELDS}

# The per-line seq check reads rank, core, seq as a kind's first three values.
assert ENVELOPE[:3] == ("rank", "core", "seq")


@dataclass
class JsonlChunk:
    """What one JSON-lines file holds: rows, the line of each row, nothing lost."""

    table: pa.Table
    positions: np.ndarray  # 1-based line number of each row
    lost: dict = field(default_factory=dict)

    @property
    def events_in(self) -> int:
        return self.table.num_rows


def _utf8_ok(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _short(v) -> str:
    text = json.dumps(v) if not isinstance(v, str) else repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


@functools.lru_cache(maxsize=None)
def _layout(kind: Kind):
    """What reading ``kind`` needs that no manifest changes: its fields and its compiled check.

    Per field (json key, column, mode, enum table, required); the region
    table and the integer bounds come from the manifest at each read.
    """
    req, opt = FIELDS[kind]
    cols = [(c, True) for c in ENVELOPE if c != "kind"]
    cols += [(c, True) for c in req] + [(c, False) for c in opt + COMMON_OPTIONAL]
    fields = []
    for col, required in cols:
        spec = COLUMN[col]
        if spec.enum is not None:
            allowed = ALLOWED.get((kind, col), frozenset(spec.enum))
            mode, table = _CODE, {spec.enum(c).wire: int(c) for c in sorted(allowed)}
        elif spec.ref == "region":
            mode, table = _CODE, None
        else:
            mode, table = (_STR if spec.type == pa.string() else _INT), None
        fields.append((json_name(kind, col), col, mode, table, required))
    return tuple(fields), _compile(kind, fields)


def _compile(kind: Kind, fields: list):
    """The code of ``parse(obj, lineno)``, which checks and appends one event of ``kind``.

    Generated from the fields so each check is straight-line code: the generic
    loop over field tuples cost about three times as much per line. Bounds
    (L<i>, H<i>) and name tables (T<i>) are names bound per read, so one
    compiled code serves every manifest: compiling is most of the cost of a
    small file. On a failure it calls ``bad_field(spec, obj, i)`` or
    ``bad_seq(...)``, which raise.
    """
    body = []
    for i, (key, _col, mode, _table, required) in enumerate(fields):
        body.append(f"v{i} = obj.get({key!r})")
        if mode == _INT:
            check = f"type(v{i}) is not int or v{i} < L{i} or v{i} > H{i}"
        elif mode == _STR:
            # A lone surrogate escape ("\\ud83d") decodes to a str that has no UTF-8 form.
            check = f"type(v{i}) is not str or not (v{i}.isascii() or utf8_ok(v{i}))"
        else:
            # Names only: a bare integer code is not the JSON form.
            body.append(f"if v{i} is not None: v{i} = T{i}.get(v{i}, -1) if type(v{i}) is str else -1")
            check = f"v{i} < 0"
        if required:
            body.append(f"if v{i} is None or {check}: bad_field(spec, obj, {i})")
        else:
            body.append(f"if v{i} is not None and ({check}): bad_field(spec, obj, {i})")
    body += [
        "rc = (v0 << 16) | v1",
        "prev = last_seq.get(rc)",
        "if prev is not None and v2 <= prev: bad_seq(v0, v1, v2, prev)",
        "last_seq[rc] = v2",
        "rows_append(lineno)",
    ]
    body += [f"A{i}(v{i})" for i in range(len(fields))]
    src = "def parse(obj, lineno):\n" + "".join(f"    {line}\n" for line in body)
    return compile(src, f"<moetrace jsonl {kind.wire}>", "exec")


class _KindSpec:
    """How to read one kind: (json key, column, mode, lookup-or-lo, hi, required) per field."""

    def __init__(self, kind: Kind, manifest: Manifest):
        self.kind = kind
        layout, self._code = _layout(kind)
        regions = None
        self.fields = []
        for key, col, mode, table, required in layout:
            if mode == _INT:
                lo, hi = manifest.value_range(kind, col)
                self.fields.append((key, col, _INT, lo, hi, required))
            elif mode == _CODE and table is None:
                if regions is None:
                    regions = {r.name: r.id for r in manifest.regions}
                self.fields.append((key, col, _CODE, regions, None, required))
            else:
                self.fields.append((key, col, mode, table, None, required))
        self.columns = [f[1] for f in self.fields]
        self.keys = frozenset(f[0] for f in self.fields) | {"kind"}
        self.index = {col: i for i, col in enumerate(self.columns)}
        self.rows: list[int] = []
        self.values: list[list] = [[] for _ in self.fields]
        self.manifest = manifest

    def compile(self, last_seq: dict, bad_field, bad_seq):
        """``parse(obj, lineno)`` bound to this read: its lists, bounds, tables and seq state."""
        ns: dict = {"last_seq": last_seq, "bad_field": bad_field, "bad_seq": bad_seq, "spec": self,
                    "rows_append": self.rows.append, "str": str, "int": int, "utf8_ok": _utf8_ok}
        for i, (_key, _col, mode, a, b, _required) in enumerate(self.fields):
            ns[f"A{i}"] = self.values[i].append
            if mode == _INT:
                ns[f"L{i}"], ns[f"H{i}"] = a, b
            elif mode == _CODE:
                ns[f"T{i}"] = a
        exec(self._code, ns)
        return ns["parse"]

    def explain(self, obj: dict, key: str, col: str, mode: int, a, b, required: bool) -> str:
        """The message for a field that failed the fast checks."""
        kind = self.kind.wire
        v = obj.get(key)
        if v is None:
            return f"{kind} event: required field {key!r} is missing"
        if mode == _INT:
            if type(v) is not int:
                return f"{kind} event: field {key!r} must be an integer, got {_short(v)}"
            if must_be_rank(self.kind, col):
                return (f"{kind} event: field {key!r} = {v} is not a rank of the manifest "
                        f"(ranks 0..{self.manifest.ranks - 1})")
            if col == "core":
                return (f"{kind} event: field 'core' = {v} is not a core of the manifest "
                        f"(cores 0..{self.manifest.cores - 1})")
            return f"{kind} event: field {key!r} = {v} {range_problem(col, v)}"
        if mode == _STR:
            if type(v) is str:
                return f"{kind} event: field {key!r} is not valid Unicode text (a lone surrogate escape): {_short(v)}"
            return f"{kind} event: field {key!r} must be a string, got {_short(v)}"
        spec = COLUMN[col]
        if spec.ref == "region":
            if type(v) is not str:
                return f"{kind} event: field {key!r} must be a region name, got {_short(v)}"
            names = ", ".join(r.name for r in self.manifest.regions) or "none"
            return f"{kind} event: field {key!r}: unknown region {v!r}; the manifest's regions are {names}"
        expected = ", ".join(a)
        if type(v) is not str:
            return f"{kind} event: field {key!r} must be a name (one of {expected}), got {_short(v)}"
        try:
            spec.enum.from_wire(v)
        except ValueError:
            return f"{kind} event: field {key!r}: unknown {key} {v!r}; expected one of {expected}"
        return f"{kind} event: field {key!r}: {v!r} is not allowed here; expected one of {expected}"


def read_jsonl(path: str | Path, manifest: Manifest, *, fast: bool = True) -> JsonlChunk:
    """Read and validate one JSON-lines file into a contract table (rows in file order).

    ``fast`` first tries a compiled scanner that parses and checks each line
    (``ingest.jsonl_fast``); whenever that path is not sure, the file is read
    again line by line here, which decides and names the offending line.
    """
    path = Path(path)
    compression = detect_compression(path)
    if fast:
        from .jsonl_fast import read_fast

        got = read_fast(path, manifest, compression)
        if got is not None:
            return JsonlChunk(*got)
    # Specs are made for the kinds a file holds, when first met: a small file holds few.
    kind_specs: dict[str, _KindSpec] = {}
    specs: dict[str, tuple] = {}
    last_seq: dict[int, int] = {}
    loads = json.loads
    scan = make_scanner(json.JSONDecoder())
    lineno = 0

    def fail(msg: str):
        raise TraceError(path, f"line {lineno}", msg)

    def bad_field(spec: _KindSpec, obj: dict, i: int):
        fail(spec.explain(obj, *spec.fields[i]))

    def bad_seq(rank: int, core: int, seq: int, prev: int):
        fail(f"seq {seq} of rank {rank} core {core} does not increase past {prev} "
             f"(seq must strictly increase per (rank, core))")

    def new_spec(k) -> tuple:
        kind = _BY_WIRE.get(k) if type(k) is str else None
        if kind is None:
            if k is None:
                fail("field 'kind' is missing")
            fail(f"unknown kind {_short(k)}; expected one of {', '.join(_BY_WIRE)}")
        ks = kind_specs[k] = _KindSpec(kind, manifest)
        spec = specs[k] = (ks.keys, ks.compile(last_seq, bad_field, bad_seq))
        return spec

    for lines in line_lists(path, compression):
        for line in lines:
            lineno += 1
            try:
                obj, end = scan(line, 0)
                if end != len(line):
                    raise StopIteration
            except (StopIteration, ValueError, RecursionError):
                # Not one bare value: leading/trailing blanks, a blank line or
                # bad JSON. json.loads decides and words the error.
                if not line.strip():
                    continue  # blank lines carry nothing
                try:
                    obj = loads(line)
                except ValueError as e:
                    fail(f"not valid JSON: {getattr(e, 'msg', e)}")
                except RecursionError:
                    fail("not valid JSON for an event: nested too deeply")
            if type(obj) is not dict:
                fail(f"an event must be a JSON object, got {_short(obj)}")
            k = obj.get("kind")
            spec = specs.get(k) if type(k) is str else None
            if spec is None:
                spec = new_spec(k)
            keys, parse = spec
            if not keys.issuperset(obj):
                ks = kind_specs[obj["kind"]]
                # A JSON null is an absent field, wherever it stands.
                extra = sorted(k for k in set(obj) - ks.keys if obj[k] is not None)
                if extra:
                        fail(f"{ks.kind.wire} event: field {extra[0]!r} is not part of a {ks.kind.wire} event "
                         f"(it would be dropped); its fields are {', '.join(sorted(ks.keys))}")
            parse(obj, lineno)
    return _assemble([kind_specs[k.wire] for k in FIELDS if k.wire in kind_specs])


def _assemble(specs: list[_KindSpec]) -> JsonlChunk:
    """Build the contract table from the per-kind lists, back in file order."""
    used = [s for s in specs if s.rows]
    lines = np.concatenate([np.asarray(s.rows, dtype=np.int64) for s in used]) if used else np.zeros(0, np.int64)
    total = len(lines)
    held = set().union(*(s.index for s in used)) if used else set()
    arrays = []
    for c in COLUMNS:
        if c.name != "kind" and c.name not in held:
            arrays.append(pa.chunked_array([pa.nulls(total, c.type)], type=c.type))  # no kind here has it
            continue
        pieces = []
        for s in used:
            n = len(s.rows)
            if c.name == "kind":
                pieces.append(pa.array(np.full(n, int(s.kind), dtype=np.int8)))
            elif c.name in s.index:
                pieces.append(pa.array(s.values[s.index[c.name]], type=c.type))
            else:
                pieces.append(pa.nulls(n, c.type))
        arrays.append(pa.chunked_array(pieces, type=c.type))
    table = pa.Table.from_arrays(arrays, schema=SCHEMA)
    if len(used) > 1:
        order = np.argsort(lines, kind="stable")
        table = table.take(order)
        lines = lines[order]
    return JsonlChunk(table.combine_chunks(), lines)
