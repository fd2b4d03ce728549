"""Does a flag order a write before a read? (the one place flag-sync order is decided)

Two passes ask it: the race rules (MT601 / MT602, through ``flag_edge``), for a write and a read
the barriers leave unordered, and the unreset-word pass (``_reset_sync``), for a peer's write and
the owner's reset the word table sorted before it (it orders one rank's cores by row, not by their
core barriers). Either pair may still be ordered: by a core barrier between two cores of one
rank, or by flags: a wait_end that happens before the read (on the reader's core earlier, or on
another core of its rank, through a core barrier between) whose observed value needed a write
that happens after the write. "Happens after" is the same question again, so the answer follows
chains of flags (a barrier built of atomics: every rank adds to rank 0's counter, rank 0 waits
for all of them and then releases everyone through a second flag) up to ``DEPTH`` observations
deep. Never by ts.

What a wait's observed value needed of its word's writes is ``_flag_values``' question.
"""

from __future__ import annotations

import numpy as np

from . import _phases
from . import codes as C
from ._cache import cached
from ._flag_values import Observed, reachable, start_value
from ._words import expand, words
from .stages import Stage

DEPTH = 3  # flag observations chained between a write and a read
NEAREST_WAITS = 8  # waits before a row tried as its edge, nearest first, beyond those below
DIRECT_WAITS = 64  # waits before a row on words the write's rank writes, all tried up to this
MAX_ENTRIES = 256  # writes of one word in one launch beyond which it is not reasoned about


def flag_order(trace) -> "FlagOrder":
    """The view's flag-sync order, built once per view (its answers are memoized in it)."""
    return cached(trace, "flag_order", lambda: FlagOrder(trace), Stage.WORD_TABLE)


def flag_edge(trace, write: int, read: int) -> str | None:
    """How flags the reader's rank waited on may order ``write`` (the row where the write is
    done: a local write, the quiet completing a put) before ``read``.

    "ordered": they do (see the module doc); "unknown": the reader's rank waited, before the read,
    on a word the writer's rank writes, but the trace cannot tell whether that ordered them;
    None: no such wait.
    """
    hb = flag_order(trace)
    if any(hb.needs_after(int(e), write, DEPTH) for e in hb.waits_before(read, write)):
        return "ordered"
    return "unknown" if len(hb.direct_waits(read, write)) else None


class FlagOrder:
    """Happens-before through barriers and the values waits observed, memoized per view.

    The one place that decides whether flags order two rows: the race rules ask it
    (``flag_edge``), and so does the unreset-word pass, for an owner's reset after
    a peer's write (``_reset_sync``).
    """

    def __init__(self, trace):
        self.t = trace
        self.rank, self.core, self.launch = trace["rank"], trace["core"], trace["launch"]
        self.pa, self.pc = _phases.phases(trace)
        self.w = words(trace)
        self.memo: dict = {}
        # The pure lookups below are asked again and again along chains of flags (a barrier of
        # atomics on 16 ranks: millions of times for a few thousand distinct answers), so each
        # is computed once per view, keyed by what it depends on and nothing more. Every question
        # asks others one level shallower, so a stored answer is the one a fresh computation gives.
        self._entries: dict = {}
        self._waits: dict = {}
        self._direct: dict = {}
        self._starts: dict = {}
        self._needs: dict = {}
        self._places: dict = {}
        self._classes: dict = {}
        self._arounds: dict = {}
        self._observeds: dict = {}
        self._tried: dict = {}
        self._writer_ranks: dict = {}
        self._reach: dict = {}
        self._flag_rows: np.ndarray | None = None

    def _place(self, row: int) -> tuple[int, int, int, int, int]:
        """(launch, rank, core, phase_all, phase_core) of a row as Python ints, once per row asked
        about: ``direct`` is asked millions of times about a few thousand rows."""
        found = self._places.get(row)
        if found is None:
            found = self._places[row] = (int(self.launch[row]), int(self.rank[row]), int(self.core[row]),
                                         int(self.pa[row]), int(self.pc[row]))
        return found

    def _class(self, a: int) -> tuple:
        """What of row ``a`` the memoized answers depend on: its place and the next row on its core
        that writes a word some wait observed.

        Below ``before``'s first test, ``a`` enters a question only through its rank and launch and
        through ``direct(a, x)`` for such writes x; rows of a core between two of them answer
        alike. So the questions about the payload writes of one stretch of a core (the race rules
        ask one per write) are worked out once, not once per write.
        """
        found = self._classes.get(a)
        if found is None:
            rows = self._written_flags()
            nxt = int(np.searchsorted(rows, a, "right"))
            found = self._classes[a] = self._place(a) + (int(rows[nxt]) if nxt < len(rows) else -1,)
        return found

    def _written_flags(self) -> np.ndarray:
        """Rows of the writes of every (word, launch) a wait_end observed, ascending: the writes
        ``entries`` can name."""
        if self._flag_rows is None:
            t, w = self.t, self.w
            we = np.flatnonzero((t["kind"] == C.K_WEND) & (t.key >= 0))
            # each (word, launch) once: many waits observe one word in a launch
            key_launch = np.unique(w.key_launch_of(t.key[we], self.launch[we]))
            lo = np.searchsorted(w.key_launch, key_launch, "left")
            hi = np.searchsorted(w.key_launch, key_launch, "right")
            self._flag_rows = np.unique(w.row[expand(lo, hi - lo)[0]])
        return self._flag_rows

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
        key = (self._class(a), b, depth)
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
            mine = [e for e in waits[:4 * DIRECT_WAITS].tolist() if key[1] in self._writers(e)]
            found = self._direct[key] = np.array(mine[:DIRECT_WAITS], np.int64)
        return found

    def _writers(self, e: int) -> frozenset:
        """The ranks that write wait_end e's word in its launch."""
        found = self._writer_ranks.get(e)
        if found is None:
            found = self._writer_ranks[e] = frozenset(self.rank[self.entries(e)[0]].tolist())
        return found

    def waits_before(self, b: int, a: int) -> list[int]:
        """The waits tried as b's edge from a: the direct ones, then the nearest others (chains).
        They depend on a's rank alone: listed once per (b, rank)."""
        key = (b, int(self.rank[a]))
        found = self._tried.get(key)
        if found is None:
            direct = self.direct_waits(b, a).tolist()
            taken = set(direct)
            found = self._tried[key] = direct + [e for e in self._before_b(b)[:NEAREST_WAITS].tolist()
                                                 if e not in taken]
        return found

    def entries(self, e: int):
        """(rows, ops, values, rows as a list) of the writes of wait_end e's word in its launch."""
        found = self._entries.get(e)
        if found is None:
            w = self.w
            lo, hi = w.entries_of(int(self.t.key[e]), int(self.launch[e]))
            rows = w.row[lo:hi].astype(np.int64)
            found = self._entries[e] = (rows, w.op[lo:hi], w.value[lo:hi], rows.tolist())
        return found

    def needs_after(self, e: int, a: int, depth: int) -> bool:
        """Did the value wait_end e observed need a write that happens after row a?

        Memoized like ``before``: each asks the other one level shallower only, so no question
        is ever asked again while its own answer is being worked out, and a stored answer is the
        one a fresh computation would give."""
        key = (e, self._class(a), depth)
        found = self._needs.get(key)
        if found is None:
            found = self._needs[key] = self._needs_after(e, a, depth)
        return found

    def _around(self, e: int, depth: int, before_e: bool) -> list[bool]:
        """Per write of wait_end e's word in its launch: ``before(x, e, depth)`` (``before_e``), else
        ``before(e, x, depth)``. No ``a`` in it: worked out once per wait, not per row asked about."""
        key = (e, depth, before_e)
        found = self._arounds.get(key)
        if found is None:
            listed = self.entries(e)[3]
            found = self._arounds[key] = [self.before(x, e, depth) if before_e else self.before(e, x, depth)
                                          for x in listed]
        return found

    def _needs_after(self, e: int, a: int, depth: int) -> bool:
        what = self._observed(e)
        if what is None:
            return False
        if what.adds is None:
            # Only the writes of the observed value matter: every one of them after a, and one at
            # least (asked of those alone, stopping at the first that is not after a).
            return bool(what.hits) and all(self.before(a, x, depth - 1) for x in what.hits)
        after = self._after(a, what, depth - 1)
        if not any(after):
            return False
        first = self._around(e, depth - 1, True)
        if any(f and x for f, x in zip(first, after)):
            return True
        key = (e, depth, tuple(after))
        found = self._reach.get(key)
        if found is None:
            free = ~np.array(first) & ~np.array(self._around(e, depth - 1, False)) & ~np.array(after)
            found = self._reach[key] = not reachable(what.adds[free], what.need - int(what.adds[first].sum()))
        return found

    def _after(self, a: int, what: Observed, depth: int) -> list[bool]:
        """``before(a, x, depth)`` for every write x of ``what``: ``direct`` inlined over the
        writes' places (asked ~3 million times on a 5,000-event barrier of atomics), the flag
        question only for those of a's launch it leaves unordered."""
        la, ra, ca, pa_a, pc_a = self._place(a)
        out = []
        for x, (lx, rx, cx, pa_x, pc_x) in zip(what.listed, what.places):
            if lx != la:
                out.append(la < lx)
            elif (a < x if cx == ca else pc_a < pc_x) if rx == ra else pa_a < pa_x:
                out.append(True)
            else:
                out.append(bool(depth) and self.before(a, x, depth))
        return out

    def _observed(self, e: int) -> Observed | None:
        """What wait_end e's observed value needed of its word's writes in its launch, once per
        wait; None where it cannot be reasoned about (too many writes, a write of unknown value,
        sets and adds mixed, an add-only word whose value at the launch's start is unknown)."""
        if e in self._observeds:
            return self._observeds[e]
        rows, ops, vals, listed = self.entries(e)
        found = None
        if len(rows) and len(rows) <= MAX_ENTRIES and not (vals == C.NULL64).any():
            observed = int(self.t["observed"][e])
            if (ops == C.OP_SET).all():
                found = Observed(listed, [], [x for x, v in zip(listed, vals.tolist()) if v == observed], None, 0)
            elif (ops == C.OP_ADD).all():
                word = (int(self.t.key[e]), int(self.launch[e]))
                if word not in self._starts:
                    self._starts[word] = start_value(self.t, self.w, *word)
                start = self._starts[word]
                if start is not None:
                    found = Observed(listed, [self._place(x) for x in listed], [], vals, observed - start)
        self._observeds[e] = found
        return found


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
