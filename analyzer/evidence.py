"""Evidence resolution: a rule's hits to findings, every column gathered once for all their rows.

A hit names its evidence as (role, row) pairs; a finding carries each row as
an ``Evidence`` (the event's non-null fields by wire name, as
``TraceView.describe`` gives them) and is located at its first row unless the
hit says otherwise.  ``drafts_of`` places every hit (``analyzer.draft``) from its first row's
columns; only the findings a report lists (``analyzer.classes.sample``) are
built and have their rows described, by ``resolve``, so a trace with a
million findings of a few classes describes a few hundred.
``_resolve_rows`` resolves rows per kind with one vectorised take per column
(and each distinct row once), where a ``describe`` per row cost a dozen numpy
scalar reads each, and builds each row's evidence values per null pattern
(which fields it lacks) with one getter, not a test per field.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ingest.contract import COLUMN, COMMON_OPTIONAL, FIELDS, Kind, json_name, kind_columns

from .config import Config
from .draft import LOCATION_FIELDS, Draft
from .finding import Evidence, FieldValues, Finding, jsonable, updated

if TYPE_CHECKING:  # pragma: no cover
    from rules.base import Hit, Rule
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


def owned(window, hits: Sequence["Hit"], trace: "TraceView") -> list["Hit"]:
    """The hits that are this window's to report: their primary event (else their launch) in the main blocks."""
    firsts = [h.first_row for h in hits]
    first = [r for r in firsts if r is not None]
    launch = iter(trace.col("launch")[np.asarray(first, np.int64)].tolist()) if first else iter(())
    out = []
    for h, row in zip(hits, firsts):
        at = next(launch) if row is not None else h.location.get("launch")
        if window.owns(None if at is None else int(at)):
            out.append(h)
    return out


def drafts_of(hits: Sequence["Hit"], rules: dict[str, type["Rule"]], rule: type["Rule"], config: Config,
              trace: "TraceView", window: Any = None) -> list[Draft]:
    """One draft per hit (its rule by code, else ``rule``), located from its first row's columns
    (one gather per column for all of them), in the ``window`` whose view its rows index. Only the
    findings a report lists are built from their drafts and have their rows described
    (``resolve``): a million hits of one class cost their count, not a million descriptions."""
    firsts = [h.first_row for h in hits]
    places = iter(_first_places(trace, np.asarray([r for r in firsts if r is not None], np.int64)))
    notes: dict[tuple, tuple[str, ...]] = {}  # inference notes by (region, properties): few distinct
    per_rule: dict[str, tuple] = {}  # (rule, family, severity) per code: the config's selectors matched once
    sources: dict[int, str | None] = {}  # kernel file:line per site
    out = []
    for h, row in zip(hits, firsts):
        fixed = per_rule.get(h.code)
        if fixed is None:
            rule_ = rules.get(h.code, rule)
            fixed = per_rule[h.code] = (rule_, _value(rule_.family),
                                        config.severity_for(rule_) or None, _value(rule_.severity))
        if row is None or h.location:
            loc, seq = (_as_location(next(places)) if row is not None else ({}, -1))
            out.append(_draft(h, fixed, trace, loc, notes, seq, window))
            continue
        # Placed at its first row alone (nearly every hit): the place straight from the row's columns,
        # whose region is a name already (so the inference notes of no one region, as _draft gives).
        rank_, core_, launch_, region_, offset_, site_, seq = next(places)
        source = None
        if site_ is not None:
            source = sources.get(site_)
            if source is None:
                source = sources[site_] = trace.manifest.site_text(site_)
        place = (rank_, core_, launch_, region_, offset_, site_, source)
        out.append(_placed(h, fixed, trace, place, None, notes, seq, window))
    return out


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


_PLACE_COLUMNS = ("launch", "region", "offset", "site")  # a row's location fields, less rank and core


def _first_places(trace: "TraceView", rows: np.ndarray) -> list[tuple]:
    """Per row, its (rank, core, launch, region, offset, site, seq) as ``TraceView.describe`` names
    them, None where the row's kind does not carry the field under its own name or it is null: one
    gather per column."""
    if not len(rows):
        return []
    kinds = trace.col("kind")[rows].astype(np.int64)
    values: dict[str, list] = {}
    for name in _PLACE_COLUMNS:
        spec = COLUMN[name]
        v = trace.col(name)[rows].astype(np.int64)
        keep = v != spec.numpy_null
        for k in np.unique(kinds).tolist():  # a kind without the field, or under another name, has none
            if name not in ("launch",) + kind_columns(Kind(k)) or json_name(Kind(k), name) != name:
                keep &= kinds != k
        if spec.ref == "region":
            names = trace.declared.regions
            values[name] = [names[x].name if z else None for x, z in zip(v.tolist(), keep.tolist())]
        else:
            values[name] = [x if z else None for x, z in zip(v.tolist(), keep.tolist())]
    rank, core, seq = (trace.col(c)[rows].tolist() for c in ("rank", "core", "seq"))
    return list(zip(rank, core, *(values[name] for name in _PLACE_COLUMNS), seq))


def _as_location(place: tuple) -> tuple[dict[str, Any], int]:
    """A ``_first_places`` tuple as a location dict (its present fields) and the seq."""
    rank, core, *fields, seq = place
    loc = {"rank": rank, "core": core}
    for name, value in zip(_PLACE_COLUMNS, fields):
        if value is not None:
            loc[name] = value
    return loc, seq


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


def _draft(hit: "Hit", fixed: tuple, trace: "TraceView", loc: dict[str, Any],
           notes: dict[tuple, tuple[str, ...]], seq: int, window: Any) -> Draft:
    """The draft of a hit that names its place itself (or names no row): its location merged over
    its first row's."""
    if hit.location:  # the hit names its place (or part of it) itself
        loc = {**loc, **{k: jsonable(v) for k, v in hit.location.items() if k in LOCATION_FIELDS}}
    region = loc.get("region")
    region_id = region if isinstance(region, int) else None
    if region_id is not None:
        loc["region"] = trace.manifest.regions[region_id].name
    site = loc.get("site")
    source = loc.get("source")
    if "source" not in loc and site is not None:
        source = trace.manifest.site_text(site)
    place = (loc.get("rank"), loc.get("core"), loc.get("launch"), loc.get("region"), loc.get("offset"), site, source)
    return _placed(hit, fixed, trace, place, region_id, notes, seq, window)


def _placed(hit: "Hit", fixed: tuple, trace: "TraceView", place: tuple, region_id: int | None,
            notes: dict[tuple, tuple[str, ...]], seq: int, window: Any) -> Draft:
    """The draft of a hit at ``place`` (``Draft.place``): its severity, inference notes and partiality."""
    rule, family, configured, default_severity = fixed
    # What the finding rests on that the trace, not the manifest, gave (rules.analysis.inference).
    inferred: tuple[str, ...] = ()
    if rule.infers_from:
        about = (region_id, rule.infers_from)
        if about not in notes:
            notes[about] = tuple(trace.inference.about(region_id, rule.infers_from))
        inferred = notes[about]
    severity = configured or (hit.severity.value if hit.severity else None) or default_severity
    partial = bool(hit.rests_on) and trace.lost_at(hit.rests_on)
    return Draft(hit, rule, family, severity, place, inferred, seq, window, partial)


def _value(v: Any) -> str:
    return getattr(v, "value", v)
