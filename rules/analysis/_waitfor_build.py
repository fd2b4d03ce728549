"""The shared state of one wait-for analysis: core end states, tables, queries.

``Builder`` runs the per-event passes once (``_scan``), builds the
lookup tables (``_waitfor_tables``) and answers the questions the producer
classification asks: which cores of a rank matter, who wrote a slot before,
which routes or delivers a producer dropped, where it wrote instead.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Kind, Op

from . import regions as R
from ._scan import STOPPED, scanned
from ._waitfor_astray import AstrayQueries
from ._waitfor_stale import stale_waits
from ._waitfor_tables import Tables
from .slots import SlotParams, producer_of


class Stop(NamedTuple):
    """A rank that stopped: a core ended mid-kernel, or it never began a launch, or its dump is missing."""

    key: tuple  # the MT103 key: the last event of its lowest stopped core ((rank,) for a missing dump)
    how: str  # "stopped" (mid-kernel), "not-started", "missing" (no events at all)
    rows: tuple[int, ...]  # the last event of each stopped core (of each core, where none stopped)
    gap: str | None  # what of the rank's trace is lost, where something is


def stuck_words(code: str, core: int, launch: int, instance: int, timed_out: bool, region: str | None,
                slot: int) -> str:
    """'core 1 waits on ready[3]', 'core 0 in barrier #2 of launch 1': what a stuck wait (MT101) or
    barrier (MT102) is stuck in, as every message that names one words it."""
    if code == "MT102":
        return f"core {core} in barrier #{instance} of launch {launch}"
    return f"core {core} {'timed out on' if timed_out else 'waits on'} {region}[{slot}]"


class Builder(AstrayQueries):
    def __init__(self, trace):
        self.trace = t = trace
        m = t.manifest
        t.load(["rank", "core", "seq", "launch", "kind", "outcome", "region", "offset"])
        seg = t.segments
        state, open_row, last_row, begin, end = scanned(t)
        self.seg_state, self.seg_open, self.seg_last_row = state, open_row, last_row
        starts = seg[:-1]
        self.seg_rank = t["rank"][starts].astype(np.int64)
        self.seg_core = t["core"][starts].astype(np.int64)
        self.seg_last_launch = t["launch"][np.maximum(last_row, 0)].astype(np.int64)
        self.stuck_begin, self.stuck_end = begin, end
        rows = np.where(begin >= 0, begin, end)
        # Every waited region, not only the stuck ones: a stale earlier wait can explain a hang.
        waited = np.unique(t["region"][t["kind"] == Kind.WAIT_BEGIN]) if len(rows) else rows
        self.tables = Tables(t, {int(r) for r in waited if r >= 0})
        self.ranks = m.ranks
        self.topk = int(m.param("topk", 0) or 0)
        self.tokens = int(m.param("tokens", 0) or 0)
        self.local_experts = int(m.param("local_experts", 0) or 0)
        self.num_experts = m.num_experts
        s = m.param("expert_sentinel")
        self.sentinel = None if s is None else int(s)
        self.expert = t["expert"]
        self.dst_rank = t["dst_rank"]
        self.slot_params = SlotParams(self.ranks, self.topk, self.tokens, self.local_experts, self.num_experts)
        self.missing = set(t.ranks_missing)
        self.lost = t.lost_by_core
        self.node_at_row: dict[int, int] = {}
        self.nodes: list = []
        self.wrong: dict = {}
        self._stops: dict = {}
        self._mis: dict = {}

    def attach(self, nodes) -> None:
        self.nodes = nodes
        self.node_at_row = {n.row: n.id for n in nodes}
        self._timeouts: dict = {}
        for n in nodes:
            if n.end_row >= 0:
                self._timeouts.setdefault((n.rank, n.launch), []).append(n.id)

    # ---- small queries ---------------------------------------------------
    @property
    def outside(self) -> str:
        """How an invalid id is out of range, for messages."""
        return "negative (num_experts unknown)" if self.num_experts is None else f"outside [0, {self.num_experts})"

    def expert_valid(self, e):
        if self.num_experts is None:  # no numbering known: only a negative id is certainly invalid
            return e >= 0
        return (e >= 0) & (e < self.num_experts)

    def key_of_row(self, row: int) -> tuple[int, int, int]:
        t = self.trace
        return (int(t["rank"][row]), int(t["core"][row]), int(t["seq"][row]))

    def gap_of_core(self, rank: int, core: int) -> str | None:
        k = self.lost.get((rank, core))
        return f"rank {rank} core {core} lost {k} events to ring wrap" if k else None

    def gap_of_rank(self, rank: int) -> str | None:
        if rank in self.missing:
            return f"no events from rank {rank}"
        lost = {c: k for (r, c), k in self.lost.items() if r == rank}
        if not lost:
            return None
        return f"rank {rank} lost " + ", ".join(f"{k} events on core {c}" for c, k in sorted(lost.items())) \
            + " to ring wrap"

    def timeouts_of(self, rank: int, launch: int) -> list[int]:
        return list(self._timeouts.get((rank, launch), ()))

    def node_text(self, i: int) -> str:
        n = self.nodes[i]
        name = self.trace.manifest.regions[n.region].name if n.code == "MT101" else None
        return stuck_words(n.code, n.core, n.launch, n.instance, n.end_row >= 0, name, n.slot)

    def write_text(self, i: int) -> str:
        tb = self.tables
        name = self.trace.manifest.regions[int(tb.w_region[i])].name
        return f"{name}[{int(tb.w_slot[i])}] of rank {int(tb.w_owner[i])}"

    # ---- producers -------------------------------------------------------
    def slot_producers(self, region: int, owner, slot, launch) -> np.ndarray:
        """The rank the region's index names as the writer of each (owner, slot) in ``launch``
        (``slots.producer_of``: a rank, or negative where it names none)."""
        index = self.trace.manifest.regions[region].index
        return producer_of(index, slot, owner, launch, self.tables.routes, self.slot_params)

    def history_writers(self, w) -> list[tuple[int, int]]:
        """Ranks that wrote this slot in earlier launches or earlier in its own (not its resets),
        with their last launch: a slot a rank kept writing (a generation it raised step by step)
        names that rank where the region has no index."""
        tb = self.tables
        idx = self._releasing_history(w)
        reset = self.trace.manifest.regions[w.region].reset
        if reset is not None:
            idx = idx[tb.w_value[idx] != reset]
        out: dict[int, int] = {}
        for i in idx:
            out[int(tb.w_rank[i])] = int(tb.w_launch[i])
        return sorted(out.items())

    def _releasing_history(self, w) -> np.ndarray:
        """Write-table indices into w's slot up to its own launch, less the waiting core's own
        writes before the wait in that launch: it began waiting after them (a ring's head it
        cleared, a flag it reset), so they are not the write it waits for, with or without a
        ``reset`` annotation to say so."""
        tb = self.tables
        idx = tb.history(w.skey, w.launch + 1)
        own = (tb.w_rank[idx] == w.rank) & (tb.w_core[idx] == w.core) & (tb.w_launch[idx] == w.launch) \
            & (tb.w_row[idx] < w.row)
        return idx[~own]

    def cores_for(self, p: int, w) -> np.ndarray:
        """Segments of rank p that can release w: its earlier writers of the slot if known."""
        segs = np.flatnonzero(self.seg_rank == p)
        tb = self.tables
        idx = self._releasing_history(w)
        cores = set(tb.w_core[idx[tb.w_rank[idx] == p]].tolist())
        pick = segs[np.isin(self.seg_core[segs], list(cores))] if cores else segs
        return pick if len(pick) else segs

    def current_value(self, n) -> tuple[int | None, str]:
        """The slot's value at the end of the trace: its writes up to the wait's launch folded
        in row order; for a generation (monotonic) every launch's writes, and the largest wins
        (a peer already in a later launch has written the slot too)."""
        tb = self.tables
        region = self.trace.manifest.regions[n.region]
        idx = tb.history(n.skey, tb.nlaunch if region.monotonic else n.launch + 1)
        vnull = self.trace.null("value")
        vals, ops = tb.w_value[idx], tb.w_op[idx]
        known = vals != vnull
        if region.monotonic and known.any():
            cur = max(int(vals[known].max()), region.reset if region.reset is not None else -(2**62))
        elif (ordered := self._ordered_value(n)) is not None:
            cur = ordered
        else:
            # The last write that sets the word (or carries no value) and the adds after it.
            setters = np.flatnonzero((ops != Op.ADD) | ~known)
            k = int(setters[-1]) if len(setters) else -1
            base = region.reset if k < 0 else (int(vals[k]) if known[k] else None)
            cur = None if base is None else base + int(vals[k + 1:].sum())
        in_launch = (tb.w_launch[idx] == n.launch).any() if len(idx) else False
        if cur is None:
            return None, "current value unknown"
        note = "" if in_launch else f", never written in launch {n.launch}"
        return cur, f"current value {cur}{note}"

    def _ordered_value(self, n) -> int | None:
        """The word's value after its last write up to n's launch in the word table's
        happens-before order (a consumer's reset after the wait that saw the producer's write
        comes after that write, whatever the rows' order), or None where the table does not
        hold the word (not flag-like) or cannot say."""
        if not R.region_table(self.trace)["flaglike"][n.region]:
            return None
        from ._words import NULL64, words

        table = words(self.trace)
        lo, hi = table.key_bounds(self.trace.key_of(n.rank, n.region, n.offset))
        upto = np.flatnonzero(table.launch_of(np.arange(lo, hi)) <= n.launch)
        if not len(upto):
            return None
        value = int(table.after[lo + upto[-1]])
        return None if value == NULL64 else value

    def stopped_in(self, rank: int, launch: int) -> bool:
        """Does a core of ``rank`` end mid-kernel in ``launch`` (died, or its dump was cut)?"""
        segs = np.flatnonzero(self.seg_rank == rank)
        return bool(((self.seg_last_launch[segs] == launch) & (self.seg_state[segs] == STOPPED)).any())

    def wrote_others(self, p: int, w) -> int:
        """How many other slots of w's region p wrote to w's rank in w's launch (not resets)."""
        tb = self.tables
        idx = tb.writes_by(p, w.region, w.launch)
        idx = idx[tb.w_owner[idx] == w.rank]
        reset = self.trace.manifest.regions[w.region].reset
        if reset is not None:
            idx = idx[tb.w_value[idx] != reset]
        return len(np.unique(tb.w_slot[idx]))

    def stale_candidates(self, w, rank: int | None = None) -> list[tuple]:
        """Earlier waits of ``rank`` (default w's) in w's launch that the previous launch's
        leftover value already satisfied: ((MT202 / MT201, key), text). A stale count makes the
        waiter expect rows nobody sends, or a producer send rows to the wrong slots."""
        k = (w.rank if rank is None else rank, w.launch)
        if not hasattr(self, "_stale"):
            self._stale = {}
        if k not in self._stale:
            self._stale[k] = stale_waits(self, k[0], w.launch)
        return [c for c in self._stale[k] if c[0][1] != w.key]

    # ---- ranks that stopped ----------------------------------------------
    def stop_key(self, p: int) -> tuple[int, int, int]:
        """The MT103 key of rank p: last event of its lowest stopped core (else its lowest core);
        (p,) for a rank with no events, which has no event to name."""
        if p in self._stops:
            return self._stops[p].key
        if p in self.missing:
            entry = Stop((p,), "missing", (), f"no events from rank {p}")
        else:
            segs = np.flatnonzero(self.seg_rank == p)
            stopped = segs[self.seg_state[segs] == STOPPED]
            kind = "stopped" if len(stopped) else "not-started"
            pick = stopped if len(stopped) else segs
            rows = tuple(int(self.seg_last_row[s]) for s in pick)
            entry = Stop(self.key_of_row(rows[0]), kind, rows, self.gap_of_rank(p))
        self._stops[p] = entry
        return entry.key

    def stops(self) -> dict[int, Stop]:
        """Every rank that stopped mid-kernel, plus the missing / early-ending ranks a wait names."""
        for p in np.unique(self.seg_rank[self.seg_state == STOPPED]).tolist():
            self.stop_key(int(p))
        return dict(sorted(self._stops.items()))
