"""Many hits of one rule as columns, each member a ``Hit`` only when something asks for one.

A rule that can find a defect hundreds of thousands of times (a count mismatch per
expert, sender and receiver of every launch after a counter was left unreset) yields
one ``HitColumns`` instead of a ``Hit`` per member: its typed fields as arrays, a
member's message rendered from those fields by the rule, and only when a report
prints it. The engine places and links a batch as columns (``analyzer.draft_table``);
where one member is asked for (a rule that cites it, ``rules.base.hits_of``; a
finding a report lists), it is a ``ColumnHit``, which reads like a ``Hit``
(``rules.base``) attribute for attribute, from the columns: what only a listed
finding needs (message, evidence rows, extra) is built for that finding alone.

A column named in ``tables`` holds indices into its table: the few distinct
values a field takes (a cause list shared by every mismatch of one launch and
pair of ranks, a gap note) are held once, not once per member.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Callable, Mapping, NamedTuple

import numpy as np

from .base import Hit

# What a ``Hit`` says besides its code, message, rows, key and extra: a batch may hold each as a
# column (one value per member), else as a constant for all of them, else the Hit's default.
# A default dict (location) is shared by every member, so read-only.
_DEFAULTS = {f.name: (MappingProxyType(f.default_factory()) if callable(f.default_factory)  # type: ignore[misc]
                      else f.default)
             for f in fields(Hit) if f.name not in ("code", "message", "rows", "key", "extra")}


_NO_NULL = object()  # a column with no null value: equal to none of its values


@dataclass(frozen=True, eq=False)
class HitColumns:
    """The hits of one rule as columns (see the module docstring).

    ``fields`` is a NamedTuple of what a message is rendered from; ``columns`` holds one
    array per field of it and per hit attribute (``confidence``, ``caused_by``, ``gap``,
    ``defect``, ...) that differs between members, all of one length; ``tables`` names the
    columns that hold indices into a table of values (a null index reads as None there
    too); ``nulls`` the value of a column that reads as None (the trace's null, an
    absent row); ``constant`` the fields and hit attributes every member shares. ``rows`` is
    (members, roles): each member's evidence row per role of ``roles``, -1 where it lacks
    that role; ``key`` is (members, width). ``render(fields)`` words a member's message,
    ``extra(fields)`` its extra (the report's machine-readable facts): module-level
    functions, so that a batch pickles.
    """

    code: str
    fields: type[NamedTuple]
    columns: Mapping[str, np.ndarray]
    roles: tuple[str, ...]
    rows: np.ndarray
    key: np.ndarray
    render: Callable[[Any], str]
    extra: Callable[[Any], Mapping[str, Any]] | None = None
    tables: Mapping[str, tuple] = field(default_factory=dict)
    constant: Mapping[str, Any] = field(default_factory=dict)
    nulls: Mapping[str, int] = field(default_factory=dict)  # a column's value that reads as None

    def __post_init__(self) -> None:
        n = len(self.key)
        unknown = set(self.columns) - set(self.fields._fields) - set(_DEFAULTS)
        if unknown:
            raise ValueError(f"{self.code}: columns {sorted(unknown)} are neither fields nor hit attributes")
        short = [name for name, col in self.columns.items() if len(col) != n]
        if short or len(self.rows) != n or self.rows.shape[1:] != (len(self.roles),):
            raise ValueError(f"{self.code}: columns, rows and key of different lengths ({short or 'rows'})")

    def __len__(self) -> int:
        return len(self.key)

    def hits(self) -> list["ColumnHit"]:
        values = [self.first_rows()] + [self.values(name) for name in _DEFAULTS]
        return [ColumnHit(self, i, at) for i, at in enumerate(zip(*values))]

    def hit(self, i: int) -> "ColumnHit":
        """Member ``i``."""
        rows = self.rows[i]
        present = rows[rows >= 0]
        return ColumnHit(self, i, (int(present[0]) if len(present) else None,
                                   *(self.value(name, i) for name in _DEFAULTS)))

    def values(self, name: str) -> list:
        """Every member's ``name`` (through its table), built once per batch when first asked."""
        cache = self.__dict__.setdefault("_values", {})
        found = cache.get(name)
        if found is None:
            col = self.columns.get(name)
            if col is None:
                found = [self.constant.get(name, _DEFAULTS.get(name))] * len(self)
            else:
                found = col.tolist()
                null, table = self.nulls.get(name), self.tables.get(name)
                if table is not None:
                    found = [None if v == null else table[v] for v in found]
                elif null is not None:
                    found = [None if v == null else v for v in found]
            cache[name] = found
        return found

    def value(self, name: str, i: int) -> Any:
        """Member ``i``'s ``name``: its column's value (through its table), else the constant or
        the Hit's default. One member's alone: a report lists a few of a million."""
        cached = self.__dict__.get("_values", {}).get(name)
        if cached is not None:
            return cached[i]
        col = self.columns.get(name)
        if col is None:
            return self.constant.get(name, _DEFAULTS.get(name))
        v = col[i]
        v = v.item() if isinstance(v, np.generic) else v
        if v == self.nulls.get(name, _NO_NULL):
            return None
        table = self.tables.get(name)
        return v if table is None else table[v]

    def member(self, i: int):
        """Member ``i``'s typed fields."""
        return self.fields(*(self.value(name, i) for name in self.fields._fields))

    def categories(self, name: str, members: np.ndarray) -> tuple[np.ndarray, tuple]:
        """The ``members``' values of ``name`` as ids into a table of values (None among them where
        a member's reads as None): the column's own table where it has one, else its distinct
        values, else the one constant. For the engine's columns of drafts: no value per member."""
        col = self.columns.get(name)
        if col is None:
            return np.zeros(len(members), np.int64), (self.constant.get(name, _DEFAULTS.get(name)),)
        null, table = self.nulls.get(name), self.tables.get(name)
        values = col[members]
        if table is not None:
            ids = values.astype(np.int64)
            return (ids if null is None else np.where(ids == null, len(table), ids)), (*table, None)
        distinct, ids = np.unique(values, return_inverse=True)
        return ids.reshape(-1).astype(np.int64), tuple(None if v == null else v for v in distinct.tolist())

    def first_row_array(self) -> np.ndarray:
        """Each member's first evidence row, -1 where it has none (``first_rows`` as one array), built
        once per batch: the engine asks for it where it keeps a window's members and where it places them."""
        cache = self.__dict__.setdefault("_values", {})
        key = "(first row array)"  # not an identifier: never a field's or an attribute's name in the same cache
        if key not in cache:
            # argmax finds the first role present; a member with none finds role 0, which holds -1 then
            cache[key] = (self.rows[np.arange(len(self)), np.argmax(self.rows >= 0, axis=1)].astype(np.int64)
                          if self.rows.shape[1] else np.full(len(self), -1, np.int64))
        return cache[key]

    def first_rows(self) -> list[int | None]:
        """Each member's first evidence row (None: it has none)."""
        cache = self.__dict__.setdefault("_values", {})
        key = "(first rows)"
        if key not in cache:
            cache[key] = [None if r < 0 else r for r in self.first_row_array().tolist()]
        return cache[key]

    def __getstate__(self):  # the member lists are rebuilt where asked, not pickled
        return {k: v for k, v in self.__dict__.items() if k != "_values"}

    def __setstate__(self, state):
        self.__dict__.update(state)


class ColumnHit:
    """One member of a ``HitColumns``, read like the ``Hit`` it stands for. The attributes the engine
    reads of every hit (its causes, defect, gap, ...) are slots, each a reference to a value the
    batch holds once; what only a listed finding needs (message, rows, extra) is built when asked."""

    __slots__ = ("batch", "i", "code", "first_row", *_DEFAULTS)

    def __init__(self, batch: HitColumns, i: int, values: tuple):
        """``values``: its first row, then its ``_DEFAULTS`` attributes in that order (unpacked in one
        statement, spelled out: a setattr loop costs 4 us a hit)."""
        self.batch, self.i, self.code = batch, i, batch.code
        (self.first_row, self.confidence, self.severity, self.caused_by, self.location, self.gap, self.blocks,
         self.stalls, self.defect, self.rests_on) = values

    def __reduce__(self):  # a window's drafts cross to the engine's process with their batch, pickled once
        return HitColumns.hit, (self.batch, self.i)

    @property
    def message(self) -> str:
        return self.batch.render(self.batch.member(self.i))

    @property
    def rows(self) -> tuple[tuple[str, int], ...]:
        return tuple((role, r) for role, r in zip(self.batch.roles, self.batch.rows[self.i].tolist()) if r >= 0)

    @property
    def key(self) -> tuple:
        return tuple(self.batch.key[self.i].tolist())

    @property
    def extra(self) -> Mapping[str, Any]:
        extra = self.batch.extra
        return {} if extra is None else extra(self.batch.member(self.i))

    def as_hit(self) -> Hit:
        """The ``Hit`` this member stands for."""
        return Hit(code=self.code, message=self.message, rows=self.rows, key=self.key, extra=self.extra,
                   **{name: getattr(self, name) for name in _DEFAULTS})


def as_hit(hit: Hit | ColumnHit) -> Hit:
    """``hit`` as a ``Hit`` (a column member built whole): for what needs the dataclass itself."""
    return hit.as_hit() if isinstance(hit, ColumnHit) else hit


def coded(values) -> tuple[np.ndarray, tuple]:
    """``values`` (any hashable Python values, None among them) as a column of indices into a table
    of their distinct values, in order of first appearance: for ``columns`` and ``tables``."""
    index: dict = {}
    ids = np.fromiter((index.setdefault(v, len(index)) for v in values), np.int64)
    return ids, tuple(index)


def coded_columns(values) -> tuple[dict[str, np.ndarray], dict[str, tuple]]:
    """Each ``(name, Python values)`` of ``values`` as ``coded`` codes it: the ``columns`` and ``tables``
    of a batch whose members a rule worked out one by one (a few thousand at most: one per site)."""
    columns: dict[str, np.ndarray] = {}
    tables: dict[str, tuple] = {}
    for name, column in values:
        columns[name], tables[name] = coded(column)
    return columns, tables
