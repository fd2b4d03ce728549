"""The word table's type: one entry per word write into a flag-like region (see ``_words``).

Its own module so that both forms that build it (``_words`` lexsort,
``_words_packed``) import it one way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import codes as C

OP_ADD, NULL64 = C.OP_ADD, C.NULL64  # plain globals for numba


def widest(trace) -> int:
    """The most words one write expands to in the table: 16 per event of the view, at least 2^16.

    A write's extent is a value in the trace (a 2^31-byte put into a flag region would be 2^29
    entries); bounding it by the trace's size keeps memory linear in events, while any real flag
    array a kernel resets in one write (a few million words) stays whole in a trace that size.
    """
    return max(1 << 16, 16 * int(trace.n))


@dataclass(frozen=True)
class Words:
    """The table, one entry per word write, sorted by ``key_launch``.

    An entry stands for ``unit[region]`` words (a slot written and waited on whole, ``_units``),
    keyed by the first; elsewhere for one. An entry's key and launch are not stored (two arrays of
    the table's length): ``key_launch`` holds both, key * launch_span + (launch - launch_min), so
    ``key_of`` / ``launch_of`` decode them and the entries of one key are ``key_launch`` in
    [key * launch_span, (key + 1) * launch_span).
    """

    row: np.ndarray      # event row of the write (``codes.row_dtype``)
    region: np.ndarray
    phase: np.ndarray    # phase_all of the row
    op: np.ndarray       # OP_SET / OP_ADD
    value: np.ndarray    # int64, NULL64 where the trace does not say
    after: np.ndarray    # simulated word value after this write (NULL64 = unknown)
    last: np.ndarray     # bool: last write of its (key, launch) group
    key_launch: np.ndarray  # composite (key, launch) sort key, ascending
    launch_min: int         # the view's first launch
    launch_span: int        # launches from launch_min, plus one: key_launch // launch_span is the key
    kind: np.ndarray     # kind of the row (int8): rules test it per entry without a gather from the trace
    unit: np.ndarray     # per region id: the words one entry stands for, the first its key (``_units``)

    def words_from(self, first_offsets, region: int) -> np.ndarray:
        """The offsets of the words that entries of ``region`` whose first words are ``first_offsets``
        stand for, in order (each entry ``unit[region]`` of them)."""
        first = np.asarray(first_offsets, np.int64)
        unit = int(self.unit[region])
        return first if unit == 1 else (first[:, None] + np.arange(unit)).reshape(-1)

    def key_launch_of(self, key, launch):
        """The composite sort key of (key, launch) (arrays alike)."""
        return np.asarray(key, np.int64) * self.launch_span + (np.asarray(launch, np.int64) - self.launch_min)

    def key_of(self, i):
        """Element key of entry (or entries) ``i``."""
        return self.key_launch[i] // self.launch_span

    def launch_of(self, i):
        return self.key_launch[i] % self.launch_span + self.launch_min

    def entries_of(self, key, launch):
        """(lo, hi): the entries of each (key, launch) are lo .. hi - 1 (scalars or arrays alike).
        Many are searched in sorted order: the table is far larger than the cache, and sorted
        queries find the same bounds at a fraction of the misses."""
        key_launch = self.key_launch_of(key, launch)
        if key_launch.ndim == 0 or len(key_launch) < 2:
            return (np.searchsorted(self.key_launch, key_launch, "left"),
                    np.searchsorted(self.key_launch, key_launch, "right"))
        order = np.argsort(key_launch, kind="stable")
        lo, hi = np.empty(len(key_launch), np.int64), np.empty(len(key_launch), np.int64)
        lo[order] = np.searchsorted(self.key_launch, key_launch[order], "left")
        hi[order] = np.searchsorted(self.key_launch, key_launch[order], "right")
        return lo, hi

    def key_bounds(self, key):
        """(lo, hi): the entries of ``key`` (a scalar or an array of keys) are lo .. hi - 1."""
        k = np.asarray(key, np.int64) * self.launch_span
        return (np.searchsorted(self.key_launch, k, "left"),
                np.searchsorted(self.key_launch, k + self.launch_span, "left"))


class Entries(NamedTuple):
    """The word table's columns the scans read (``Words``), as numba takes them."""
    key_launch: np.ndarray    # (key, launch) per entry, ascending
    launch_span: np.int64     # key_launch // launch_span: the entry's key
    row: np.ndarray
    phase: np.ndarray
    kind: np.ndarray
    op: np.ndarray
    value: np.ndarray
    after: np.ndarray
    last: np.ndarray
    region: np.ndarray

    @classmethod
    def of(cls, w) -> Entries:
        return cls(w.key_launch, np.int64(w.launch_span), w.row, w.phase, w.kind, w.op, w.value, w.after, w.last,
                   w.region)
