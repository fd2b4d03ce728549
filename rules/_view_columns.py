"""The columns of a view of the trace: read once, as numpy arrays, nulls as each column's sentinel.

``TraceView`` holds its columns through this: one read of the parquet files
for every column some kind present carries (``prefetch``), a column on first
use otherwise, and none for a column null on every row of the view (an
optional field nobody recorded, a field of a kind the window lacks): ``col``
makes such a one's nulls only when asked for in full, and ``carried`` gives a
kernel that reads it only at rows of a kind that carries it a one-element
stand-in instead.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING, Iterable

import numpy as np

from ingest.contract import COLUMN, COLUMNS, COMMON_OPTIONAL, ENVELOPE, FIELDS, Kind

if TYPE_CHECKING:  # pragma: no cover
    from ingest.dataset import Dataset


class ViewColumns:
    dataset: Dataset
    blocks: tuple[int, int] | None  # the window (k0, k1) of dataset.blocks held, or None: all
    _cols: dict[str, np.ndarray]
    _null: set[str]

    def load(self, names: Iterable[str]) -> None:
        """Load several columns in one read of the parquet files.

        A numeric column null on every row of the view is not kept (``carried``): one no kind
        present carries is not even read, and one read that way (an optional field nobody
        recorded, like a put's local_offset) is dropped after the read.
        """
        missing = [n for n in dict.fromkeys(names) if n not in self._cols and n not in self._null]
        if "kind" in self._cols:
            self._null.update(n for n in missing if n not in self._carried and _numeric(n))
            missing = [n for n in missing if n not in self._null]
        if not missing:
            return
        nulls: dict[str, int] = {}
        read = self.dataset.arrays(missing, blocks=self.blocks, nulls=nulls)
        self._cols.update(read)
        rows = len(read[missing[0]])
        for n in missing:
            if rows and nulls.get(n, 0) == rows and n not in ENVELOPE and _numeric(n):
                del self._cols[n]
                self._null.add(n)

    @cached_property
    def _carried(self) -> frozenset[str]:
        """The columns some kind present in the view carries (its fields, required or optional)."""
        kinds = np.flatnonzero(np.bincount(self.col("kind").astype(np.int64) + 128, minlength=256)) - 128
        names = {*ENVELOPE, *COMMON_OPTIONAL}
        for k in kinds.tolist():
            if k in _KINDS:
                req, opt = FIELDS[Kind(k)]
                names.update((*req, *opt))
        return frozenset(names)

    def prefetch(self) -> None:
        """Load, in one read, every numeric column some kind present in the trace carries and a rule reads.

        Rules ask for columns one by one; each ask is a pass over every file
        (about 0.1 s at 10 M events, forty of them per diagnose), where one
        pass for all costs little more than the largest column.  A column no
        present kind carries is all null and never read (``load``); the columns
        only evidence names (``EVIDENCE_ONLY``) load on demand.
        """
        self.load(n for n in COLUMN if n in self._carried and _numeric(n) and n not in EVIDENCE_ONLY)

    def col(self, name: str) -> np.ndarray:
        if name not in self._cols:
            self.load([name])
            if name in self._null:  # asked for in full: its nulls, made here, no read
                self._cols[name] = np.full(self.n, COLUMN[name].numpy_null, COLUMN[name].type.to_pandas_dtype())
        return self._cols[name]

    def carried(self, name: str) -> np.ndarray:
        """Column ``name`` as ``col`` gives it, or, where no row of the view carries it, a one-element
        stand-in holding its null: for a kernel that reads the column only at rows of a kind that
        carries it (a put_signal's sig_region), so that a window without them holds no column of
        nulls (10 B/event for the signal word's region and offset)."""
        self.load([name])
        if name in self._cols:
            return self._cols[name]
        return np.full(1, COLUMN[name].numpy_null, COLUMN[name].type.to_pandas_dtype())

    def all_null(self, name: str) -> bool:
        """Is column ``name`` null on every row of the view? (Known without holding it.)"""
        self.load([name])
        return name in self._null

    def __getitem__(self, name: str) -> np.ndarray:
        return self.col(name)

    @property
    def loaded(self) -> list[str]:
        return list(self._cols)

    @classmethod
    def at_rows(cls, dataset, rows: np.ndarray, blocks: tuple[int, int] | None = None) -> "ViewColumns":
        """A view of every column at ``rows`` alone (ascending, distinct rows of the window
        ``blocks``; row i of this view is ``rows[i]`` there), read from the row groups holding
        them: where a report describes a few events of a window it no longer holds."""
        out = cls(dataset, blocks=blocks)
        out._cols = dataset.take([c.name for c in COLUMNS], rows, blocks=blocks)
        return out

    def columns_only(self) -> "ViewColumns":
        """A view of the same window holding the columns this one loaded and nothing derived from
        them: what describing evidence needs, without the stages' results."""
        out = type(self)(self.dataset, blocks=self.blocks)
        out._cols, out._null = dict(self._cols), set(self._null)
        return out

    def release(self, *names: str) -> None:
        for n in names:
            self._cols.pop(n, None)

    @staticmethod
    def null(name: str) -> int:
        return COLUMN[name].numpy_null

    @cached_property
    def n(self) -> int:
        return len(self.col("kind"))


_KINDS = {int(k) for k in Kind}


def _numeric(name: str) -> bool:
    return COLUMN[name].type != COLUMN["name"].type

# Columns no rule or shared analysis reads in bulk (never order by ts; the kernel's own epoch is
# evidence, not an order): only a described row names them (its evidence, a message), and the
# timeline. A window whose rules describe nothing never reads them: 16 of the ~130 bytes an event
# costs there, and ts, a delta-coded column, is among the slowest to decode.
EVIDENCE_ONLY = ("ts", "epoch")
