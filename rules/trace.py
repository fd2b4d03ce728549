"""The trace as rules see it: integer numpy columns plus shared derived arrays.

Rows are in dataset order: ranks ascending, each rank in (core, seq) order,
so a per-core pass needs no sort.  A view may hold a window of the trace's
blocks (whole launches of every rank, ``ingest.dataset``): then rows are that
window's, in the same order, and the analyzer decides which hits it keeps.
Columns load on first use (or all at once, ``prefetch``) and stay cached;
derived arrays (segments, owner, element keys) are computed once and shared
by every rule.  Nulls are each column's sentinel (``contract.Column.numpy_null``).
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import numpy as np

from ingest.contract import (
    COLUMN,
    COLUMNS,
    COMMON_OPTIONAL,
    FIELDS,
    REMOTE_WRITE_KINDS,
    Kind,
    _Named,
)
from ingest.dataset import Dataset

from ._jit import kernel
from ._view_columns import EVIDENCE_ONLY, ViewColumns
from .analysis.groups import group_columns


class TraceView(ViewColumns):
    def __init__(self, dataset: Dataset, blocks: tuple[int, int] | None = None):
        self.dataset = dataset
        self.blocks = blocks  # the window (k0, k1) of dataset.blocks held, or None: all
        self.declared = dataset.manifest  # as the user wrote it
        self.report = dataset.report
        self._cols: dict[str, np.ndarray] = {}
        self._null: set[str] = set()  # columns null on every row of the view, held as none (``ViewColumns``)
        from .analysis import Options

        self.options = Options()  # the shared analyses' options; rules.runner.run sets the user's
        self.hits: dict[str, list] = {}  # each rule's hits in this run, by code (rules.base.hits_of)

    @classmethod
    def open(cls, path) -> "TraceView":
        return cls(Dataset(path))

    # ---- the manifest the rules use -----------------------------------------
    @cached_property
    def inference(self):
        """The declared manifest with what it leaves out inferred from the trace (``rules.analysis.inference``)."""
        from .analysis.inference import infer

        return infer(self)

    @property
    def manifest(self):
        """The manifest rules read: declared annotations, the rest inferred (see ``inference``)."""
        return self.inference.manifest

    # ---- derived, shared -------------------------------------------------
    @cached_property
    def segments(self) -> np.ndarray:
        """Start row of each (rank, core) run, plus a final n: rows [s[i], s[i+1])."""
        rank, core = self.col("rank"), self.col("core")  # compared as stored: no int64 copies
        if self.n == 0:
            return np.zeros(1, dtype=np.int64)
        change = np.flatnonzero((rank[1:] != rank[:-1]) | (core[1:] != core[:-1])) + 1
        return np.concatenate(([0], change, [self.n])).astype(np.int64)

    @cached_property
    def wait_words(self) -> np.ndarray:
        """Words each wait_begin covers: its ``words``, else its region's slot when it waits on the
        slot's first word (a one-word wait on a 32 B status slot still orders the slot's reset
        after the write it observed); the ``words`` column elsewhere."""
        words = self.col("words")
        rows = np.flatnonzero((self.col("kind") == Kind.WAIT_BEGIN) & (words == self.null("words")))
        if not len(rows):
            return words
        region = self.col("region")[rows].astype(np.int64)
        width = np.array([r.slot_words for r in self.manifest.regions] or [1], np.int64)[np.maximum(region, 0)]
        aligned = (region >= 0) & (self.col("offset")[rows] % width == 0)
        out = words.copy()
        out[rows] = np.where(aligned, width, 1)
        return out

    @cached_property
    def region_base(self) -> np.ndarray:
        return np.array([r.base for r in self.declared.regions] or [0], dtype=np.int64)

    @cached_property
    def region_length(self) -> np.ndarray:
        return np.array([r.length for r in self.declared.regions] or [0], dtype=np.int64)

    @cached_property
    def owner(self) -> np.ndarray:
        """Rank whose memory the row's target word lives in (peer for remote writes)."""
        out = np.empty(self.n, np.int32)
        _owner_kernel(self.col("kind"), self.col("rank"), self.col("peer"), _REMOTE, self.null("peer"), out)
        return out

    @cached_property
    def key(self) -> np.ndarray:
        """Dense element key of the row's target: owner * words_per_rank + base + offset; -1 if none.

        For a get the key is its local destination (local_region, local_offset)
        on its own rank; the peer-side read is not a write.  One numba pass:
        the numpy form made five int64 temporaries of the trace's length.
        """
        kind = self.col("kind")
        has_get = bool((kind == Kind.GET).any())
        region, offset = self.col("region"), self.col("offset")
        lreg = self.col("local_region") if has_get else region
        loff = self.col("local_offset") if has_get else offset
        out = np.empty(self.n, np.int64)
        _key_kernel(kind, (region, offset), (lreg, loff), self.owner, self.region_base,
                    np.int64(self.declared.words_per_rank), int(Kind.GET), out)
        return out

    def key_of(self, owner: int, region: int, offset: int) -> int:
        return owner * self.declared.words_per_rank + int(self.region_base[region]) + offset

    def decode_key(self, key: int) -> tuple[int, int, int]:
        """(owner rank, region id, offset) of a key."""
        owner, region, offset = self.decode_keys(np.array([key], np.int64))
        return int(owner[0]), int(region[0]), int(offset[0])

    def decode_keys(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(owner rank, region id, offset) of each of ``keys``, as int64 columns."""
        owner, rest = np.divmod(np.asarray(keys, np.int64), self.declared.words_per_rank)
        region = np.searchsorted(self.region_base, rest, side="right") - 1
        return owner, region.astype(np.int64), rest - self.region_base[region]

    @cached_property
    def lost_by_core(self) -> dict[tuple[int, int], int]:
        return {(c.rank, c.core): c.missing for c in self.report.cores if c.missing}

    def lost_at(self, places) -> bool:
        """Did the trace lose events at any of ``places`` ((rank, core), or (rank, None): any core
        of the rank) to ring wrap, or is the rank's dump missing?"""
        lost = self.lost_by_core
        missing = set(self.report.ranks_missing)
        lost_ranks = {r for r, _ in lost}
        return any(r in missing or (r in lost_ranks if c is None else (r, c) in lost) for r, c in places)

    @property
    def ranks_missing(self) -> list[int]:
        return list(self.report.ranks_missing)

    @cached_property
    def intact_from(self) -> dict[tuple[int, int], int]:
        """For each (rank, core) that lost events to ring wrap: the first launch it holds whole.

        A ring loses its oldest records, so everything after a core's first
        surviving event is there. That event's launch is whole only if the event
        is its kernel_begin; otherwise the launch's start is gone.
        """
        out: dict[tuple[int, int], int] = {}
        if not self.lost_by_core:
            return out
        seg = self.segments
        rank, core = self.col("rank"), self.col("core")
        kind, launch = self.col("kind"), self.col("launch")
        # A launch may run several kernels (dispatch, then combine) on a core: a surviving
        # kernel_begin is the launch's start only if the core holds as many kernel_begins of
        # it as the most any core holds (any: every core of a rank may have lost the first).
        kb = np.flatnonzero(kind == Kind.KERNEL_BEGIN)
        ident = np.stack((rank[kb].astype(np.int64), core[kb].astype(np.int64), launch[kb].astype(np.int64)))
        u, _, _, cnt = group_columns(ident)
        held = {tuple(x): int(k) for x, k in zip(u.T.tolist(), cnt)}
        most: dict[int, int] = {}
        for (_, _, L), k in held.items():
            most[L] = max(most.get(L, 0), k)
        for s in seg[:-1]:
            rc = (int(rank[s]), int(core[s]))
            if rc in self.lost_by_core:
                L = int(launch[s])
                whole = kind[s] == Kind.KERNEL_BEGIN and held.get((*rc, L), 0) >= most.get(L, 0)
                out[rc] = L + (0 if whole else 1)
        for rc in self.lost_by_core:  # lost everything: no surviving launch at all
            out.setdefault(rc, 2**31 - 1)
        return out

    def launch_intact(self, rank: int, launch: int) -> bool:
        """True when every event rank ``rank`` recorded in ``launch`` is in the trace.

        Rules that conclude from the absence of an event (a reset never made, a
        delivery never recorded) must hold back where this is False.
        """
        if rank in self.report.ranks_missing:
            return False
        return all(first <= launch for (r, _), first in self.intact_from.items() if r == rank)

    @property
    def partial(self) -> bool:
        return bool(self.lost_by_core or self.ranks_missing)

    # ---- one row, for evidence ------------------------------------------
    def describe(self, row: int) -> dict[str, Any]:
        """The row's non-null fields with their wire names and values."""
        row = int(row)
        self.load(EVIDENCE_ONLY)  # together, the first time a row is described
        kind = Kind(int(self.col("kind")[row]))
        out: dict[str, Any] = {"rank": int(self.col("rank")[row]), "core": int(self.col("core")[row]),
                               "seq": int(self.col("seq")[row]), "kind": kind.wire}
        from ingest.contract import json_name

        req, opt = FIELDS[kind]
        for name in ("ts", "launch") + req + opt + COMMON_OPTIONAL:
            if name in self._null:  # null on every row: nothing to say, and no column made for it
                continue
            spec = COLUMN[name]
            v = self.col(name)[row]
            if spec.type.equals(COLUMN["name"].type):
                if v is None:
                    continue
                out[json_name(kind, name)] = v
                continue
            v = int(v)
            if v == spec.numpy_null:
                continue
            if spec.enum is not None:
                v = spec.enum(v).wire
            elif spec.ref == "region":
                v = self.declared.regions[v].name
            out[json_name(kind, name)] = v
        return out


# Indexable by kind code: does the kind write into its peer's memory?
_REMOTE = np.zeros(max(int(k) for k in Kind) + 1, np.bool_)
_REMOTE[[int(k) for k in REMOTE_WRITE_KINDS]] = True


@kernel
def _owner_kernel(kind, rank, peer, remote, peer_null, out):
    for i in range(len(kind)):
        p = peer[i]
        out[i] = p if remote[kind[i]] and p != peer_null else rank[i]


@kernel
def _key_kernel(kind, target, local, owner, base, wpr, k_get, out):
    # target: (region, offset) per row; local: a get's (local_region, local_offset), which it writes.
    region, offset = target
    lreg, loff = local
    for i in range(len(kind)):
        if kind[i] == k_get:
            r, o = lreg[i], loff[i]
        else:
            r, o = region[i], offset[i]
        out[i] = owner[i] * wpr + base[r] + o if r >= 0 else -1


__all__ = ["TraceView", "COLUMNS", "_Named"]
