"""Flag-sync order for the unreset words: an owner's reset after a peer's write, through flags.

The word table orders writes of different ranks by barrier phase and then by
row. A protocol that synchronises through flags (the peer signals, the owner
waits) instead of barriers leaves the owner's reset and the peer's put in one
phase, where the row order may put the reset first: ``reset_after_sync`` tells
which of the words ``_unreset`` found off reset the owner did reset after the
write. Whether flags order the two is decided where every flag-sync order is,
``_flag_edges.flag_order``; here only which reset to ask about.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from . import _passes
from ._flag_edges import DEPTH, flag_order
from ._words_table import Entries
from .codes import K_WRITE
from .regions import region_table


@kernel
def _prev_own_reset(idx, table, rank, wpr, reset, at, prev):
    # Per last entry idx[t]: the latest earlier entry x of its (key, launch) that is the owner's
    # reset. A backward walk per group: each group has one last entry, so the walks cover the
    # table once. Returns how many have one; writes (t, x) of each into (at, prev) where they
    # have room (a first call with no room counts: such resets are few, the entries millions).
    key_launch, launch_span, wrow, wkind = table.key_launch, table.launch_span, table.row, table.kind
    wvalue, wregion = table.value, table.region
    found = 0
    for t in range(len(idx)):
        i = idx[t]
        x = i - 1
        while x >= 0 and key_launch[x] == key_launch[i]:
            if (wkind[x] == K_WRITE and rank[wrow[x]] == key_launch[x] // launch_span // wpr
                    and wvalue[x] == reset[wregion[x]]):
                if found < len(at):
                    at[found] = t
                    prev[found] = x
                found += 1
                break
            x -= 1
    return found


def reset_after_sync(trace, w, idx) -> np.ndarray:
    """Per last entry ``idx``: an owner reset sorted before it is ordered after it through flag syncs.

    The reset follows the write when the write's core completed it (the write
    itself, or a quiet of its engine for a put) and flags order that completion
    before the reset (``flag_order``: the owner waited, before its reset, on a
    value that needed a write made after the completion; chains of such waits
    count). Only another core's write is asked about: of a peer rank, or of a
    sibling core of the owner's (an atomic add to its own rank that core 0
    resets after waiting on the sibling's done flag); the owner's own core
    orders its writes by program order, which the word table already holds.
    """
    out = np.zeros(len(idx), bool)
    if not len(idx):
        return out
    rank, core = trace["rank"], trace["core"]
    # Only an entry with such a reset can be excused: the rest of the work is for those alone
    # (often none: on the synthetic trace, none of its 4 M unreset words).
    args = (idx, Entries.of(w), rank, np.int64(trace.manifest.words_per_rank), region_table(trace)["reset"])
    none = np.zeros(0, np.int64)
    found = _prev_own_reset(*args, none, none)
    c, prev = np.empty(found, np.int64), np.empty(found, np.int64)
    if found:
        _prev_own_reset(*args, c, prev)
    rl, rr = w.row[idx[c]], w.row[prev]
    done = _passes.completed_at(trace)[rl]
    ok = (w.phase[prev] == w.phase[idx[c]]) & ((rank[rl] != rank[rr]) | (core[rl] != core[rr])) & (done >= 0)
    if not ok.any():
        return out
    order = flag_order(trace)
    out[c[ok]] = [order.before(a, b, DEPTH) for a, b in zip(done[ok].tolist(), rr[ok].tolist())]
    return out
