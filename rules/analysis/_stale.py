"""Stale flags, read from the word table: waits a leftover value satisfied, words left off reset.

Two facts the stale-flag rules report and the wait-for graph follows (a stuck
wait whose earlier wait passed on a leftover cites them), computed here once
per view so the graph never reads a rule's hits (nor a hit's capped display):

- ``stale_waits``: every completed wait_end that no write of its own launch
  can precede (each is later on the waiting core, or after a barrier the
  waiter had not reached) while an earlier launch wrote the word: the wait
  passed on that older value (MT201's hits).
- ``unreset``: every word of a region with ``reset`` (not ``monotonic``) off
  its reset value at the end of a launch the owner ran to its end, unless the
  next launch begins by resetting it (clean-before-use) or the owner's reset
  is ordered after the last write through a flag sync; grouped per (owner,
  region, launch), each group with the owner's wait on its first word
  (MT202's hits, one per group).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ingest.contract import Outcome

from .._jit import kernel
from . import _passes
from ._cache import cached
from ._words import expand, words
from .codes import K_END, K_WEND, K_WRITE, OP_SET
from .groups import group_columns
from .regions import region_table
from .stages import Stage


class Entries(NamedTuple):
    """The word table's columns the scans read (``_words_table.Words``), as numba takes them."""
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


class Resets(NamedTuple):
    """Per region: its reset value, whether it has one, whether it only grows."""
    reset: np.ndarray
    has_reset: np.ndarray
    monotonic: np.ndarray


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


@kernel
def _unreset(table, resets, out):
    # Per key run of the table: last entries of a launch off the reset value, unless excused by
    # clean-before-use (the next launch's first write to the word, or any launch's, is the reset).
    wck, lspan, wkind, wop, wvalue = table.ck, table.launch_span, table.kind, table.op, table.value
    wafter, wlast, wregion = table.after, table.last, table.region
    reset, has_reset, monotonic = resets
    m = len(wck)

    def clean_first(i):  # a launch's first write to the word is the owner's reset
        return (i == 0 or wck[i] != wck[i - 1]) and wkind[i] == K_WRITE and wop[i] == OP_SET \
            and wvalue[i] == reset[wregion[i]]

    a = 0
    while a < m:
        b = a
        anyclean = False
        end = (wck[a] // lspan + 1) * lspan  # the key's entries: ck below the next key's
        while b < m and wck[b] < end:
            anyclean = anyclean or clean_first(b)
            b += 1
        for i in range(a, b):
            r = wregion[i]
            if not wlast[i] or not has_reset[r] or monotonic[r] or wafter[i] == reset[r]:
                continue  # unknown (a put without a value) is off reset: nothing reset it
            out[i] = not (clean_first(i + 1) if i + 1 < b else anyclean)
        a = b


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


@dataclass(frozen=True)
class StaleWaits:
    """Completed waits satisfied by an earlier launch's value."""

    ends: np.ndarray  # the wait_end rows, ascending
    source: np.ndarray  # per wait_end: the word-table entry of the last earlier-launch write


@dataclass(frozen=True)
class Unreset:
    """Words left off reset at the end of a launch, grouped per (owner, region, launch).

    ``groups[g]`` holds group g's word-table entries (table order), the groups in order of their
    first entry; ``wait_row[g]`` is the owner's last wait_end on the group's first word in its
    launch (-1: it never waited on it): MT202 locates its hit there, else at the first entry's row.
    """

    groups: tuple[np.ndarray, ...]
    owner: np.ndarray
    region: np.ndarray
    launch: np.ndarray
    wait_row: np.ndarray

    def key_row(self, g: int, table) -> int:
        """The row a group's finding is keyed by: the owner's wait, else the first word's last write."""
        w = int(self.wait_row[g])
        return w if w >= 0 else int(table.row[self.groups[g][0]])


def unreset_index(view) -> dict[tuple[int, int, int], tuple[tuple[int, int, int], np.ndarray]]:
    """``unreset``'s groups by (owner rank, region id, launch) -> (the key MT202 gives the group's
    finding, every word offset of the group): what the wait-for graph and the count rules cite."""
    def build():
        u, w = unreset(view), words(view)
        rank, core, seq = view["rank"], view["core"], view["seq"]
        wpr, base = view.manifest.words_per_rank, view.region_base
        out = {}
        for g, members in enumerate(u.groups):
            r = u.key_row(g, w)
            rest = w.key_of(members) % wpr
            offsets = rest - base[np.searchsorted(base, rest, "right") - 1]
            out[(int(u.owner[g]), int(u.region[g]), int(u.launch[g]))] = \
                ((int(rank[r]), int(core[r]), int(seq[r])), offsets.astype(np.int64))
        return out
    return cached(view, "unreset_index", build, Stage.WORD_TABLE)


def _split(idx: np.ndarray, group: np.ndarray) -> tuple[np.ndarray, ...]:
    """``idx`` split by the packed ``group`` id of each entry: the groups in order of their first
    entry, each group's entries in ``idx`` order (one stable sort, split at the boundaries; a mask
    per group would cost groups x entries). Ids spanning under 2^16 are sorted as uint16, which
    numpy's stable sort does by radix: a third of the int64 sort's time on millions of entries."""
    low = group.min()
    narrow = group.max() - low < 2**16
    order = np.argsort((group - low).astype(np.uint16) if narrow else group, kind="stable")
    sorted_group = group[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_group[1:] != sorted_group[:-1])))
    parts = np.split(idx[order], starts[1:])
    return tuple(parts[g] for g in np.argsort(order[starts], kind="stable"))


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
    phase_all, _ = _passes.phases(view)
    out = np.full(len(ends), -1, np.int64)
    _stale_scan(lo, hi, Entries.of(w), view["rank"], view["core"], phase_all, (ends, ekey), out)
    found = out >= 0
    return StaleWaits(ends[found], out[found])


def unreset(view) -> Unreset:
    return cached(view, "unreset", lambda: _unreset_groups(view), Stage.WORD_TABLE)


def _unreset_groups(view) -> Unreset:
    none = np.zeros(0, np.int64)
    empty = Unreset((), none, none, none, none)
    if view.n == 0:
        return empty
    w = words(view)
    if not len(w.row):
        return empty
    rt = region_table(view)
    kind = view["kind"]
    bad = np.zeros(len(w.row), bool)
    _unreset(Entries.of(w), Resets(rt["reset"], rt["has_reset"], rt["monotonic"]), bad)
    idx = np.flatnonzero(bad)
    if not len(idx):
        return empty
    wpr = view.manifest.words_per_rank
    ck = w.ck[idx]  # one gather: (key, launch) -> the owner and the launch from 0
    key = ck // w.lspan
    owner, offset = key // wpr, ck - key * w.lspan
    keep = ~_reset_after_sync(view, w, idx)
    if not keep.all():  # usually all are kept: no copies of millions of entries then
        idx, owner, offset = idx[keep], owner[keep], offset[keep]
    if not len(idx):
        return empty
    groups = _split(idx, (owner * len(rt["reset"]) + w.region[idx]) * w.lspan + offset)
    firsts = np.array([int(g[0]) for g in groups], np.int64)
    # Only launches the owner ran to the end: one it never reached (stuck in an earlier
    # launch, or stopped) has had no chance to consume and reset what peers sent it.
    # A group is one (owner, launch): looked up per group, not per word, as (rank, launch) packed
    # into one int64: no table of ranks x launches (launch numbers may lie 2^31 apart).
    owner, offset = w.key_of(firsts) // wpr, w.launch_of(firsts) - w.lmin
    ranks = int(view.manifest.ranks)
    ends = np.flatnonzero(kind == K_END)
    er, el = view["rank"][ends].astype(np.int64), view["launch"][ends].astype(np.int64) - w.lmin
    ok = (er >= 0) & (er < ranks) & (el >= 0) & (el < w.lspan)
    unfinished = [r * w.lspan + (L - w.lmin) for r, L in _passes.incomplete_launches(view)
                  if 0 <= r < ranks and 0 <= L - w.lmin < w.lspan]
    done = np.setdiff1d(er[ok] * w.lspan + el[ok], np.array(unfinished, np.int64))
    inside = (owner >= 0) & (owner < ranks)
    ran = inside & np.isin(np.where(inside, owner, 0) * w.lspan + offset, done)
    if not ran.all():
        groups, firsts = tuple(g for g, r in zip(groups, ran.tolist()) if r), firsts[ran]
        if not groups:
            return empty
    # The owner's last wait_end on each group's first word, in its launch: it consumed, then did not reset.
    wends = np.flatnonzero(kind == K_WEND)
    eck = w.ckey(view.key[wends], view["launch"][wends])
    eorder = np.argsort(eck, kind="stable")
    eck, wends = eck[eorder], wends[eorder]
    wait_row = np.full(len(firsts), -1, np.int64)
    if len(wends):  # a trace may hold no completed wait at all
        hi = np.searchsorted(eck, w.ck[firsts], "right")
        waited = (hi > 0) & (eck[np.maximum(hi - 1, 0)] == w.ck[firsts])
        wait_row[waited] = wends[hi[waited] - 1]
    return Unreset(groups, w.key_of(firsts) // wpr, w.region[firsts].astype(np.int64),
                   w.launch_of(firsts).astype(np.int64), wait_row)


def _reset_after_sync(trace, w, idx) -> np.ndarray:
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
