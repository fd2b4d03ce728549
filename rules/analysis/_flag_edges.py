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

from . import _phases
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
        self.pa, self.pc = _phases.phases(trace)
        self.w = words(trace)
        self.memo: dict = {}
        # The pure lookups below are asked again and again along chains of flags (a barrier of
        # atomics on 16 ranks: millions of times for a few thousand distinct answers), so each
        # is computed once per view: the questions asked and their order are what they were.
        self._entries: dict = {}
        self._waits: dict = {}
        self._direct: dict = {}
        self._starts: dict = {}
        self._needs: dict = {}
        self._places: dict = {}

    def _place(self, row: int) -> tuple[int, int, int, int, int]:
        """(launch, rank, core, phase_all, phase_core) of a row as Python ints, once per row asked
        about: ``direct`` is asked millions of times about a few thousand rows."""
        found = self._places.get(row)
        if found is None:
            found = self._places[row] = (int(self.launch[row]), int(self.rank[row]), int(self.core[row]),
                                         int(self.pa[row]), int(self.pc[row]))
        return found

    def direct(self, a: int, b: int) -> bool:
        """Program order, a core barrier within a rank, a cross-rank barrier (one launch)."""
        la, ra, ca, pa_a, pc_a = self._place(a)
        lb, rb, cb, pa_b, pc_b = self._place(b)
        if la != lb:
            return la < lb
        if ra == rb:
            if ca == cb:
                return a < b
            return pc_a < pc_b
        return pa_a < pa_b

    def before(self, a: int, b: int, depth: int) -> bool:
        if self.direct(a, b):
            return True
        if depth == 0 or self._place(a)[0] != self._place(b)[0]:
            return False
        key = (a, b, depth)
        if key not in self.memo:
            self.memo[key] = False  # a cycle of questions proves nothing
            self.memo[key] = any(self.needs_after(int(e), a, depth) for e in self.waits_before(b, a))
        return self.memo[key]

    def _before_b(self, b: int) -> np.ndarray:
        """The wait_ends of b's rank and launch that happen before b, nearest first."""
        found = self._waits.get(b)
        if found is None:
            waits = _rank_waits(self.t, int(self.rank[b]), int(self.launch[b]))
            core, pc = self.core, self.pc
            waits = waits[((core[waits] == core[b]) & (waits < b)) | ((core[waits] != core[b]) & (pc[waits] < pc[b]))]
            found = self._waits[b] = waits[::-1]
        return found

    def direct_waits(self, b: int, a: int) -> np.ndarray:
        """Waits before b on a word that a's rank writes in the launch (the one-step edges)."""
        key = (b, int(self.rank[a]))
        found = self._direct.get(key)
        if found is None:
            waits = self._before_b(b)
            mine = [e for e in waits[:4 * DIRECT_WAITS].tolist() if (self.rank[self.entries(e)[0]] == key[1]).any()]
            found = self._direct[key] = np.array(mine[:DIRECT_WAITS], np.int64)
        return found

    def waits_before(self, b: int, a: int) -> np.ndarray:
        """The waits tried as b's edge from a: the direct ones, then the nearest others (chains)."""
        direct = self.direct_waits(b, a)
        taken = set(direct.tolist())
        rest = [e for e in self._before_b(b)[:NEAREST_WAITS].tolist() if e not in taken]
        return np.concatenate((direct, np.array(rest, np.int64)))

    def entries(self, e: int):
        """(rows, ops, values, rows as a list) of the writes of wait_end e's word in its launch."""
        found = self._entries.get(e)
        if found is None:
            w = self.w
            ck = w.ckey(int(self.t.key[e]), int(self.launch[e]))
            lo, hi = np.searchsorted(w.ck, ck, "left"), np.searchsorted(w.ck, ck, "right")
            rows = w.row[lo:hi].astype(np.int64)
            found = self._entries[e] = (rows, w.op[lo:hi], w.value[lo:hi], rows.tolist())
        return found

    def needs_after(self, e: int, a: int, depth: int) -> bool:
        """Did the value wait_end e observed need a write that happens after row a?

        Memoized like ``before``: each asks the other one level shallower only, so no question
        is ever asked again while its own answer is being worked out, and a stored answer is the
        one a fresh computation would give."""
        key = (e, a, depth)
        found = self._needs.get(key)
        if found is None:
            found = self._needs[key] = self._needs_after(e, a, depth)
        return found

    def _needs_after(self, e: int, a: int, depth: int) -> bool:
        rows, ops, vals, listed = self.entries(e)
        if not len(rows) or len(rows) > MAX_ENTRIES or (vals == C.NULL64).any():
            return False
        observed = int(self.t["observed"][e])
        if (ops == C.OP_SET).all():
            # Only the writes of the observed value matter: every one of them after a, and one at
            # least (asked of those alone, stopping at the first that is not after a).
            hits = [x for x, v in zip(listed, vals.tolist()) if v == observed]
            return bool(hits) and all(self.before(a, x, depth - 1) for x in hits)
        if not (ops == C.OP_ADD).all():
            return False
        after = np.array([self.before(a, x, depth - 1) for x in listed], bool)
        if not after.any():
            return False
        word = (int(self.t.key[e]), int(self.launch[e]))
        if word not in self._starts:
            self._starts[word] = _start_value(self.t, self.w, *word)
        start = self._starts[word]
        if start is None:
            return False
        first = np.array([self.before(x, e, depth - 1) for x in listed], bool)
        if (first & after).any():
            return True
        later = np.array([self.before(e, x, depth - 1) for x in listed], bool)
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
