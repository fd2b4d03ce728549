"""Evidence resolution: a rule's hits to findings, every column gathered once for all their rows.

A hit names its evidence as (role, row) pairs; a finding carries each row as
an ``Evidence`` (the event's non-null fields by wire name, as
``TraceView.describe`` gives them) and is located at its first row unless the
hit says otherwise.  A trace with millions of findings has millions of
evidence rows: ``describe_rows`` resolves them per kind with one vectorised
take per column (and each distinct row once), where a ``describe`` per row
cost a dozen numpy scalar reads each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ingest.contract import COLUMN, COMMON_OPTIONAL, FIELDS, Kind, json_name

from .config import Config
from .finding import Evidence, FieldValues, Finding, Location, fingerprint, jsonable, normalize_key

if TYPE_CHECKING:  # pragma: no cover
    from rules.base import Hit, Rule
    from rules.trace import TraceView

_LOC_FIELDS = ("rank", "core", "launch", "region", "offset", "site", "source")
_NULL = object()  # a null field: left out of the description
_STRING = COLUMN["name"].type


def describe_rows(trace: "TraceView", rows: Sequence[int]) -> list[dict[str, Any]]:
    """``[trace.describe(r) for r in rows]``, with the same keys in the same order and the same values."""
    rows = np.asarray(rows, np.int64)
    if not len(rows):
        return []
    uniq, inv = np.unique(rows, return_inverse=True)
    kinds = trace.col("kind")[uniq].astype(np.int64)
    out: list[Any] = [None] * len(uniq)
    for k in np.unique(kinds).tolist():
        sel = np.flatnonzero(kinds == k)
        for i, d in zip(sel.tolist(), _describe_kind(trace, Kind(k), uniq[sel])):
            out[i] = d
    return [out[i] for i in inv.reshape(-1).tolist()]


def _describe_kind(trace: "TraceView", kind: Kind, rows: np.ndarray) -> list[dict[str, Any]]:
    req, opt = FIELDS[kind]
    fields: list[tuple[str, list]] = []
    for name in ("ts", "launch") + req + opt + COMMON_OPTIONAL:
        spec = COLUMN[name]
        v = trace.col(name)[rows]
        if spec.type.equals(_STRING):
            vals = [_NULL if x is None else x for x in v.tolist()]
        else:
            ints = v.astype(np.int64)
            vals = ints.tolist()
            if spec.enum is not None:
                wire = {x: spec.enum(x).wire for x in set(vals) if x != spec.numpy_null}
                vals = [wire.get(x, _NULL) for x in vals]
            elif spec.ref == "region":
                regions = trace.declared.regions
                vals = [_NULL if x == spec.numpy_null else regions[x].name for x in vals]
            else:
                null = ints == spec.numpy_null
                if null.any():
                    vals = [_NULL if z else x for x, z in zip(vals, null.tolist())]
        fields.append((json_name(kind, name), vals))
    wire = kind.wire
    rank, core, seq = (trace.col(c)[rows].tolist() for c in ("rank", "core", "seq"))
    out = []
    for i in range(len(rows)):
        d: dict[str, Any] = {"rank": rank[i], "core": core[i], "seq": seq[i], "kind": wire}
        for key, vals in fields:
            x = vals[i]
            if x is not _NULL:
                d[key] = x
        out.append(d)
    return out


def owned(window, hits: Sequence["Hit"], trace: "TraceView") -> list["Hit"]:
    """The hits that are this window's to report: their primary event (else their launch) in the main blocks."""
    first = [h.rows[0][1] for h in hits if h.rows]
    launch = iter(trace.col("launch")[np.asarray(first, np.int64)].tolist()) if first else iter(())
    out = []
    for h in hits:
        at = next(launch) if h.rows else h.location.get("launch")
        if window.owns(None if at is None else int(at)):
            out.append(h)
    return out


def findings_of(hits: Sequence["Hit"], rules: dict[str, type["Rule"]], rule: type["Rule"], config: Config,
                trace: "TraceView") -> list[Finding]:
    """One finding per hit (its rule by code, else ``rule``), the evidence of all of them described at once."""
    described = iter(describe_rows(trace, [row for h in hits for _, row in h.rows]))
    site_text = trace.manifest.site_text
    # By id of the description (describe_rows hands a repeated row's one dict): a row's values
    # and source are built once and shared by every finding that cites it.
    values: dict[int, tuple[dict[str, Any], str | None]] = {}
    notes: dict[tuple, list[str]] = {}  # inference notes by (region, properties): few distinct
    shared: dict[tuple[str, ...], tuple[str, ...]] = {}  # one tuple of field names per distinct set
    out = []
    for h in hits:
        rows = [(role, next(described)) for role, _ in h.rows]
        evidence = []
        for role, d in rows:
            vs = values.get(id(d))
            if vs is None:
                fields = [(k, v) for k, v in d.items() if k not in ("rank", "core", "seq", "kind")]
                names = tuple(k for k, _ in fields)
                names = shared.setdefault(names, names)
                vs = values[id(d)] = (FieldValues(names, tuple(v for _, v in fields)), site_text(d.get("site")))
            evidence.append(Evidence(role, d["rank"], d["core"], d["seq"], d["kind"], vs[0], vs[1]))
        out.append(_finding(h, rules.get(h.code, rule), config, trace, rows, tuple(evidence), notes))
    return out


def _finding(hit: "Hit", rule: type["Rule"], config: Config, trace: "TraceView",
             described: list[tuple[str, dict[str, Any]]], evidence: tuple[Evidence, ...],
             notes: dict[tuple, list[str]]) -> Finding:
    loc: dict[str, Any] = {}
    if described:
        first = described[0][1]
        loc = {k: first[k] for k in _LOC_FIELDS if k in first}
    extra = dict(hit.extra)
    for k, v in hit.location.items():
        if k in _LOC_FIELDS:
            loc[k] = v
        else:
            extra.setdefault(k, v)  # a place the Location has no field for (e.g. peer): keep it visible
    region_id = loc.get("region") if isinstance(loc.get("region"), int) else None
    if region_id is not None:
        loc["region"] = trace.manifest.regions[region_id].name
    confidence = _value(hit.confidence)
    # What the finding rests on that the trace, not the manifest, gave (rules.infer).
    inferred = []
    if rule.infers_from:
        about = (region_id, rule.infers_from)
        if about not in notes:
            notes[about] = trace.inference.about(region_id, rule.infers_from)
        inferred = list(notes[about])
    if inferred:
        extra["inferred"] = inferred
        if confidence == "certain":
            confidence = "inferred"
    loc = {k: jsonable(v) for k, v in loc.items()}
    if "source" not in loc and loc.get("site") is not None:
        loc["source"] = trace.manifest.site_text(loc["site"])
    location = Location(**loc)
    severity = config.severity_for(rule) or (hit.severity.value if hit.severity else None) \
        or _value(rule.severity)
    key = normalize_key(hit.key)
    return Finding(id="", code=hit.code, family=_value(rule.family), name=rule.name, severity=severity,
                   confidence=confidence, message=hit.message, location=location,
                   evidence=evidence, fingerprint=fingerprint(hit.code, location),
                   extra={**extra, **_decision_inputs(hit)}, key=key)


def _decision_inputs(hit: "Hit") -> dict[str, Any]:
    """What ``analyzer.causes.link`` decides roots from, kept on the draft under private keys
    (it pops them): the cause pairs, and the gap / blocked / stalled statements of the hit."""
    out: dict[str, Any] = {"_causes": tuple((c, normalize_key(k)) for c, k in hit.caused_by)}
    if hit.gap:
        out["_gap"] = hit.gap
    if hit.blocks:
        out["_blocks"] = tuple((int(r), int(c)) for r, c in hit.blocks)
    if hit.stalls:
        out["_stalls"] = tuple((int(r), None if c is None else int(c)) for r, c in hit.stalls)
    return out


def _value(v: Any) -> str:
    return getattr(v, "value", v)
