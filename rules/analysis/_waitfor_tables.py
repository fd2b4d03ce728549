"""Lookup tables the wait-for analysis queries once per stuck wait.

Built with whole-array numpy (selection, one argsort each) over the events
that matter: writes into the regions somebody is stuck on, all wait_begins
on those regions, all routes.  A query is a binary search, so a trace with
thousands of stuck waits and millions of writes stays cheap.

Slots: a region's slot is ``offset // slot_words`` (the 32 B ready / count /
status entries of the classic kernels); ``skey`` numbers every slot of every
rank densely, the slot-level analogue of ``TraceView.key``.
"""

from __future__ import annotations

from functools import cached_property
from typing import NamedTuple

import numpy as np

from ingest.contract import REMOTE_WRITE_KINDS, Kind, Op

from .._jit import kernel
from ._words_table import widest
from .slots import Routes

_WRITE_KINDS = (Kind.PUT, Kind.SIGNAL, Kind.AMO, Kind.WRITE, Kind.PUT_SIGNAL)
# Indexable by kind code.  numba freezes module globals at compile time: plain ints.
_IS_WRITE = np.zeros(max(int(k) for k in Kind) + 1, np.bool_)
_IS_WRITE[[int(k) for k in _WRITE_KINDS]] = True
_REMOTE = np.zeros(max(int(k) for k in Kind) + 1, np.bool_)
_REMOTE[[int(k) for k in REMOTE_WRITE_KINDS]] = True
_PUT_SIGNAL = int(Kind.PUT_SIGNAL)
_SIGNAL = int(Kind.SIGNAL)
_AMO = int(Kind.AMO)
_SET = int(Op.SET)


class WriteColumns(NamedTuple):
    """The trace's columns ``_select_writes`` reads, one entry per event."""
    kind: np.ndarray
    region: np.ndarray
    offset: np.ndarray
    sig_region: np.ndarray
    sig_offset: np.ndarray
    nbytes: np.ndarray
    value: np.ndarray
    op: np.ndarray
    rank: np.ndarray
    peer: np.ndarray
    core: np.ndarray
    launch: np.ndarray


class SlotLayout(NamedTuple):
    """Per region: whether its writes are wanted, its element size and slots; and per kind: remote."""
    wanted: np.ndarray
    elem_bytes: np.ndarray
    slot_words: np.ndarray
    slots: np.ndarray
    slot_base: np.ndarray      # its first slot within a rank's slot keys
    slots_per_rank: np.int64
    remote: np.ndarray         # per kind: writes the peer's memory


class Tables:
    def __init__(self, trace, regions: set[int]):
        self.trace = trace
        m = trace.manifest
        self.sw = np.array([r.slot_words for r in m.regions] or [1], dtype=np.int64)
        nslots = np.array([-(-r.length // r.slot_words) for r in m.regions] or [0], dtype=np.int64)
        self.nslots = nslots
        self.slot_base = np.concatenate(([0], np.cumsum(nslots)[:-1])).astype(np.int64)
        self.slots_per_rank = int(nslots.sum()) or 1
        # One read of the parquet files for every column the tables use.
        trace.load(["kind", "launch", "region", "offset", "sig_region", "sig_offset", "nbytes", "value",
                    "op", "rank", "peer", "core"])
        self.nlaunch = int(trace["launch"].max()) + 1 if trace.n else 1
        self._writes(regions)
        self._waits(regions)
        self._routes()

    # ---- keys ------------------------------------------------------------
    def skey(self, owner, region, slot):
        return (np.asarray(owner, np.int64) * self.slots_per_rank
                + self.slot_base[np.asarray(region, np.int64)] + np.asarray(slot, np.int64))

    def slot_of(self, region: int, offset: int) -> int:
        return int(offset) // int(self.sw[region])

    # ---- writes ----------------------------------------------------------
    def _writes(self, regions: set[int]) -> None:
        # One numba pass over the trace: the numpy form made a dozen selections
        # and int64 copies of the trace's length for a few million writes.
        t = self.trace
        nreg = len(t.manifest.regions)
        wanted = np.zeros(max(nreg, 1), np.bool_)
        for r in regions:
            if 0 <= r < nreg:
                wanted[r] = True
        elem = np.array([r.elem_bytes for r in t.manifest.regions] or [1], dtype=np.int64)
        (self.w_row, self.w_region, self.w_slot, self.w_owner, self.w_value, self.w_op,
         self.w_rank, self.w_core, self.w_launch, self.w_skey, ordered) = _select_writes(
            # the signal word's columns are read at a put_signal alone (TraceView.carried)
            WriteColumns(*(t.carried(c) if c in ("sig_region", "sig_offset") else t[c] for c in WriteColumns._fields)),
            SlotLayout(wanted, elem, self.sw, self.nslots, self.slot_base, np.int64(self.slots_per_rank), _REMOTE),
            np.int64(t.null("peer")), np.int64(t.null("value")), self._waited_slots(wanted, elem), np.int64(widest(t)))
        # Index 1: by slot, then launch, then row (a stable history per slot).
        # Rows ascending in table order (no put_signal's signal half appended): a stable
        # sort on the composite key is the lexsort's order, at a third of its cost.
        k1 = self.w_skey * self.nlaunch + self.w_launch
        o1 = np.argsort(k1, kind="stable") if ordered else np.lexsort((self.w_row, self.w_launch, self.w_skey))
        self._o1 = o1
        self._k1 = k1[o1]
        self._ordered = ordered

    @cached_property
    def _by_writer(self) -> tuple[np.ndarray, np.ndarray]:
        """Index 2: the write-table indices by writer rank, region, launch (then row), and their keys.
        Built on the first ``writes_by``: only a wait whose producer may have written elsewhere asks."""
        c2 = (self.w_rank * len(self.sw) + self.w_region) * self.nlaunch + self.w_launch
        o2 = np.argsort(c2, kind="stable") if self._ordered else np.lexsort((self.w_row, c2))
        return o2, c2[o2]

    def writes_to(self, skey: int, launch: int) -> np.ndarray:
        """Write-table indices into one slot in one launch, in row order."""
        k = int(skey) * self.nlaunch + int(launch)
        lo, hi = np.searchsorted(self._k1, [k, k + 1])
        return self._o1[lo:hi]

    def history(self, skey: int, before: int) -> np.ndarray:
        """Write-table indices into one slot in launches before ``before``."""
        lo, hi = np.searchsorted(self._k1, [int(skey) * self.nlaunch, int(skey) * self.nlaunch + int(before)])
        return self._o1[lo:hi]

    def last_launch_before(self, skeys: np.ndarray, launch: int) -> np.ndarray:
        """Per slot key: the last launch before ``launch`` that wrote it, -1 where none did."""
        skeys = np.asarray(skeys, np.int64)
        lo = np.searchsorted(self._k1, skeys * self.nlaunch)
        hi = np.searchsorted(self._k1, skeys * self.nlaunch + int(launch))
        if not len(self._o1):
            return np.full(len(skeys), -1, np.int64)
        return np.where(hi > lo, self.w_launch[self._o1[np.maximum(hi - 1, 0)]], -1)

    def writes_by(self, rank: int, region: int, launch: int) -> np.ndarray:
        k = (int(rank) * len(self.sw) + int(region)) * self.nlaunch + int(launch)
        order, keys = self._by_writer
        lo, hi = np.searchsorted(keys, [k, k + 1])
        return order[lo:hi]

    def _waited_slots(self, wanted: np.ndarray, elem: np.ndarray) -> np.ndarray:
        """Sorted slot keys of the first and last word every wait_begin on a wanted region covers;
        none where no write can be wider than ``widest`` slots, the only writes that ask for them
        (a write's slots are at most its words: ``nbytes`` over the smallest element)."""
        t = self.trace
        if not t.n or int(t["nbytes"].max()) // max(int(elem.min()), 1) < widest(t):
            return np.zeros(0, np.int64)
        wb = np.flatnonzero(t["kind"] == Kind.WAIT_BEGIN)
        reg = t["region"][wb].astype(np.int64)
        ok = (reg >= 0) & (reg < len(wanted))
        wb, reg = wb[ok], reg[ok]
        keep = wanted[reg]
        wb, reg = wb[keep], reg[keep]
        off = t["offset"][wb].astype(np.int64)
        words = np.maximum(t.wait_words[wb].astype(np.int64), 1)
        ends = [np.minimum(x // self.sw[reg], self.nslots[reg] - 1) for x in (off, off + words - 1)]
        keys = np.concatenate([self.skey(t["rank"][wb], reg, e) for e in ends]) if len(wb) else np.zeros(0, np.int64)
        return np.unique(keys)

    # ---- waits -----------------------------------------------------------
    def _waits(self, regions: set[int]) -> None:
        t = self.trace
        # Select the wait_begins first: region tests and int64 copies of those rows only.
        wb = np.flatnonzero(t["kind"] == Kind.WAIT_BEGIN)
        reg = t["region"][wb].astype(np.int64)
        keep = np.isin(reg, np.array(sorted(regions) or [-1], dtype=np.int64))
        rows, reg = wb[keep], reg[keep]
        slot = t["offset"][rows].astype(np.int64) // self.sw[reg] if len(rows) else rows
        sk = self.skey(t["rank"][rows], reg, slot) if len(rows) else rows
        self._wk = np.sort(sk * self.nlaunch + t["launch"][rows].astype(np.int64))

    def waited(self, skey: int, launch: int) -> bool:
        """Did anybody wait on this slot in this launch (satisfied or not)?"""
        k = int(skey) * self.nlaunch + int(launch)
        lo, hi = np.searchsorted(self._wk, [k, k + 1])
        return bool(hi > lo)

    # ---- routes ----------------------------------------------------------
    def _routes(self) -> None:
        self.routes = Routes.of(self.trace)
        self.r_rows = np.flatnonzero(self.trace["kind"] == Kind.ROUTE)

    def route_rows(self, rank, launch, token, topk) -> np.ndarray:
        """Rows of the route events for each (rank, launch, token, topk); -1 where none."""
        return self.routes.rows_of(rank, launch, token, topk)

    def route(self, rank: int, launch: int, token: int, topk: int) -> int:
        return int(self.route_rows(rank, launch, token, topk).reshape(-1)[0])


@kernel
def _select_writes(columns, layout, peer_null, value_null, waited, wide):
    """The write table: one entry per (write, slot it covers) into a wanted region.

    Writes in row order, then every put_signal's signal half into a wanted
    region (row order); each expanded to the slots it covers (a bulk put into
    a flag region counts for each).  A scalar (signal, amo) covers one element
    and keeps its op; anything else is a set, a put_signal's data half with no
    value.  ``ordered``: rows never decrease along the table.  ``waited``: the
    sorted slot keys waits name, which a write wider than ``wide`` slots keeps.
    """
    kind, region, offset, sig_region, sig_offset, nbytes, value, op, rank, peer, core, launch = columns
    wanted, elem, slot_words, nslots, slot_base, slots_per_rank, remote = layout
    n = len(kind)
    nreg = len(wanted)
    na = 0
    nb = 0
    total = 0
    w_row = w_region = w_slot = w_owner = w_value = w_op = np.empty(0, np.int64)
    w_rank = w_core = w_launch = w_skey = np.empty(0, np.int64)
    for phase in range(2):
        if phase == 1:
            w_row = np.empty(total, np.int64)
            w_region = np.empty(total, np.int64)
            w_slot = np.empty(total, np.int64)
            w_owner = np.empty(total, np.int64)
            w_value = np.empty(total, np.int64)
            w_op = np.empty(total, np.int64)
            w_rank = np.empty(total, np.int64)
            w_core = np.empty(total, np.int64)
            w_launch = np.empty(total, np.int64)
            w_skey = np.empty(total, np.int64)
        j = 0
        for half in range(2):
            for i in range(n):
                k = kind[i]
                if half == 0:
                    if not (0 <= k < len(remote) and _IS_WRITE[k]):
                        continue
                    r = np.int64(region[i])
                    if not (0 <= r < nreg and wanted[r]):
                        continue
                    o = np.int64(offset[i])
                    if k == _SIGNAL or k == _AMO:
                        ext = np.int64(1)
                        opv = np.int64(op[i])
                    else:
                        ext = max(np.int64(1), np.int64(nbytes[i]) // elem[r])
                        opv = np.int64(_SET)
                    v = value_null if k == _PUT_SIGNAL else np.int64(value[i])
                else:
                    if k != _PUT_SIGNAL:
                        continue
                    r = np.int64(sig_region[i])
                    if not (0 <= r < nreg and wanted[r]):
                        continue
                    o = np.int64(sig_offset[i])
                    ext = np.int64(1)
                    opv = np.int64(op[i])
                    v = np.int64(value[i])
                s = max(slot_words[r], np.int64(1))
                first = o // s
                last = min((o + ext - 1) // s, nslots[r] - 1)
                p = np.int64(peer[i])
                ow = p if remote[k] and p != peer_null else np.int64(rank[i])
                base = ow * slots_per_rank + slot_base[r]
                # A write wider than ``wide`` slots counts only for its first slot and the slots
                # somebody waits on: what a stuck wait's producer search reads; the rest would
                # cost memory in the values of the trace (a 2^31-byte put), not in its size.
                lo = hi = np.int64(0)
                if last - first + 1 > wide:
                    lo = np.searchsorted(waited, base + first + 1)
                    hi = np.searchsorted(waited, base + last, side="right")
                if phase == 0:
                    if half == 0:
                        na += 1
                    else:
                        nb += 1
                    if last >= first:
                        total += (last - first + 1) if last - first + 1 <= wide else 1 + (hi - lo)
                    continue
                if last < first:
                    continue
                count = last - first + 1 if last - first + 1 <= wide else 1 + (hi - lo)
                for x in range(count):
                    sl = first + x if last - first + 1 <= wide else (first if x == 0 else waited[lo + x - 1] - base)
                    w_row[j] = i
                    w_region[j] = r
                    w_slot[j] = sl
                    w_owner[j] = ow
                    w_value[j] = v
                    w_op[j] = opv
                    w_rank[j] = rank[i]
                    w_core[j] = core[i]
                    w_launch[j] = launch[i]
                    w_skey[j] = ow * slots_per_rank + slot_base[r] + sl
                    j += 1
    ordered = nb == 0 or na == 0
    return (w_row, w_region, w_slot, w_owner, w_value, w_op, w_rank, w_core, w_launch, w_skey, ordered)
