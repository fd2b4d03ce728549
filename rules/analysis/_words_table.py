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
    """The table, one entry per word write, sorted by ``ck``.

    An entry stands for ``unit[region]`` words (a slot written and waited on whole, ``_units``), keyed
    by the first; elsewhere for one. An entry's key and launch are not stored (two arrays of the table's length):
    ``ck`` holds both, key * lspan + (launch - lmin), so ``key_of`` / ``launch_of``
    decode them and the entries of one key are ``ck`` in [key * lspan, (key + 1) * lspan).
    """

    row: np.ndarray      # event row of the write (``codes.row_dtype``)
    region: np.ndarray
    phase: np.ndarray    # phase_all of the row
    op: np.ndarray       # OP_SET / OP_ADD
    value: np.ndarray    # int64, NULL64 where the trace does not say
    after: np.ndarray    # simulated word value after this write (NULL64 = unknown)
    last: np.ndarray     # bool: last write of its (key, launch) group
    ck: np.ndarray       # composite (key, launch) sort key, ascending
    lmin: int
    lspan: int
    kind: np.ndarray     # kind of the row (int8): rules test it per entry without a gather from the trace
    unit: np.ndarray     # per region id: the words one entry stands for, the first its key (``_units``)

    def words_of(self, i):
        """The words entry (or entries) ``i`` stand for."""
        return self.unit[self.region[i]]

    def ckey(self, key, launch):
        return np.asarray(key, np.int64) * self.lspan + (np.asarray(launch, np.int64) - self.lmin)

    def key_of(self, i):
        """Element key of entry (or entries) ``i``."""
        return self.ck[i] // self.lspan

    def launch_of(self, i):
        return self.ck[i] % self.lspan + self.lmin

    def key_bounds(self, key):
        """(lo, hi): the entries of ``key`` (a scalar or an array of keys) are lo .. hi - 1."""
        k = np.asarray(key, np.int64) * self.lspan
        return np.searchsorted(self.ck, k, "left"), np.searchsorted(self.ck, k + self.lspan, "left")


class Entries(NamedTuple):
    """The word table's columns the scans read (``Words``), as numba takes them."""
    ck: np.ndarray            # (key, launch) per entry, ascending
    launch_span: np.int64     # ck // launch_span: the entry's key
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
        return cls(w.ck, np.int64(w.lspan), w.row, w.phase, w.kind, w.op, w.value, w.after, w.last, w.region)
