"""Does a flag the reader's rank waited on order a write before a read? (the race rules' flag edges)

MT601 / MT602 order a write before a read by barriers first (``_races``); a pair the barriers
leave unordered may still be ordered by flags: a wait_end that happens before the read (on the
reader's core earlier, or on another core of its rank, through a core barrier between) whose
observed value needed a write that happens after the write. "Happens after" is the same question
again, so the answer follows chains of flags (a barrier built of atomics: every rank adds to
rank 0's counter, rank 0 waits for all of them and then releases everyone through a second
flag) up to ``DEPTH`` observations deep. Never by ts.

What the observed value needed, per word and launch (the word table, ``_words``):
- a word only ``set`` in the launch: the one write of the observed value, where no other write
  of the launch sets that value;
- a word only added to (a completion counter, DeepEP's balanced barrier_block): the value at the
  launch's start S plus the adds that happen before the wait (its own core's earlier ones, rows a
  barrier orders before it) plus some subset of the unordered ones must equal the observed
  value. Where no subset of the unordered adds that are not after the write reaches it, one of the
  writer's later adds was applied first: ordered. S is where the host left the word before the
  first launch, its region's reset, else 0 (the symmetric windows are zeroed first, protocols.md
  1.2; a counter only ever added to starts from there), plus every add of the earlier launches,
  so it is known only where the view holds the whole trace from launch 0 (no ring wrap, no
  missing dump, no window): elsewhere the answer is "unknown".
"""

from __future__ import annotations

import numpy as np

from . import _passes as P
from . import codes as C
from . import regions as R
from ._cache import cached
from ._words import words
from .stages import Stage

SUBSET_SUMS_CAP = 1 << 14  # distinct partial sums explored before giving up ("unknown")
DEPTH = 3  # flag observations chained between a write and a read
NEAREST_WAITS = 8  # waits before a row tried as its edge, nearest first, beyond those below
DIRECT_WAITS = 64  # waits before a row on words the write's rank writes, all tried up to this
MAX_ENTRIES = 256  # writes of one word in one launch beyond which it is not reasoned about


def flag_edge(trace, write: int, read: int) -> str | None:
    """How flags the reader's rank waited on may order ``write`` (the row where the write is
    done: a local write, the quiet completing a put) before ``read``.

    "ordered": they do (see the module doc); "unknown": the reader's rank waited, before the read,
    on a word the writer's rank writes, but the trace cannot tell whether that ordered them;
    None: no such wait.
    """
    hb = cached(trace, "flag_order", lambda: _Order(trace), Stage.WORD_TABLE)
    if any(hb.needs_after(int(e), write, DEPTH) for e in hb.waits_before(read, write)):
        return "ordered"
    return "unknown" if len(hb.direct_waits(read, write)) else None


class _Order:
    """Happens-before through barriers and the values waits observed, memoized per view."""

    def __init__(self, trace):
        self.t = trace
        self.rank, self.core, self.launch = trace["rank"], trace["core"], trace["launch"]
        self.pa, self.pc = P.phases(trace)
        self.w = words(trace)
        self.memo: dict = {}

    def direct(self, a: int, b: int) -> bool:
        """Program order, a core barrier within a rank, a cross-rank barrier (one launch)."""
        if self.launch[a] != self.launch[b]:
            return bool(self.launch[a] < self.launch[b])
        if self.rank[a] == self.rank[b]:
            if self.core[a] == self.core[b]:
                return a < b
            return bool(self.pc[a] < self.pc[b])
        return bool(self.pa[a] < self.pa[b])

    def before(self, a: int, b: int, depth: int) -> bool:
        if self.direct(a, b):
            return True
        if depth == 0 or self.launch[a] != self.launch[b]:
            return False
        key = (a, b, depth)
        if key not in self.memo:
            self.memo[key] = False  # a cycle of questions proves nothing
            self.memo[key] = any(self.needs_after(int(e), a, depth) for e in self.waits_before(b, a))
        return self.memo[key]

    def _before_b(self, b: int) -> np.ndarray:
        """The wait_ends of b's rank and launch that happen before b, nearest first."""
        waits = _rank_waits(self.t, int(self.rank[b]), int(self.launch[b]))
        core, pc = self.core, self.pc
        waits = waits[((core[waits] == core[b]) & (waits < b)) | ((core[waits] != core[b]) & (pc[waits] < pc[b]))]
        return waits[::-1]

    def direct_waits(self, b: int, a: int) -> np.ndarray:
        """Waits before b on a word that a's rank writes in the launch (the one-step edges)."""
        waits = self._before_b(b)
        mine = [e for e in waits[:4 * DIRECT_WAITS].tolist()
                if (self.rank[self.entries(e)[0]] == self.rank[a]).any()]
        return np.array(mine[:DIRECT_WAITS], np.int64)

    def waits_before(self, b: int, a: int) -> np.ndarray:
        """The waits tried as b's edge from a: the direct ones, then the nearest others (chains)."""
        direct = self.direct_waits(b, a)
        rest = [e for e in self._before_b(b)[:NEAREST_WAITS].tolist() if e not in set(direct.tolist())]
        return np.concatenate((direct, np.array(rest, np.int64)))

    def entries(self, e: int):
        """(rows, ops, values) of the writes of wait_end e's word in its launch."""
        w = self.w
        ck = w.ckey(int(self.t.key[e]), int(self.launch[e]))
        lo, hi = np.searchsorted(w.ck, ck, "left"), np.searchsorted(w.ck, ck, "right")
        return w.row[lo:hi].astype(np.int64), w.op[lo:hi], w.value[lo:hi]

    def needs_after(self, e: int, a: int, depth: int) -> bool:
        """Did the value wait_end e observed need a write that happens after row a?"""
        rows, ops, vals = self.entries(e)
        if not len(rows) or len(rows) > MAX_ENTRIES or (vals == C.NULL64).any():
            return False
        after = np.array([self.before(a, int(x), depth - 1) for x in rows], bool)
        if not after.any():
            return False
        observed = int(self.t["observed"][e])
        if (ops == C.OP_SET).all():
            hit = vals == observed
            return bool((hit & after).any() and not (hit & ~after).any())
        if not (ops == C.OP_ADD).all():
            return False
        start = _start_value(self.t, self.w, int(self.t.key[e]), int(self.launch[e]))
        if start is None:
            return False
        first = np.array([self.before(int(x), e, depth - 1) for x in rows], bool)
        if (first & after).any():
            return True
        later = np.array([self.before(e, int(x), depth - 1) for x in rows], bool)
        free = ~first & ~later & ~after
        return not _reachable(vals[free], observed - start - int(vals[first].sum()))


def _rank_waits(trace, rank: int, launch: int) -> np.ndarray:
    """The wait_end rows of (rank, launch), from one index built per view."""
    def build():
        we = np.flatnonzero((trace["kind"] == C.K_WEND) & (trace.key >= 0))
        ident = trace["rank"][we].astype(np.int64) * (2**32) + trace["launch"][we].astype(np.int64)
        order = np.argsort(ident, kind="stable")
        return we[order], ident[order]
    rows, ident = cached(trace, "flag_edge_waits", build, Stage.WORD_TABLE)
    want = np.int64(rank) * (2**32) + launch
    return rows[np.searchsorted(ident, want, "left"):np.searchsorted(ident, want, "right")]


def _start_value(trace, w, key: int, launch: int) -> int | None:
    """The word's value when ``launch`` began, where every add to it since the trace's start is held."""
    window = getattr(trace, "blocks", None)
    if trace.partial or (window is not None and window[0] != 0) or w.lmin != 0:
        return None
    lo, hi = np.searchsorted(w.ck, w.ckey(key, w.lmin), "left"), np.searchsorted(w.ck, w.ckey(key, launch), "left")
    if (w.op[lo:hi] != C.OP_ADD).any() or (w.value[lo:hi] == C.NULL64).any():
        return None
    _, region, _ = trace.decode_key(key)
    rt = R.region_table(trace)
    return int(rt["reset"][region]) + int(w.value[lo:hi].sum())


def _reachable(values: np.ndarray, target: int) -> bool:
    """Can some subset of ``values`` sum to ``target``? True where too many sums to tell."""
    sums = {0}
    uniq, counts = np.unique(values, return_counts=True)
    for v, n in zip(uniq.tolist(), counts.tolist()):
        sums = {s + v * j for s in sums for j in range(n + 1)}
        if len(sums) > SUBSET_SUMS_CAP:
            return True
    return target in sums
