"""Evidence resolution: the rows of the findings a report lists, every column gathered once for all.

A hit names its evidence as (role, row) pairs; a finding carries each row as
an ``Evidence`` (the event's non-null fields by wire name, as
``TraceView.describe`` gives them). Hits are placed as drafts by
``analyzer.placement``; only the findings a report lists
(``analyzer.classes.sample``) are built and have their rows described, by
``resolve``, so a trace with a million findings of a few classes describes a
few hundred.
``_resolve_rows`` resolves rows per kind with one vectorised take per column
(and each distinct row once), where a ``describe`` per row cost a dozen numpy
scalar reads each, and builds each row's evidence values per null pattern
(which fields it lacks) with one getter, not a test per field.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ingest.contract import (
    COLUMN,
    COMMON_OPTIONAL,
    FIELDS,
    Kind,
    json_name,
)

from .draft import LOCATION_FIELDS
from .finding import Evidence, FieldValues, Finding, updated

if TYPE_CHECKING:  # pragma: no cover
    from rules.trace import TraceView


_NULL = object()  # a null field: left out of the description
_STRING = COLUMN["name"].type


def _shown(kind: Kind) -> tuple[str, ...]:
    """The columns a row of ``kind`` shows as evidence, in the order its fields are listed."""
    req, opt = FIELDS[kind]
    return ("ts", "launch") + req + opt + COMMON_OPTIONAL


def _kind_fields(trace: "TraceView", kind: Kind, rows: np.ndarray, nulls: list | None = None) -> list[tuple[str, list]]:
    """(wire name, the rows' values, ``_NULL`` where null) of every field a row of ``kind`` may carry;
    ``nulls`` gets each field's null mask (a numpy bool array) where given."""
    fields: list[tuple[str, list]] = []
    for name in _shown(kind):
        spec = COLUMN[name]
        v = trace.col(name)[rows]
        if spec.type.equals(_STRING):
            vals = [_NULL if x is None else x for x in v.tolist()]
            null = np.array([x is _NULL for x in vals], bool)
        else:
            ints = v.astype(np.int64)
            vals = ints.tolist()
            null = ints == spec.numpy_null
            if spec.enum is not None:
                wire = {x: spec.enum(x).wire for x in set(vals) if x != spec.numpy_null}
                vals = [wire.get(x, _NULL) for x in vals]
            elif spec.ref == "region":
                regions = trace.declared.regions
                vals = [_NULL if x == spec.numpy_null else regions[x].name for x in vals]
            else:
                if null.any():
                    vals = [_NULL if z else x for x, z in zip(vals, null.tolist())]
        fields.append((json_name(kind, name), vals))
        if nulls is not None:
            nulls.append(null)
    return fields


def resolve(findings: Sequence[Finding], trace: "TraceView") -> tuple[Finding, ...]:
    """The findings with their ``pending`` rows described as evidence, from the view of their window."""
    rows = [row for f in findings for _, row in f.pending[0]] if any(f.pending for f in findings) else []
    if not rows:
        return tuple(findings)
    resolved = iter(_resolve_rows(trace, rows))
    out = []
    for f in findings:
        if not f.pending:
            out.append(f)
            continue
        evidence = []
        for role, _ in f.pending[0]:
            r = next(resolved)
            evidence.append(Evidence(role, r[0], r[1], r[2], r[3], r[4], r[5]))
        out.append(updated(f, evidence=tuple(evidence), pending=()))
    return tuple(out)


def _resolve_rows(trace: "TraceView", rows: Sequence[int]) -> list[tuple]:
    """Per row: (rank, core, seq, kind, FieldValues, source, where its location fields sit), what
    ``TraceView.describe`` says of the row, built straight from the columns; a repeated row's one tuple."""
    rows = np.asarray(rows, np.int64)
    if not len(rows):
        return []
    uniq, inv = np.unique(rows, return_inverse=True)
    kinds = trace.col("kind")[uniq].astype(np.int64)
    present = np.unique(kinds).tolist()
    # Every column the rows' kinds show, in one read: a window read again for its evidence took
    # one pass over its files per column (46 passes, 4.9 s of a 20 M many-findings diagnose).
    trace.load(["rank", "core", "seq"] + [name for k in present for name in _shown(Kind(k))])
    out: list[Any] = [None] * len(uniq)
    shared: dict[tuple[str, ...], tuple[str, ...]] = {}  # one tuple of field names per distinct set
    site_text = trace.declared.site_text  # sites are declared, never inferred: no inference for a re-read window
    for k in present:
        sel = np.flatnonzero(kinds == k)
        for i, r in zip(sel.tolist(), _resolve_kind(trace, Kind(k), uniq[sel], shared, site_text)):
            out[i] = r
    return [out[i] for i in inv.reshape(-1).tolist()]


def _resolve_kind(trace: "TraceView", kind: Kind, rows: np.ndarray, shared: dict, site_text) -> list[tuple]:
    nulls: list[np.ndarray] = []
    fields = _kind_fields(trace, kind, rows, nulls)
    names_all = tuple(key for key, _ in fields)
    # Rows grouped by which fields are null: per pattern the present fields' names, a getter of
    # their values (C-level, no per-field test per row) and where the location fields sit.
    pattern = np.zeros(len(rows), np.int64)
    for j, null in enumerate(nulls):
        pattern |= null.astype(np.int64) << j
    per: dict[int, tuple] = {}
    for p in np.unique(pattern).tolist():
        keep = [j for j in range(len(names_all)) if not (p >> j) & 1]
        names = tuple(names_all[j] for j in keep)
        names = shared.setdefault(names, names)
        get = (itemgetter(*keep) if len(keep) > 1 else
               (lambda v, j=keep[0]: (v[j],)) if keep else (lambda v: ()))
        at = {n: i for i, n in enumerate(names)}
        loc = (tuple(k for k in LOCATION_FIELDS if k in at), tuple(at[k] for k in LOCATION_FIELDS if k in at))
        per[p] = (names, get, at.get("site"), loc)
    wire = kind.wire
    rank, core, seq = (trace.col(c)[rows].tolist() for c in ("rank", "core", "seq"))
    out = []
    for i, (vals, p) in enumerate(zip(zip(*(v for _, v in fields)), pattern.tolist())):
        names, get, site_at, loc = per[p]
        present = get(vals)
        out.append((rank[i], core[i], seq[i], wire, FieldValues(names, present),
                    site_text(None if site_at is None else present[site_at]), loc))
    return out
