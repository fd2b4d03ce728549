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

import numpy as np

from ingest.contract import Kind, Op

from ._waitfor_scan import expand_slots

_WRITE_KINDS = (Kind.PUT, Kind.SIGNAL, Kind.AMO, Kind.WRITE, Kind.PUT_SIGNAL)


class Tables:
    def __init__(self, trace, regions: set[int]):
        self.trace = trace
        m = trace.manifest
        self.sw = np.array([r.slot_words for r in m.regions] or [1], dtype=np.int64)
        nslots = np.array([-(-r.length // r.slot_words) for r in m.regions] or [0], dtype=np.int64)
        self.nslots = nslots
        self.slot_base = np.concatenate(([0], np.cumsum(nslots)[:-1])).astype(np.int64)
        self.slots_per_rank = int(nslots.sum()) or 1
        launch = trace["launch"].astype(np.int64)
        self.nlaunch = int(launch.max()) + 1 if trace.n else 1
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
        t = self.trace
        kind = t["kind"]
        reg = t["region"].astype(np.int64)
        want = np.array(sorted(regions) or [-1], dtype=np.int64)
        is_w = np.isin(kind, np.array([int(k) for k in _WRITE_KINDS], dtype=kind.dtype))
        a = np.flatnonzero(is_w & np.isin(reg, want))
        ps = kind == Kind.PUT_SIGNAL
        sreg = t["sig_region"].astype(np.int64)
        b = np.flatnonzero(ps & np.isin(sreg, want))
        elem = np.array([r.elem_bytes for r in t.manifest.regions] or [1], dtype=np.int64)
        nbytes = t["nbytes"].astype(np.int64)
        scalar = np.isin(kind[a], np.array([Kind.SIGNAL, Kind.AMO], dtype=kind.dtype))
        extent = np.where(scalar, 1, np.maximum(1, nbytes[a] // elem[reg[a]]))
        value = t["value"]
        op = t["op"].astype(np.int64)
        vnull = t.null("value")
        a_val = np.where(kind[a] == Kind.PUT_SIGNAL, vnull, value[a])
        a_op = np.where(scalar, op[a], int(Op.SET))
        rows = np.concatenate((a, b))
        region = np.concatenate((reg[a], sreg[b]))
        offset = np.concatenate((t["offset"][a], t["sig_offset"][b])).astype(np.int64)
        extent = np.concatenate((extent, np.ones(len(b), np.int64)))
        vals = np.concatenate((a_val, value[b])).astype(np.int64)
        ops = np.concatenate((a_op, op[b])).astype(np.int64)
        owner = t.owner[rows].astype(np.int64)
        sw = self.sw[region] if len(rows) else np.zeros(0, np.int64)
        first = offset // np.maximum(sw, 1)
        last = np.minimum((offset + extent - 1) // np.maximum(sw, 1), self.nslots[region] - 1)
        item, slot = expand_slots(first, last)
        self.w_row = rows[item]
        self.w_region = region[item]
        self.w_slot = slot
        self.w_owner = owner[item]
        self.w_value = vals[item]
        self.w_op = ops[item]
        self.w_rank = t["rank"][self.w_row].astype(np.int64)
        self.w_core = t["core"][self.w_row].astype(np.int64)
        self.w_launch = t["launch"][self.w_row].astype(np.int64)
        self.w_skey = self.skey(self.w_owner, self.w_region, self.w_slot) if len(item) else np.zeros(0, np.int64)
        # Index 1: by slot, then launch, then row (a stable history per slot).
        o1 = np.lexsort((self.w_row, self.w_launch, self.w_skey))
        self._o1 = o1
        self._k1 = (self.w_skey * self.nlaunch + self.w_launch)[o1]
        # Index 2: by writer rank, region, launch.
        c2 = (self.w_rank * len(self.sw) + self.w_region) * self.nlaunch + self.w_launch
        o2 = np.lexsort((self.w_row, c2))
        self._o2 = o2
        self._k2 = c2[o2]

    def writes_to(self, skey: int, launch: int) -> np.ndarray:
        """Write-table indices into one slot in one launch, in row order."""
        k = int(skey) * self.nlaunch + int(launch)
        lo, hi = np.searchsorted(self._k1, [k, k + 1])
        return self._o1[lo:hi]

    def history(self, skey: int, before: int) -> np.ndarray:
        """Write-table indices into one slot in launches before ``before``."""
        lo, hi = np.searchsorted(self._k1, [int(skey) * self.nlaunch, int(skey) * self.nlaunch + int(before)])
        return self._o1[lo:hi]

    def writes_by(self, rank: int, region: int, launch: int) -> np.ndarray:
        k = (int(rank) * len(self.sw) + int(region)) * self.nlaunch + int(launch)
        lo, hi = np.searchsorted(self._k2, [k, k + 1])
        return self._o2[lo:hi]

    # ---- waits -----------------------------------------------------------
    def _waits(self, regions: set[int]) -> None:
        t = self.trace
        reg = t["region"].astype(np.int64)
        rows = np.flatnonzero((t["kind"] == Kind.WAIT_BEGIN)
                              & np.isin(reg, np.array(sorted(regions) or [-1], dtype=np.int64)))
        slot = t["offset"][rows].astype(np.int64) // self.sw[reg[rows]] if len(rows) else rows
        sk = self.skey(t["rank"][rows], reg[rows], slot) if len(rows) else rows
        self._wk = np.sort(sk * self.nlaunch + t["launch"][rows].astype(np.int64))

    def waited(self, skey: int, launch: int) -> bool:
        """Did anybody wait on this slot in this launch (satisfied or not)?"""
        k = int(skey) * self.nlaunch + int(launch)
        lo, hi = np.searchsorted(self._wk, [k, k + 1])
        return bool(hi > lo)

    # ---- routes ----------------------------------------------------------
    def _routes(self) -> None:
        t = self.trace
        rows = np.flatnonzero(t["kind"] == Kind.ROUTE)
        self.r_rows = rows
        if not len(rows):
            self._rk = np.zeros(0, np.int64)
            self._ro = rows
            return
        tok = t["token"][rows].astype(np.int64)
        topk = t["topk"][rows].astype(np.int64)
        self._T = int(tok.max()) + 1
        self._K = int(topk.max()) + 1
        k = self._route_key(t["rank"][rows], t["launch"][rows], tok, topk)
        self._ro = rows[np.argsort(k, kind="stable")]
        self._rk = np.sort(k, kind="stable")

    def _route_key(self, rank, launch, token, topk):
        return ((np.asarray(rank, np.int64) * self.nlaunch + np.asarray(launch, np.int64)) * self._T
                + np.asarray(token, np.int64)) * self._K + np.asarray(topk, np.int64)

    def route_rows(self, rank, launch, token, topk) -> np.ndarray:
        """Rows of the route events for each (rank, launch, token, topk); -1 where none."""
        rank, launch, token, topk = np.broadcast_arrays(*(np.asarray(x, np.int64) for x in (rank, launch, token, topk)))
        out = np.full(rank.shape, -1, np.int64)
        if not len(self._rk):
            return out
        ok = (token >= 0) & (topk >= 0) & (token < self._T) & (topk < self._K)
        k = self._route_key(rank, launch, token, topk)
        i = np.minimum(np.searchsorted(self._rk, k), len(self._rk) - 1)
        hit = ok & (self._rk[i] == k)
        out[hit] = self._ro[i[hit]]
        return out

    def route(self, rank: int, launch: int, token: int, topk: int) -> int:
        return int(self.route_rows(rank, launch, token, topk).reshape(-1)[0])
