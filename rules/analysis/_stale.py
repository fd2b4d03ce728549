"""Stale waits, read from the word table: waits a leftover value satisfied.

One of the two facts the stale-flag rules report and the wait-for graph follows
(a stuck wait whose earlier wait passed on a leftover cites them), computed here
once per view so the graph never reads a rule's hits; the other, the words left
off reset, is ``_unreset``'s.

``stale_waits``: every completed wait_end that no write of its own launch can
precede (each is later on the waiting core, or after a barrier the waiter had
not reached) while an earlier launch wrote the word: the wait passed on that
older value (MT201's hits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.contract import Outcome

from .._jit import kernel
from . import _phases
from ._cache import cached
from ._words import words
from ._words_table import Entries
from .codes import K_WEND
from .stages import Stage


@kernel
def _stale_scan(lo, hi, table, rank, core, phase_all, waits, out):
    # For each wait_end: if no write of its launch to its word can precede it
    # (every one is later on its own core, or after a barrier it had not
    # reached), the value came from an earlier launch: name the last one.
    # waits: (wait_end rows, their keys); lo, hi: per wait_end, the table entries of its (key, launch).
    erow, ekey = waits
    wck, lspan, wrow, wphase = table.ck, table.launch_span, table.row, table.phase
    for j in range(len(erow)):
        e = erow[j]
        can = False
        for w in range(lo[j], hi[j]):
            r = wrow[w]
            after = (r > e and rank[r] == rank[e] and core[r] == core[e]) or wphase[w] > phase_all[e]
            if not after:
                can = True
                break
        if not can:
            p = lo[j] - 1
            if p >= 0 and wck[p] // lspan == ekey[j]:
                out[j] = p


@dataclass(frozen=True)
class StaleWaits:
    """Completed waits satisfied by an earlier launch's value."""

    ends: np.ndarray  # the wait_end rows, ascending
    source: np.ndarray  # per wait_end: the word-table entry of the last earlier-launch write


def stale_waits(view) -> StaleWaits:
    return cached(view, "stale_waits", lambda: _stale_waits(view), Stage.WORD_TABLE)


def _stale_waits(view) -> StaleWaits:
    empty = StaleWaits(np.zeros(0, np.int64), np.zeros(0, np.int64))
    if view.n == 0:
        return empty
    kind = view["kind"]
    ends = np.flatnonzero((kind == K_WEND) & (view["outcome"] != int(Outcome.TIMEOUT)) & (view.key >= 0))
    if not len(ends):
        return empty
    w = words(view)
    ekey = view.key[ends]
    eck = w.ckey(ekey, view["launch"][ends])
    # Searched in sorted order (the table is far larger than the cache): the same bounds,
    # a fraction of the misses.
    order = np.argsort(eck, kind="stable")
    lo, hi = np.empty(len(eck), np.int64), np.empty(len(eck), np.int64)
    lo[order] = np.searchsorted(w.ck, eck[order], "left")
    hi[order] = np.searchsorted(w.ck, eck[order], "right")
    phase_all, _ = _phases.phases(view)
    out = np.full(len(ends), -1, np.int64)
    _stale_scan(lo, hi, Entries.of(w), view["rank"], view["core"], phase_all, (ends, ekey), out)
    found = out >= 0
    return StaleWaits(ends[found], out[found])


