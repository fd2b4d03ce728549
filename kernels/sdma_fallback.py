"""SDMA fallback reduce (atomic-add pattern §4): no inline reduce on SDMA.

D is cut into one contiguous chunk per core; each core, for every peer but
self in turn: sdma get_nbi of that peer's contribution to its chunk into UB, SDMA
quiet, add D's chunk in UB, plain DataCopy back to D. Cores never share a chunk,
so plain writes are safe; peers are serial because UB holds one at a time.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import DType, Engine, Op, PipeEvent, PipeOp, Role, Scope

from .reduce_base import ReduceKernel
from .sim.machine import RegionSpec

SYM, OUT, UB = 0, 1, 2


class SdmaFallback(ReduceKernel):
    name = "sdma_fallback"
    kernel_name = "reduce_sdma_fallback"
    doc = "SDMA fallback reduce: one chunk per core, peers serial, add in UB, plain write back"
    faults = ("same-chunk", "wrong-engine-quiet", "sdma-get-in-atomic", "rank-stop")

    def chunk(self, core):
        p = self.p
        n = -(-p.tokens // p.cores)
        lo, hi = min(core * n, p.tokens), min((core + 1) * n, p.tokens)
        return lo * p.hidden, (hi - lo) * p.hidden

    @classmethod
    def fault_bounds(cls, p):
        return {"core": p.cores}

    def regions(self):
        p = self.p
        w = p.tokens * p.hidden
        n = -(-p.tokens // p.cores) * p.hidden
        return [RegionSpec("workspace", Role.PAYLOAD, p.ranks * w, slot_words=w, index="rank"),
                RegionSpec("d_out", Role.OUTPUT, w, init=7),
                RegionSpec("ub", Role.PAYLOAD, p.cores * n, slot_words=n)]

    def body(self, m, c, g):
        p, r = self.p, c.rank
        P = p.ranks
        w = p.tokens * p.hidden
        contrib = self.contrib(g)[r]
        m.emit(c, [m.kernel(c, self.kernel_name, True)])
        off, n = self.chunk(c.core)
        if n:
            for t in range(P):
                if t != r:
                    m.emit(c, [m.write(c, SYM, t * w + off, n, contrib[t][off:off + n])])
            m.emit(c, [m.write(c, OUT, off, n, contrib[r][off:off + n])])
        yield m.barrier(("pre", g), P * p.cores, Scope.ALL)
        if self.plan.hit("same-chunk", rank=r, core=c.core, round=g):
            off, n = self.chunk((c.core + 1) % p.cores)  # rowStart from the wrong block index
        ub = c.core * (-(-p.tokens // p.cores) * p.hidden)
        wrong = self.plan.hit("wrong-engine-quiet", rank=r, core=c.core, round=g)
        if n and self.plan.hit("sdma-get-in-atomic", rank=r, core=c.core, round=g):
            yield from self.bulk_atomic(m, c, g, off, n)
            return
        mem = m.heap.mem
        for s in range(P):
            if s == r or not n:
                continue
            m.emit(c, [m.get(c, Engine.SDMA, s, SYM, r * w + off, UB, ub, n)])
            yield
            m.emit(c, [m.quiet(c, Engine.MTE if wrong else Engine.SDMA)])
            acc = mem[UB][r][ub:ub + n].astype(np.int64) + mem[OUT][r][off:off + n]  # AscendC::Add in UB
            yield  # the vector add takes its time; D is read above, written below
            m.emit(c, [m.write(c, OUT, off, n, acc)])
        yield from self.finish(m, c, g)

    def finish(self, m, c, g):
        yield m.barrier(("post", g), self.p.ranks * self.p.cores, Scope.ALL)
        self.record(m, c, g, OUT)
        m.emit(c, [m.kernel(c, self.kernel_name, False)])

    def bulk_atomic(self, m, c, g, off, n):
        """The MTE bulk-atomic pattern with SDMA gets: SetAtomicAdd, every peer's chunk straight into D.
        SDMA writes its destination plainly, so each get replaces D's chunk instead of adding to it."""
        r, w = c.rank, self.p.tokens * self.p.hidden
        m.emit(c, [m.atomic_mode(c, Op.ADD, DType.INT32), m.pipe_sync(c, PipeOp.PIPE_BARRIER, PipeEvent.ALL)])
        for s in range(self.p.ranks):
            if s != r:
                m.emit(c, [m.get(c, Engine.SDMA, s, SYM, r * w + off, OUT, off, n)])
                yield
        m.emit(c, [m.quiet(c, Engine.SDMA), m.atomic_mode(c, Op.NONE, DType.INT32)])
        yield from self.finish(m, c, g)
