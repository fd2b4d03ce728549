"""Stale waits, read from the word table: waits a leftover value satisfied.

One of the two facts the stale-flag rules report and the wait-for graph follows
(a stuck wait whose earlier wait passed on a leftover cites them), computed here
once per view so the graph never reads a rule's hits; the other, the words left
off reset, is ``_unreset``'s.

``stale_waits``: every completed wait_end that no write of its own launch can
precede (each is later on the waiting core, after a barrier the waiter had
not reached, or after a flag that itself needed a write made after the wait:
``_flag_edges``) while an earlier launch wrote the word: the wait passed on
that older value (MT201's hits).

The flags are asked last and for few waits: only where the value the word held
from the earlier launch is the one the wait observed (or either is unknown),
and no write of the launch comes before the wait in program order or barrier
phase. In a protocol that resets its flags, or compares a generation, the old
value never is what the wait observed, so the flag search is not run at all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.contract import Outcome

from .._jit import helper, kernel
from . import _phases
from . import codes as C
from ._cache import cached
from ._flag_edges import DEPTH, flag_order
from ._words import words
from ._words_table import Entries
from .codes import K_WEND
from .stages import Stage


@helper
def _follows(r, e, rank, core, write_phase, wait_phase):
    # Write row r cannot precede wait_end e: it is later on e's own core, or in a later barrier phase.
    return (r > e and rank[r] == rank[e] and core[r] == core[e]) or write_phase > wait_phase


@kernel
def _stale_scan(lo, hi, table, rank, core, phase_all, waits, out):
    # For each wait_end: if no write of its launch to its word can precede it
    # (every one is later on its own core, or after a barrier it had not
    # reached), the value came from an earlier launch: name the last one.
    # waits: (wait_end rows, their keys); lo, hi: per wait_end, the table entries of its (key, launch).
    erow, ekey = waits
    key_launch, launch_span, wrow, wphase = table.key_launch, table.launch_span, table.row, table.phase
    for j in range(len(erow)):
        e = erow[j]
        can = False
        for w in range(lo[j], hi[j]):
            r = wrow[w]
            if not _follows(r, e, rank, core, wphase[w], phase_all[e]):
                can = True
                break
        if not can:
            p = lo[j] - 1
            if p >= 0 and key_launch[p] // launch_span == ekey[j]:
                out[j] = p


@dataclass(frozen=True)
class StaleWaits:
    """Completed waits satisfied by an earlier launch's value."""

    ends: np.ndarray  # the wait_end rows, ascending
    source: np.ndarray  # per wait_end: the word-table entry of the last earlier-launch write
    by_flags: np.ndarray  # per wait_end: a write of its launch is ordered after it by flags alone


def stale_waits(view) -> StaleWaits:
    return cached(view, "stale_waits", lambda: _stale_waits(view), Stage.WORD_TABLE)


def _stale_waits(view) -> StaleWaits:
    empty = StaleWaits(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool))
    if view.n == 0:
        return empty
    kind = view["kind"]
    ends = np.flatnonzero((kind == K_WEND) & (view["outcome"] != int(Outcome.TIMEOUT)) & (view.key >= 0))
    if not len(ends):
        return empty
    w = words(view)
    ekey = view.key[ends]
    lo, hi = w.entries_of(ekey, view["launch"][ends])
    phase_all, _ = _phases.phases(view)
    out = np.full(len(ends), -1, np.int64)
    _stale_scan(lo, hi, Entries.of(w), view["rank"], view["core"], phase_all, (ends, ekey), out)
    flagged = _after_flags(view, w, ends, ekey, lo, hi, out, phase_all)
    found = out >= 0
    return StaleWaits(ends[found], out[found], flagged[found])


def _after_flags(view, w, ends, ekey, lo, hi, out, phase_all) -> np.ndarray:
    """Marks stale (in ``out``) the waits whose launch's writes the scan leaves unordered with them
    but that flags order after them; returns which waits were found so."""
    flagged = np.zeros(len(ends), bool)
    prev = lo - 1
    has_prev = (prev >= 0) & (out < 0) & (hi > lo)
    has_prev[has_prev] = w.key_of(prev[has_prev]) == ekey[has_prev]
    if not has_prev.any():  # (nor, perhaps, any entry: a wait on a word nothing flag-like writes)
        return flagged
    held = w.after[np.maximum(prev, 0)]
    observed = view["observed"][ends]
    maybe = np.flatnonzero(has_prev & ((held == C.NULL64) | (observed == C.NULL64) | (observed == held)))
    if not len(maybe):
        return flagged
    order = flag_order(view)
    rank, core = view["rank"], view["core"]
    for j in maybe.tolist():
        e = int(ends[j])
        # The writes the scan let precede the wait: flags must order each after it.
        listed = [x for x, phase in zip(w.row[lo[j]:hi[j]].tolist(), w.phase[lo[j]:hi[j]].tolist())
                  if not _follows(x, e, rank, core, phase, phase_all[e])]
        # A write that plainly happens before the wait (a barrier phase, another core's earlier
        # core barrier) answers at once; only the rest cost a search through flags.
        if not any(order.direct(x, e) for x in listed) and all(order.before(e, x, DEPTH) for x in listed):
            out[j], flagged[j] = prev[j], True
    return flagged


