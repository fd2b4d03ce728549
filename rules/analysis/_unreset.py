"""Words left off reset, read from the word table (MT202's hits, and what the wait-for graph and
the count rules cite).

``unreset``: every word of a region with ``reset`` (not ``monotonic``) off its
reset value at the end of a launch the owner ran to its end, unless the next
launch begins by resetting it (clean-before-use) or the owner's reset is
ordered after the last write through a flag sync (``_reset_sync``); grouped
per (owner, region, launch), each group with the owner's wait on its first
word. Computed once per view, so the graph never reads a rule's hits (nor a
hit's capped display).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .._jit import helper, kernel
from . import _passes
from ._cache import cached
from ._reset_sync import reset_after_sync
from ._words import words
from ._words_table import Entries
from .codes import K_END, K_WEND, K_WRITE, OP_SET
from .regions import region_table
from .stages import Stage


class Resets(NamedTuple):
    """Per region: its reset value, whether it has one, whether it only grows."""
    reset: np.ndarray
    has_reset: np.ndarray
    monotonic: np.ndarray


@kernel
def _unreset(table, resets, out):
    # Per key run of the table: last entries of a launch off the reset value, unless excused by
    # clean-before-use (the next launch's first write to the word, or any launch's, is the reset).
    key_launch, launch_span, wkind, wop, wvalue = table.key_launch, table.launch_span, table.kind, table.op, table.value
    wafter, wlast, wregion = table.after, table.last, table.region
    reset, has_reset, monotonic = resets
    m = len(key_launch)

    def clean_first(i):  # a launch's first write to the word is the owner's reset
        return (i == 0 or key_launch[i] != key_launch[i - 1]) and wkind[i] == K_WRITE and wop[i] == OP_SET \
            and wvalue[i] == reset[wregion[i]]

    a = 0
    while a < m:
        b = a
        anyclean = False
        end = (key_launch[a] // launch_span + 1) * launch_span  # the key's entries: key_launch below the next key's
        while b < m and key_launch[b] < end:
            anyclean = anyclean or clean_first(b)
            b += 1
        for i in range(a, b):
            r = wregion[i]
            if not wlast[i] or not has_reset[r] or monotonic[r] or wafter[i] == reset[r]:
                continue  # unknown (a put without a value) is off reset: nothing reset it
            out[i] = not (clean_first(i + 1) if i + 1 < b else anyclean)
        a = b


_COUNTED_LAUNCHES = 1 << 16  # launch spans up to this are counting-sorted; wider ones (far-apart launch numbers) merge-sorted


@helper
def _launch_of(c, key_base, launch_span):
    # The launch part of composite key c, and its key's first composite key: a division only where
    # c leaves the key of the previous call (key_launch ascends, and a key holds an entry per launch).
    if c >= key_base + launch_span or c < key_base:
        key_base = c - c % launch_span
    return c - key_base, key_base


@kernel
def _group_runs(idx, key_launch, launch_span, words_per_rank, region, out, starts):
    # idx ascends in table order, which sorts by key (owner, then word address) and then launch: a
    # region is one address range, so each (owner, region) is one run of idx. Within a run the
    # entries are ordered by launch, each launch's in table order (a counting sort where the launch
    # span is small, as in every real trace; else a stable argsort of the run), and the run's groups
    # are written out in order of their first entry. Returns the number of groups; starts[g] is
    # where group g begins in out. Divisions are few (~40 cycles each, and a trace that leaves
    # every count unreset has 15 M entries a window): a run ends where key_launch reaches the next owner's
    # first composite key, and an entry's launch is key_launch less its key's first composite key.
    n = len(idx)
    counted = launch_span <= _COUNTED_LAUNCHES
    slots = launch_span if counted else 1
    size = np.zeros(slots, np.int64)  # per launch of the current run: its entries
    first = np.empty(slots, np.int64)  # ... its first entry (a position in idx)
    fill = np.empty(slots, np.int64)  # ... where its next entry goes in out
    top = np.int64(2**62)
    count = 0
    pos = 0
    a = 0
    while a < n:
        owner, reg = key_launch[idx[a]] // launch_span // words_per_rank, region[idx[a]]
        # The next owner's first composite key, where the product fits (far-apart launch numbers
        # can make it overflow: then each entry's owner is divided out).
        fits = owner + 1 <= top // launch_span // words_per_rank
        end = (owner + 1) * words_per_rank * launch_span if fits else top
        b = a + 1
        while b < n and region[idx[b]] == reg and (key_launch[idx[b]] < end if fits
                                                   else key_launch[idx[b]] // launch_span // words_per_rank == owner):
            b += 1
        if counted:
            key_base = np.int64(-1) - launch_span
            for t in range(a, b):
                launch, key_base = _launch_of(key_launch[idx[t]], key_base, launch_span)
                if size[launch] == 0:
                    first[launch] = t
                size[launch] += 1
            used = np.flatnonzero(size)
            for launch in used[np.argsort(first[used])]:
                starts[count] = pos
                count += 1
                fill[launch] = pos
                pos += size[launch]
            key_base = np.int64(-1) - launch_span
            for t in range(a, b):
                launch, key_base = _launch_of(key_launch[idx[t]], key_base, launch_span)
                out[fill[launch]] = idx[t]
                fill[launch] += 1
            size[used] = 0
        else:
            launches = np.empty(b - a, np.int64)
            for t in range(a, b):
                launches[t - a] = key_launch[idx[t]] % launch_span
            order = np.argsort(launches, kind="mergesort")
            lo = np.empty(b - a + 1, np.int64)  # each launch's bounds in order, and its first entry
            firsts = np.empty(b - a, np.int64)
            groups = 0
            for t in range(b - a):
                if t == 0 or launches[order[t]] != launches[order[t - 1]]:
                    lo[groups] = t
                    firsts[groups] = order[t]
                    groups += 1
            lo[groups] = b - a
            for g in np.argsort(firsts[:groups]):
                starts[count] = pos
                count += 1
                for t in range(lo[g], lo[g + 1]):
                    out[pos] = idx[a + order[t]]
                    pos += 1
        a = b
    return count


@dataclass(frozen=True)
class Unreset:
    """Words left off reset at the end of a launch, grouped per (owner, region, launch).

    Group g's word-table entries (table order) are ``members[bounds[g]:bounds[g + 1]]``, the
    groups in order of their first entry; ``wait_row[g]`` is the owner's last wait_end on the
    group's first word in its launch (-1: it never waited on it): MT202 locates its hit there,
    else at the first entry's row.
    """

    members: np.ndarray
    bounds: np.ndarray  # groups + 1 offsets into members
    owner: np.ndarray
    region: np.ndarray
    launch: np.ndarray
    wait_row: np.ndarray

    def __len__(self) -> int:
        return len(self.owner)

    def first(self) -> np.ndarray:
        """Each group's first entry."""
        return self.members[self.bounds[:-1]]

    def key_rows(self, table) -> np.ndarray:
        """The row each group's finding is keyed by: the owner's wait, else the first word's last write."""
        return np.where(self.wait_row >= 0, self.wait_row, table.row[self.first()].astype(np.int64))


def unreset_index(view) -> dict[tuple[int, int, int], tuple[tuple[int, int, int], int]]:
    """``unreset``'s groups by (owner rank, region id, launch) -> (the key MT202 gives the group's
    finding, the group's number): what the wait-for graph and the count rules cite. A group's word
    offsets are ``offsets(view, group)``, worked out for the groups asked about: a trace that leaves
    every count unreset has millions of such words a window."""
    def build():
        u, w = unreset(view), words(view)
        rank, core, seq = view["rank"], view["core"], view["seq"]
        rows = u.key_rows(w)
        keys = zip(rank[rows].tolist(), core[rows].tolist(), seq[rows].tolist())
        return {(o, r, L): (key, g) for g, (o, r, L, key) in
                enumerate(zip(u.owner.tolist(), u.region.tolist(), u.launch.tolist(), keys))}
    return cached(view, "unreset_index", build, Stage.WORD_TABLE)


def offsets(view, group: int) -> np.ndarray:
    """The word offsets (within its region) of unreset group ``group``, in table order."""
    memo = cached(view, "unreset_offsets", dict, Stage.WORD_TABLE)
    found = memo.get(group)
    if found is None:
        u, w = unreset(view), words(view)
        first = view.decode_keys(w.key_of(u.members[u.bounds[group]:u.bounds[group + 1]]))[2]
        found = memo[group] = w.words_from(first, u.region[group])  # an entry may stand for a slot's words
    return found


def _by_group(idx: np.ndarray, w, words_per_rank: int) -> tuple[np.ndarray, np.ndarray]:
    """The unreset entries ``idx`` (table order) per (owner, region, launch): (members, bounds), the
    groups in order of their first entry, each group's entries in table order (millions of
    entries: no key, owner or group-id array of their length, no sort of them all)."""
    out = np.empty_like(idx)
    starts = np.empty(len(idx) + 1, np.int64)
    count = _group_runs(idx, w.key_launch, np.int64(w.launch_span), np.int64(words_per_rank), w.region, out, starts)
    starts[count] = len(idx)
    return out, starts[:count + 1].copy()


def unreset(view) -> Unreset:
    return cached(view, "unreset", lambda: _unreset_groups(view), Stage.WORD_TABLE)


def _unreset_groups(view) -> Unreset:
    none = np.zeros(0, np.int64)
    empty = Unreset(none, np.zeros(1, np.int64), none, none, none, none)
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
    keep = ~reset_after_sync(view, w, idx)
    if not keep.all():  # usually all are kept: no copy of millions of entries then
        idx = idx[keep]
    if not len(idx):
        return empty
    members, bounds = _by_group(idx, w, wpr)
    del idx, keep
    firsts = members[bounds[:-1]]
    # Only launches the owner ran to the end: one it never reached (stuck in an earlier
    # launch, or stopped) has had no chance to consume and reset what peers sent it.
    # A group is one (owner, launch): looked up per group, not per word, as (rank, launch) packed
    # into one int64: no table of ranks x launches (launch numbers may lie 2^31 apart).
    owner, offset = w.key_of(firsts) // wpr, w.launch_of(firsts) - w.launch_min
    ranks = int(view.manifest.ranks)
    ends = np.flatnonzero(kind == K_END)
    er, el = view["rank"][ends].astype(np.int64), view["launch"][ends].astype(np.int64) - w.launch_min
    ok = (er >= 0) & (er < ranks) & (el >= 0) & (el < w.launch_span)
    unfinished = [r * w.launch_span + (L - w.launch_min) for r, L in _passes.incomplete_launches(view)
                  if 0 <= r < ranks and 0 <= L - w.launch_min < w.launch_span]
    done = np.setdiff1d(er[ok] * w.launch_span + el[ok], np.array(unfinished, np.int64))
    inside = (owner >= 0) & (owner < ranks)
    ran = inside & np.isin(np.where(inside, owner, 0) * w.launch_span + offset, done)
    if not ran.all():
        members, bounds = _kept_groups(members, bounds, ran)
        firsts = firsts[ran]
        if not len(firsts):
            return empty
    # The owner's last wait_end on each group's first word, in its launch: it consumed, then did not reset.
    wends = np.flatnonzero(kind == K_WEND)
    waited_key_launch = w.key_launch_of(view.key[wends], view["launch"][wends])
    eorder = np.argsort(waited_key_launch, kind="stable")
    waited_key_launch, wends = waited_key_launch[eorder], wends[eorder]
    wait_row = np.full(len(firsts), -1, np.int64)
    if len(wends):  # a trace may hold no completed wait at all
        hi = np.searchsorted(waited_key_launch, w.key_launch[firsts], "right")
        waited = (hi > 0) & (waited_key_launch[np.maximum(hi - 1, 0)] == w.key_launch[firsts])
        wait_row[waited] = wends[hi[waited] - 1]
    return Unreset(members, bounds, w.key_of(firsts) // wpr, w.region[firsts].astype(np.int64),
                   w.launch_of(firsts).astype(np.int64), wait_row)


def _kept_groups(members: np.ndarray, bounds: np.ndarray, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The groups ``keep`` marks, as (members, bounds) again."""
    sizes = np.diff(bounds)
    kept = np.repeat(keep, sizes)
    return members[kept], np.concatenate(([0], np.cumsum(sizes[keep])))
