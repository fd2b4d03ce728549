"""Flag-sync order for the unreset words: an owner's reset after a peer's write, through one flag.

The word table orders writes of different ranks by barrier phase and then by
row. A protocol that synchronises through flags (the peer signals, the owner
waits) instead of barriers leaves the owner's reset and the peer's put in one
phase, where the row order may put the reset first: ``reset_after_sync`` tells
which of the words ``_stale`` found off reset the owner did reset after the
write, ordered through one flag sync.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from . import _passes
from ._words import expand
from ._words_table import Entries
from .codes import K_WEND, K_WRITE
from .groups import group_columns
from .regions import region_table


@kernel
def _prev_own_reset(idx, table, rank, wpr, reset, out):
    # Per last entry: the latest earlier entry of its (key, launch) that is the owner's reset.
    # A backward walk per group: each group has one last entry, so the walks cover the table once.
    wck, lspan, wrow, wkind = table.ck, table.launch_span, table.row, table.kind
    wvalue, wregion = table.value, table.region
    for t in range(len(idx)):
        i = idx[t]
        x = i - 1
        while x >= 0 and wck[x] == wck[i]:
            if wkind[x] == K_WRITE and rank[wrow[x]] == wck[x] // lspan // wpr and wvalue[x] == reset[wregion[x]]:
                out[t] = x
                break
            x -= 1


def reset_after_sync(trace, w, idx) -> np.ndarray:
    """Per last entry ``idx``: an owner reset sorted before it is ordered after it through one flag sync.

    The word table orders writes of different ranks by barrier phase and then
    by row; a protocol that synchronises through flags (signal, then wait)
    instead of barriers leaves the owner's reset and a peer's put in one phase,
    so the row order may put the reset first. The reset follows the put when
    the peer's core completed the put (a quiet of its engine), then wrote a
    word the owner's core waited on, with the value the wait wanted, in the same
    launch, and the owner reset the word after that wait ended.
    """
    out = np.zeros(len(idx), bool)
    if not len(idx):
        return out
    kind, rank, launch = trace["kind"], trace["rank"], trace["launch"]
    rt = region_table(trace)
    n_e = len(w.row)
    prev = np.full(len(idx), -1, np.int64)
    _prev_own_reset(idx, Entries.of(w), rank, np.int64(trace.manifest.words_per_rank), rt["reset"], prev)
    # Only an entry with such a reset can be excused: the rest of the work is for those alone
    # (often none: on the synthetic trace, none of its 4 M unreset words).
    c = np.flatnonzero(prev >= 0)
    rl, rr = w.row[idx[c]], w.row[prev[c]]
    # Another core's write: of a peer rank, or of a sibling core of the owner's (an atomic add
    # to its own rank that core 0 resets after waiting on the sibling's done flag).
    core = trace["core"]
    cov = _passes.completed_at(trace)[rl]
    ok = (w.phase[prev[c]] == w.phase[idx[c]]) & ((rank[rl] != rank[rr]) | (core[rl] != core[rr])) & (cov >= 0)
    if not ok.any():
        return out
    c, rl, rr, cov = c[ok], rl[ok], rr[ok], cov[ok]
    # Sync edges: a word write (any entry of the table) and a completed wait on that word in the
    # same launch whose target is the value written.
    _, e2b = _passes.wait_pairs(trace)
    we = np.flatnonzero((kind == K_WEND) & (trace.key >= 0) & (e2b >= 0))
    if not len(we):
        return out
    wck = w.ckey(trace.key[we], launch[we])
    wval = np.asarray(trace["value"], np.int64)[e2b[we]]
    both_ck = np.concatenate((w.ck, wck))
    both_v = np.concatenate((w.value, wval))
    gid = group_columns((both_ck, both_v)).inverse
    entry_group, wait_group = gid[:n_e], gid[n_e:]
    so = np.argsort(entry_group, kind="stable")
    lo = np.searchsorted(entry_group[so], wait_group, "left")
    hi = np.searchsorted(entry_group[so], wait_group, "right")
    cnt = hi - lo
    e_row, src = expand(lo, cnt)
    s_row = w.row[so[e_row]]
    e_row = we[src]
    if not len(s_row):
        return out
    seg = trace.segments
    nseg = len(seg)
    sseg = np.searchsorted(seg, s_row, "right") - 1
    eseg = np.searchsorted(seg, e_row, "right") - 1
    n = np.int64(trace.n)
    seg_pair = sseg.astype(np.int64) * nseg + eseg
    comp = seg_pair * n + s_row
    by_pair = np.argsort(comp, kind="stable")
    comp, seg_pair, e_sorted = comp[by_pair], seg_pair[by_pair], e_row[by_pair]
    # Per (producer core, owner core): the earliest wait end among edges from s onwards.
    earliest_end = np.minimum.accumulate((e_sorted + seg_pair * n)[::-1])[::-1] - seg_pair * n
    core_pair = (np.searchsorted(seg, rl, "right") - 1).astype(np.int64) * nseg + \
        (np.searchsorted(seg, rr, "right") - 1)
    p = np.searchsorted(comp, core_pair * n + cov + 1, "left")
    pv = np.minimum(p, len(comp) - 1)
    # An edge shares its launch with its wait; s after the put and e before the reset, both on
    # their cores, put it in the launch of both.
    out[c] = (p < len(comp)) & (seg_pair[pv] == core_pair) & (earliest_end[pv] < rr)
    return out
