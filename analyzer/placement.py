"""Placement: a rule's output to drafts, each hit located from its first row's columns.

A hit names its evidence as (role, row) pairs and is located at its first row
unless it says otherwise (``location``). ``owned`` keeps what a window is to
report (its primary event in the window's main blocks); ``drafts_of`` places
it: a ``Draft`` (``analyzer.draft``) per hit, a ``BatchDrafts``
(``analyzer.draft_table``) per batch of hits (``rules.hit_columns``), with
one gather per column for all of them. Their evidence rows are described only
for the findings a report lists (``analyzer.evidence.resolve``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ingest.contract import COLUMN, Kind, json_name, kind_columns

from .config import Config
from .draft import LOCATION_FIELDS, Draft
from .finding import jsonable

if TYPE_CHECKING:  # pragma: no cover
    from rules.base import Hit, Rule
    from rules.trace import TraceView

    from .draft_table import BatchDrafts


def owned(window, found: Sequence, trace: "TraceView") -> list:
    """What of a rule's output is this window's to report: the hits (and members of each batch of
    hits, ``rules.hit_columns.HitColumns``) whose primary event (else their launch) lies in its main
    blocks; a batch stays one, as (batch, the members owned)."""
    from rules.hit_columns import HitColumns

    launches = trace.col("launch")
    out: list = []
    plain = [h for h in found if not isinstance(h, HitColumns)]
    firsts = [h.first_row for h in plain]
    first = [r for r in firsts if r is not None]
    launch = iter(launches[np.asarray(first, np.int64)].tolist()) if first else iter(())
    at = iter(zip(plain, firsts))
    for h in found:
        if isinstance(h, HitColumns):
            members = _owned_members(window, h, launches)
            if len(members):
                out.append((h, members))
            continue
        h, row = next(at)
        where = next(launch) if row is not None else h.location.get("launch")
        if window.owns(None if where is None else int(where)):
            out.append(h)
    return out


def _owned_members(window, batch, launches: np.ndarray) -> np.ndarray:
    """The members of ``batch`` the window owns, by their first row's launch (a batch's members
    name no launch of their own: a batch places each member at its first row)."""
    rows = batch.first_row_array()
    owned = window.owns_each(launches[np.maximum(rows, 0)].astype(np.int64), rows >= 0)
    return np.flatnonzero(owned).astype(np.int64)


def drafts_of(found: Sequence, rules: dict[str, type["Rule"]], rule: type["Rule"], config: Config,
              trace: "TraceView", window: Any = None) -> list:
    """The drafts of what ``owned`` kept: a ``Draft`` per hit (its rule by code, else ``rule``), a
    ``BatchDrafts`` per batch of hits, each located from its first row's columns (one gather per
    column for all of them), in the ``window`` whose view its rows index. Only the findings a
    report lists are built from their drafts and have their rows described (``resolve``): a
    million hits of one class cost their count, not a million descriptions."""
    per_rule: dict[str, tuple] = {}  # (rule, family, severity) per code: the config's selectors matched once

    def fixed_of(code: str) -> tuple:
        fixed = per_rule.get(code)
        if fixed is None:
            rule_ = rules.get(code, rule)
            fixed = per_rule[code] = (rule_, _value(rule_.family),
                                      config.severity_for(rule_) or None, _value(rule_.severity))
        return fixed

    notes: dict[tuple, tuple[str, ...]] = {}  # inference notes by (region, properties): few distinct
    hits = [h for h in found if type(h) is not tuple]
    out: list = []
    placed = iter(_hit_drafts(hits, fixed_of, trace, notes, window))
    for h in found:
        if type(h) is tuple:
            batch, members = h
            placed_batch = _batch_drafts(batch, members, fixed_of(batch.code), trace, notes, window)
            if isinstance(placed_batch, list):  # its members placed one by one
                out.extend(placed_batch)
            else:
                out.append(placed_batch)
        else:
            out.append(next(placed))
    return out


def _hit_drafts(hits: Sequence["Hit"], fixed_of, trace: "TraceView", notes: dict, window: Any) -> list[Draft]:
    """One draft per hit, each placed from its first row's columns (gathered once for all)."""
    firsts = [h.first_row for h in hits]
    places = iter(_first_places(trace, np.asarray([r for r in firsts if r is not None], np.int64)))
    sources: dict[int, str | None] = {}  # kernel file:line per site
    out = []
    for h, row in zip(hits, firsts):
        fixed = fixed_of(h.code)
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


def _batch_drafts(batch, members: np.ndarray, fixed: tuple, trace: "TraceView", notes: dict,
                  window: Any) -> "BatchDrafts | list[Draft]":
    """The drafts of a batch's owned ``members``, placed at their first rows as columns; one by one
    where its members name a place of their own (``location``), as a ``Hit`` may."""
    from .draft_table import NULL, BatchDrafts

    if any(batch.categories("location", members)[1]):
        return _hit_drafts([batch.hit(int(m)) for m in members.tolist()], lambda code: fixed, trace, notes, window)
    rule, family, configured, default = fixed
    rows = batch.first_row_array()[members]
    columns = _place_columns(trace, np.maximum(rows, 0))
    none = rows < 0  # a member with no row: placed nowhere
    for col in columns.values():
        col[none] = NULL
    region = columns.pop("region")
    seq = columns.pop("seq")
    seq[none] = -1
    sites = np.unique(columns["site"]).tolist()
    sources = {s: trace.manifest.site_text(s) for s in sites if s != NULL}
    lost_ids, lost_on = batch.categories("rests_on", members)
    partial = np.array([bool(v) and trace.lost_at(v) for v in lost_on], bool)[lost_ids]
    inferred = _inferred(rule, None, trace, notes)  # placed at rows: the notes of no one region
    place = np.stack([columns[name] for name in ("rank", "core", "launch", "offset", "site")], axis=1)
    return BatchDrafts(batch, members, rule, family, configured, default, place,
                       np.where(region == NULL, -1, region), tuple(r.name for r in trace.declared.regions),
                       sources, seq, partial, inferred, window)


_PLACE_COLUMNS = ("launch", "region", "offset", "site")  # a row's location fields, less rank and core


def _place_columns(trace: "TraceView", rows: np.ndarray) -> dict[str, np.ndarray]:
    """Per row, its rank, core, launch, region (the id), offset, site and seq, as one int64 column
    each, NULL (``analyzer.draft_table``) where the row's kind does not carry the field under its
    own name or it is null, as ``TraceView.describe`` names them: one gather per column."""
    from .draft_table import NULL

    kinds = trace.col("kind")[rows].astype(np.int64)
    out = {name: trace.col(name)[rows].astype(np.int64) for name in ("rank", "core")}
    for name in _PLACE_COLUMNS:
        spec = COLUMN[name]
        v = trace.col(name)[rows].astype(np.int64)
        keep = v != spec.numpy_null
        for k in np.unique(kinds).tolist():  # a kind without the field, or under another name, has none
            if name not in ("launch",) + kind_columns(Kind(k)) or json_name(Kind(k), name) != name:
                keep &= kinds != k
        out[name] = np.where(keep, v, NULL)
    out["seq"] = trace.col("seq")[rows].astype(np.int64)
    return out


def _first_places(trace: "TraceView", rows: np.ndarray) -> list[tuple]:
    """Per row, its (rank, core, launch, region, offset, site, seq) as ``TraceView.describe`` names
    them (the region by name), None where ``_place_columns`` has none."""
    if not len(rows):
        return []
    from .draft_table import NULL

    columns = _place_columns(trace, rows)
    names = trace.declared.regions
    values = {name: [None if x == NULL else x for x in columns[name].tolist()] for name in _PLACE_COLUMNS}
    values["region"] = [None if x is None else names[x].name for x in values["region"]]
    rank, core, seq = (columns[c].tolist() for c in ("rank", "core", "seq"))
    return list(zip(rank, core, *(values[name] for name in _PLACE_COLUMNS), seq))


def _as_location(place: tuple) -> tuple[dict[str, Any], int]:
    """A ``_first_places`` tuple as a location dict (its present fields) and the seq."""
    rank, core, *fields, seq = place
    loc = {"rank": rank, "core": core}
    for name, value in zip(_PLACE_COLUMNS, fields):
        if value is not None:
            loc[name] = value
    return loc, seq


def _draft(hit: "Hit", fixed: tuple, trace: "TraceView", loc: dict[str, Any],
           notes: dict[tuple, tuple[str, ...]], seq: int, window: Any) -> Draft:
    """The draft of a hit that names its place itself (or names no row): its location merged over
    its first row's."""
    if hit.location:  # the hit names its place (or part of it) itself
        loc = {**loc, **{k: jsonable(v) for k, v in hit.location.items() if k in LOCATION_FIELDS}}
        for name in ("rank", "core", "launch", "offset", "site"):  # the report orders and groups by them
            if not isinstance(loc.get(name), (int, type(None))):
                raise ValueError(f"{hit.code} placed a finding at {name} {loc[name]!r}, which is not an integer")
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
    inferred = _inferred(rule, region_id, trace, notes)
    severity = configured or (hit.severity.value if hit.severity else None) or default_severity
    partial = bool(hit.rests_on) and trace.lost_at(hit.rests_on)
    return Draft(hit, rule, family, severity, place, inferred, seq, window, partial)


def _inferred(rule: type["Rule"], region_id: int | None, trace: "TraceView",
              notes: dict[tuple, tuple[str, ...]]) -> tuple[str, ...]:
    """What a finding of ``rule`` in region ``region_id`` rests on that the trace, not the manifest,
    gave (``rules.analysis.inference``): worked out once per (region, properties) in ``notes``."""
    if not rule.infers_from:
        return ()
    about = (region_id, rule.infers_from)
    if about not in notes:
        notes[about] = tuple(trace.inference.about(region_id, rule.infers_from))
    return notes[about]


def _value(v: Any) -> str:
    return getattr(v, "value", v)
