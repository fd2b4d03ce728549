"""The unified scalar atomic add over a mixed topology (atomic-add pattern §2.1, §11.2).

Every rank adds its contribution word by word into each peer's accumulator with
``aclshmem_<TYPE>_atomic_add``, which dispatches on ``topo_list[pe]``: MTE within
a node pair (HCCS), UDMA across the PCIe/SIO link, RoCE across servers (Ascend950).
Then the quiet of that transport for the peer, then an MTE signal on the peer's
done slot; core 0 waits every done slot, reads the sums and resets for the next
launch. The manifest states the platform and the per-peer transport map.

The clean kernel adds int32 (every transport takes it, on every platform). The faults
use a type a transport lacks: the unified API then calls ``kernel_abort`` on that peer,
which traps the whole kernel of the rank (every core stops where it is).

``int64-atomic-a2`` runs the kernel on an A2 (910B) machine, which the manifest then
names: no RoCE there (RoCE atomics are Ascend950 only, §2.4), so the peers across node
pairs are UDMA, and its MTE has no uint32/int64/uint64 atomic add (§2.2.1's platform
table: "not supported"; the EXT overloads are Ascend950's, §2.1). The seed does not say
what such a call does on A2; the simulator takes it to the unified API's answer to every
other (type, transport) it has no path for: ``kernel_abort`` at that atomic. (A build that
refuses it leaves no run to trace; a silently dropped add would leave the events of a
correct run and only a wrong sum.)
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, DType, Engine, Kind, Op, Role

from .reduce_base import ReduceKernel
from .sim.machine import RegionSpec

ACC, DONE = 0, 1
PLATFORM = "Ascend950"
EXT_FAULT_PLATFORM = "A2"  # where the int64-atomic-a2 fault runs the kernel
# Types each transport's scalar atomic add takes on Ascend950 (seed 004 §2.6).
SUPPORTED = {Engine.MTE: {DType.INT8, DType.INT16, DType.INT32, DType.HALF, DType.BFLOAT16, DType.FLOAT,
                          DType.UINT32, DType.INT64, DType.UINT64},
             Engine.UDMA: {DType.INT32, DType.UINT32, DType.INT64, DType.UINT64, DType.FLOAT},
             Engine.ROCE: {DType.INT32, DType.UINT32, DType.INT64, DType.UINT64}}
# The MTE scalar atomics a platform lacks (seed 004 §2.2.1: 910B alike 910C, i.e. A3; the fault runs on A2).
MTE_LACKS = {"A2": {DType.UINT32, DType.INT64, DType.UINT64}}
FAULT_DTYPE = {"float-atomic-roce": DType.FLOAT, "half-atomic-udma": DType.HALF, "int64-atomic-a2": DType.INT64}


def transport(rank: int, peer: int, platform: str = PLATFORM) -> Engine:
    """Node pairs (0,1), (2,3), ... share HCCS; across pairs, UDMA or RoCE by the link (RoCE on
    Ascend950 only: elsewhere every cross-pair link is UDMA)."""
    if rank // 2 == peer // 2:
        return Engine.MTE
    return Engine.UDMA if (rank + peer) % 2 or platform != PLATFORM else Engine.ROCE


def supported(engine: Engine, platform: str) -> set:
    return SUPPORTED[engine] - (MTE_LACKS.get(platform, set()) if engine == Engine.MTE else set())


class UnifiedAtomic(ReduceKernel):
    name = "unified_atomic"
    kernel_name = "unified_atomic_add"
    doc = "unified aclshmem_*_atomic_add over a topology of MTE, UDMA and RoCE peers, quiet, MTE done flag"
    faults = ("float-atomic-roce", "half-atomic-udma", "int64-atomic-a2")

    def __init__(self, params, plan, seed):
        super().__init__(params, plan, seed)
        self.aborted: set[tuple[int, int]] = set()  # (round, rank) whose kernel trapped
        # The machine the run is on: the whole run, whichever round the fault's int64 build runs in.
        self.platform = EXT_FAULT_PLATFORM if any(f.name == "int64-atomic-a2" for f in plan.faults) else PLATFORM

    def regions(self):
        p = self.p
        return [RegionSpec("acc", Role.OUTPUT, p.tokens * p.hidden),
                RegionSpec("done", Role.FLAG, p.ranks, reset=0, index="rank")]

    def manifest_extra(self) -> dict:
        P = self.p.ranks
        return {"platform": self.platform,
                "transport": [[transport(r, q, self.platform).wire for q in range(P)] for r in range(P)]}

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
            eng = transport(r, peer, self.platform)
            if dt not in supported(eng, self.platform):
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
