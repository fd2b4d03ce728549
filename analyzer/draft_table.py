"""Every draft of a report as columns: what the root decision, the report order and the classes read.

A post-mortem can hold a million drafts of a few defects. ``analyzer.causes.link``,
the report order (``analyzer._cause_order``) and the classes (``analyzer.classes``)
read the integer columns of a ``Drafts``: one sort, one group-by and a few linear
passes, no object per finding. A ``Draft`` (``analyzer.draft``) is built only where
something asks for one: a finding a report lists, a tie of the order, a cause's key.

Drafts come in pieces, in the order the rules gave their hits: a run of ``Draft``s (a
rule's hits placed one by one) or a ``BatchDrafts`` (the members of one
``rules.hit_columns.HitColumns`` a window owns, placed as columns). ``Drafts.of``
joins them; the few distinct texts (codes, levels, regions, sources, defects, cited
causes) are held once, in tables the columns index.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from .draft import Draft

if TYPE_CHECKING:  # pragma: no cover
    from rules.hit_columns import HitColumns

NULL = np.iinfo(np.int64).min  # an absent place field in an integer column
_INTS = (0, 1, 2, 4, 5)  # where Draft.place holds the integer fields: rank, core, launch, offset, site


@dataclass(frozen=True, eq=False)
class BatchDrafts:
    """The drafts of the ``members`` of one batch of hits a window owns, each placed at its first row.

    ``place`` is (members, 5): rank, core, launch, offset, site, NULL where absent; ``region``
    each one's region as an index into ``region_names`` (-1: none); ``sources`` each site's
    "file:line"; ``severity`` the configured level (None: each member's own, else ``default``,
    the rule's); ``partial`` whether the trace lost events where a member rests; ``inferred``
    the inference notes its rule rests on (one set: a batch is placed at rows, not regions).
    """

    batch: "HitColumns"
    members: np.ndarray
    rule: type
    family: str
    severity: str | None
    default: str
    place: np.ndarray
    region: np.ndarray
    region_names: tuple[str, ...]
    sources: Mapping[int, str | None]
    seq: np.ndarray
    partial: np.ndarray
    inferred: tuple[str, ...]
    window: Any

    def __len__(self) -> int:
        return len(self.members)

    def levels(self) -> tuple[np.ndarray, tuple[str, ...]]:
        """Each member's level before a gap lowers it: ids into a table of levels."""
        if self.severity:
            return np.zeros(len(self), np.int64), (self.severity,)
        ids, table = self.batch.categories("severity", self.members)
        return ids, tuple(getattr(v, "value", v) or self.default for v in table)

    def draft(self, k: int) -> Draft:
        """Member ``k``'s ``Draft``."""
        hit = self.batch.hit(int(self.members[k]))
        rank, core, launch, offset, site = (None if v == NULL else v for v in self.place[k].tolist())
        region = int(self.region[k])
        place = (rank, core, launch, None if region < 0 else self.region_names[region], offset, site,
                 None if site is None else self.sources.get(site))
        severity = self.severity or (hit.severity.value if hit.severity else None) or self.default
        return Draft(hit, self.rule, self.family, severity, place, self.inferred, int(self.seq[k]), self.window,
                     bool(self.partial[k]))


Piece = Draft | BatchDrafts  # what a window hands the engine: its drafts, in order


@dataclass(frozen=True, eq=False)
class Drafts:
    """A report's drafts as columns, ``len(self)`` long (see the module docstring).

    Each draft's ``code``, ``level`` (before a gap lowers it), ``region``, ``source``,
    ``defect`` and ``cited`` (its ``caused_by``) are indices into the tables of those names
    (-1: none); ``gap`` whether its conclusion may lie in a gap of the trace; ``place``
    (drafts, 5) its rank, core, launch, offset and site (NULL: absent); ``seq`` its first
    row's; ``waits`` the (blocks, stalls) of the drafts that name either. ``origin`` and
    ``member`` find a draft's piece, for ``item``.
    """

    pieces: tuple
    origin: np.ndarray
    member: np.ndarray
    codes: tuple[str, ...]
    code: np.ndarray
    levels: tuple[str, ...]
    level: np.ndarray
    gap: np.ndarray
    place: np.ndarray
    regions: tuple[str, ...]
    region: np.ndarray
    sources: tuple[str, ...]
    source: np.ndarray
    seq: np.ndarray
    defects: tuple
    defect: np.ndarray
    citations: tuple
    cited: np.ndarray
    waits: Mapping[int, tuple[tuple, tuple]]

    def __len__(self) -> int:
        return len(self.code)

    def item(self, i: int) -> Draft:
        """Draft ``i``."""
        piece = self.pieces[self.origin[i]]
        k = int(self.member[i])
        return piece[k] if type(piece) is tuple else piece.draft(k)

    def key(self, i: int) -> Any:
        """Draft ``i``'s hit's key (a batch member's straight from its batch's array)."""
        piece = self.pieces[self.origin[i]]
        k = int(self.member[i])
        if type(piece) is tuple:
            return piece[k].hit.key
        return tuple(piece.batch.key[piece.members[k]].tolist())

    def take(self, order: np.ndarray) -> "Drafts":
        """The drafts in ``order`` (draft ``order[n]`` is number n)."""
        number = np.empty(len(self), np.int64)
        number[order] = np.arange(len(self))
        columns = {name: getattr(self, name)[order] for name in _COLUMNS}
        return Drafts(pieces=self.pieces, codes=self.codes, levels=self.levels, regions=self.regions,
                      sources=self.sources, defects=self.defects, citations=self.citations,
                      waits={int(number[i]): w for i, w in self.waits.items()}, **columns)

    @classmethod
    def of(cls, pieces: Sequence[Draft | BatchDrafts]) -> "Drafts":
        """The drafts of ``pieces`` (each a ``Draft`` or a ``BatchDrafts``), in that order."""
        grouped: list = []
        for p in pieces:
            if isinstance(p, Draft):
                if grouped and type(grouped[-1]) is list:
                    grouped[-1].append(p)
                else:
                    grouped.append([p])
            else:
                grouped.append(p)
        runs = tuple(tuple(p) if type(p) is list else p for p in grouped)
        tables = _Tables()
        parts: list[dict[str, np.ndarray]] = []
        waits: dict[int, tuple] = {}
        at = 0
        for p, piece in enumerate(runs):
            part = (_objects(piece, tables, waits, at) if type(piece) is tuple else _batch(piece, tables, waits, at))
            part["origin"] = np.full(len(piece), p, np.int32)
            part["member"] = np.arange(len(piece), dtype=np.int64)
            parts.append(part)
            at += len(piece)
        columns = {name: (np.concatenate([part[name] for part in parts]) if parts else _EMPTY[name]())
                   for name in _COLUMNS}
        return cls(pieces=runs, waits=waits, **tables.frozen(), **columns)


_COLUMNS = ("origin", "member", "code", "level", "gap", "place", "region", "source", "seq", "defect", "cited")
_EMPTY = {name: (lambda: np.zeros((0, 5), np.int64)) if name == "place" else
          (lambda: np.zeros(0, bool)) if name == "gap" else (lambda: np.zeros(0, np.int64)) for name in _COLUMNS}


class _Tables:
    """The distinct values of the drafts' text fields, each interned once: index by value."""

    NAMES = ("codes", "levels", "regions", "sources", "defects", "citations")

    def __init__(self):
        self.values: dict[str, list] = {name: [] for name in self.NAMES}
        self.index: dict[str, dict] = {name: {} for name in self.NAMES}

    def id(self, table: str, value: Any) -> int:
        """``value``'s index in ``table``, added where new; -1 for None (and a falsy citation)."""
        if value is None or (table == "citations" and not value):
            return -1
        index = self.index[table]
        try:
            found = index.get(value)
        except TypeError:  # a cited key that does not hash: an entry of its own
            found, index = None, None
        if found is None:
            found = len(self.values[table])
            self.values[table].append(value)
            if index is not None:
                index[value] = found
        return found

    def ids(self, table: str, values: Sequence) -> np.ndarray:
        """``id`` of each value, as an array (index -1 of it is -1: an id array may index it)."""
        return np.array([self.id(table, v) for v in values] + [-1], np.int64)

    def frozen(self) -> dict[str, tuple]:
        return {name: tuple(values) for name, values in self.values.items()}


def _int(value: Any, name: str, code: str) -> int:
    if value is None:
        return NULL
    if isinstance(value, (int, np.integer)):
        return int(value)
    raise ValueError(f"{code}: a finding placed at {name} {value!r}, which is not an integer")


def _objects(drafts: tuple[Draft, ...], tables: _Tables, waits: dict, at: int) -> dict[str, np.ndarray]:
    """The columns of a run of ``Draft``s, one value each."""
    n = len(drafts)
    place = np.empty((n, 5), np.int64)
    names = ("rank", "core", "launch", "offset", "site")
    for k, d in enumerate(drafts):
        place[k] = [_int(d.place[j], name, d.hit.code) for j, name in zip(_INTS, names)]
        hit = d.hit
        if hit.blocks or hit.stalls:
            waits[at + k] = (hit.blocks, hit.stalls)
    ident = tables.id
    return {"code": np.fromiter((ident("codes", d.hit.code) for d in drafts), np.int64, n),
            "level": np.fromiter((ident("levels", d.severity) for d in drafts), np.int64, n),
            "gap": np.fromiter((bool(d.hit.gap) for d in drafts), bool, n),
            "place": place,
            "region": np.fromiter((ident("regions", d.place[3]) for d in drafts), np.int64, n),
            "source": np.fromiter((ident("sources", d.place[6]) for d in drafts), np.int64, n),
            "seq": np.fromiter((d.seq for d in drafts), np.int64, n),
            "defect": np.fromiter((ident("defects", d.hit.defect) for d in drafts), np.int64, n),
            "cited": np.fromiter((ident("citations", d.hit.caused_by) for d in drafts), np.int64, n)}


def _batch(piece: BatchDrafts, tables: _Tables, waits: dict, at: int) -> dict[str, np.ndarray]:
    """The columns of a batch's drafts: each table's few values interned, each column one take."""
    n, batch, members = len(piece), piece.batch, piece.members

    def interned(table: str, name: str) -> np.ndarray:
        ids, values = batch.categories(name, members)
        return tables.ids(table, values)[ids]

    level_ids, levels = piece.levels()
    gap_ids, gaps = batch.categories("gap", members)
    sites, site_at = np.unique(piece.place[:, 4], return_inverse=True)
    source_of = tables.ids("sources", [None if s == NULL else piece.sources.get(s) for s in sites.tolist()])
    for name in ("blocks", "stalls"):
        ids, values = batch.categories(name, members)
        named = np.flatnonzero(np.array([bool(v) for v in values], bool)[ids])
        for k in named.tolist():
            hit = batch.hit(int(members[k]))
            waits[at + k] = (hit.blocks, hit.stalls)
    return {"code": np.full(n, tables.id("codes", batch.code), np.int64),
            "level": tables.ids("levels", levels)[level_ids],
            "gap": np.array([bool(v) for v in gaps], bool)[gap_ids],
            "place": piece.place,
            "region": tables.ids("regions", piece.region_names)[piece.region],
            "source": source_of[site_at.reshape(-1)],
            "seq": piece.seq,
            "defect": interned("defects", "defect"),
            "cited": interned("citations", "caused_by")}
