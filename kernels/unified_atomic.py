"""The unified scalar atomic add over a mixed topology (atomic-add pattern §2.1, §11.2).

Every rank adds its contribution word by word into each peer's accumulator with
``aclshmem_<TYPE>_atomic_add``, which dispatches on ``topo_list[pe]``: MTE within
a node pair (HCCS), UDMA across the PCIe/SIO link, RoCE across servers (Ascend950).
Then the quiet of that transport for the peer, then an MTE signal on the peer's
done slot; core 0 waits every done slot, reads the sums and resets for the next
launch. The manifest states the platform and the per-peer transport map.

The clean kernel adds int32 (every transport takes it). The faults use a type a
transport lacks: the unified API then calls ``kernel_abort`` on that peer, which
traps the whole kernel of the rank (every core stops where it is).
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, DType, Engine, Kind, Op, Role

from .reduce_base import ReduceKernel
from .sim.machine import RegionSpec

ACC, DONE = 0, 1
PLATFORM = "Ascend950"
# Types each transport's scalar atomic add takes (seed 004 §2.6).
SUPPORTED = {Engine.MTE: {DType.INT8, DType.INT16, DType.INT32, DType.HALF, DType.BFLOAT16, DType.FLOAT,
                          DType.UINT32, DType.INT64, DType.UINT64},
             Engine.UDMA: {DType.INT32, DType.UINT32, DType.INT64, DType.UINT64, DType.FLOAT},
             Engine.ROCE: {DType.INT32, DType.UINT32, DType.INT64, DType.UINT64}}
FAULT_DTYPE = {"float-atomic-roce": DType.FLOAT, "half-atomic-udma": DType.HALF}


def transport(rank: int, peer: int) -> Engine:
    """Node pairs (0,1), (2,3), ... share HCCS; across pairs, UDMA or RoCE by the link."""
    if rank // 2 == peer // 2:
        return Engine.MTE
    return Engine.UDMA if (rank + peer) % 2 else Engine.ROCE


class UnifiedAtomic(ReduceKernel):
    name = "unified_atomic"
    kernel_name = "unified_atomic_add"
    doc = "unified aclshmem_*_atomic_add over a topology of MTE, UDMA and RoCE peers, quiet, MTE done flag"
    faults = ("float-atomic-roce", "half-atomic-udma")

    def __init__(self, params, plan, seed):
        super().__init__(params, plan, seed)
        self.aborted: set[tuple[int, int]] = set()  # (round, rank) whose kernel trapped

    def regions(self):
        p = self.p
        return [RegionSpec("acc", Role.OUTPUT, p.tokens * p.hidden),
                RegionSpec("done", Role.FLAG, p.ranks, reset=0, index="rank")]

    def manifest_extra(self) -> dict:
        P = self.p.ranks
        return {"platform": PLATFORM,
                "transport": [[transport(r, q).wire for q in range(P)] for r in range(P)]}

    def dtype(self, g: int) -> DType:
        for name, dt in FAULT_DTYPE.items():
            if self.plan.hit(name, round=g):
                return dt
        return DType.INT32

    def body(self, m, c, g):
        p, r = self.p, c.rank
        P = p.ranks
        contrib = self.contrib(g)[r]
        dt = self.dtype(g)
        m.emit(c, [m.kernel(c, self.kernel_name, True)])
        words = np.arange(p.tokens * p.hidden)
        for peer in range(c.core, P, p.cores):
            if (g, r) in self.aborted:
                return  # another core of this rank trapped: the kernel is gone
            eng = transport(r, peer)
            if dt not in SUPPORTED[eng]:
                # kernel_abort in the unified API: the call is recorded, none of it happens.
                m.emit(c, [m.part(Kind.AMO, len(words), engine=int(eng), peer=peer, region=ACC, offset=words,
                                  op=int(Op.ADD), value=contrib[peer], dtype=int(dt))])
                self.aborted.add((g, r))
                return
            amo = m.amo(c, eng, peer, ACC, words, Op.ADD, contrib[peer])
            amo.cols["dtype"] = int(dt)
            m.emit(c, [amo])
            yield
            m.emit(c, [m.quiet(c, eng, peer)])
            m.emit(c, [m.signal(c, Engine.MTE, peer, DONE, r, Op.SET, 1)])
            yield
        if c.core == 0:
            w = m.wait(DONE, np.arange(P), Cmp.EQ, 1)
            while not w.done:
                g0, g1 = yield w
                if (g, r) in self.aborted:
                    return  # trapped while waiting: the wait never returns to the kernel
                m.emit(c, m.wait_parts(w, g0, g1, c), skip=w.partial)
                w.partial = 0
            if (g, r) in self.aborted:
                return
            self.record(m, c, g, ACC)
            m.emit(c, [m.write(c, ACC, words[:1], len(words), 0), m.write(c, DONE, np.arange(1), P, 0)])
        if (g, r) in self.aborted:
            return
        m.emit(c, [m.kernel(c, self.kernel_name, False)])
