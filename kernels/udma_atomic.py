"""UDMA scalar atomic add (atomic-add pattern §2.3 / §6.3).

Every rank first copies its contribution for each peer into a UB staging tile of
that peer and puts it from there into the peer's stage slot (the peer's record of
who sent what, checked with the sums) with a UDMA put and aclshmemx_udma_quiet(pe) (UDMA takes no RMA and AMO to one PE at once), then adds
it word by word into the peer's accumulator with aclshmemx_udma_atomic_add, then
aclshmemx_udma_quiet(pe) (the add is only submitted when the call returns), then
an MTE signal sets its done slot on that peer. Core 0 of each rank waits every done slot, reads the sums, and resets
accumulator and done slots for the next launch.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, Engine, Op, Role

from .reduce_base import ReduceKernel
from .sim.machine import RegionSpec

ACC, DONE, STAGE, UB = 0, 1, 2, 3


class UdmaAtomic(ReduceKernel):
    name = "udma_atomic"
    kernel_name = "udma_atomic_add"
    doc = "UDMA put of each peer's block from UB + quiet, UDMA scalar atomic add, UDMA quiet, MTE done flag"
    faults = ("missing-quiet", "wrong-engine-quiet", "concurrent-rma-amo", "put-source-reused", "rank-stop")

    @classmethod
    def fault_bounds(cls, p):
        return {"core": min(p.cores, p.ranks)}

    def regions(self):
        p = self.p
        return [RegionSpec("acc", Role.OUTPUT, p.tokens * p.hidden),
                RegionSpec("done", Role.FLAG, p.ranks, reset=0, index="rank"),
                RegionSpec("stage", Role.PAYLOAD, p.ranks * p.tokens * p.hidden, slot_words=p.tokens * p.hidden,
                           index="rank"),
                RegionSpec("ub", Role.PAYLOAD, p.ranks * p.tokens * p.hidden)]  # one staging tile per peer

    def contrib(self, g):
        """The sums, and below them what every rank's stage must hold: rank s's block for it."""
        first = g not in self._contrib
        c = super().contrib(g)
        if first:
            H = self.p.hidden
            for r in range(self.p.ranks):
                self.want[(g, r)] = np.vstack([self.want[(g, r)], c[:, r].reshape(-1, H).astype(np.int64)])
        return c

    def record(self, m, c, g, region):
        super().record(m, c, g, region)
        if c.core == 0:
            stage = m.heap.mem[STAGE][c.rank].astype(np.int64).reshape(-1, self.p.hidden)
            self.got[(g, c.rank)] = np.vstack([self.got[(g, c.rank)], stage])

    def body(self, m, c, g):
        p, r = self.p, c.rank
        P = p.ranks
        contrib = self.contrib(g)[r]
        m.emit(c, [m.kernel(c, self.kernel_name, True)])
        words = np.arange(p.tokens * p.hidden)
        skip = self.plan.hit("missing-quiet", rank=r, core=c.core, round=g)
        wrong = self.plan.hit("wrong-engine-quiet", rank=r, core=c.core, round=g)
        together = self.plan.hit("concurrent-rma-amo", rank=r, core=c.core, round=g)
        reused = self.plan.hit("put-source-reused", rank=r, core=c.core, round=g)
        n = len(words)
        for peer in range(c.core, P, p.cores):
            tile = [peer * n]
            m.emit(c, [m.write(c, UB, tile, n, contrib[peer]),
                       m.put(c, Engine.UDMA, peer, STAGE, [r * n], None, n, src=(UB, tile))])
            if reused:  # the tile cleared for reuse before the quiet: the put may read zeros
                m.emit(c, [m.write(c, UB, tile, n, 0)])
            if not together:
                m.emit(c, [m.quiet(c, Engine.UDMA, peer)])
            m.emit(c, [m.amo(c, Engine.UDMA, peer, ACC, words, Op.ADD, contrib[peer])])
            yield
            if not skip:
                m.emit(c, [m.quiet(c, Engine.MTE if wrong else Engine.UDMA, None if wrong else peer)])
            m.emit(c, [m.signal(c, Engine.MTE, peer, DONE, r, Op.SET, 1)])
            yield
        if c.core == 0:
            w = m.wait(DONE, np.arange(P), Cmp.EQ, 1)
            while not w.done:
                g0, g1 = yield w
                m.emit(c, m.wait_parts(w, g0, g1, c), skip=w.partial)
                w.partial = 0
            self.record(m, c, g, ACC)
            m.emit(c, [m.write(c, ACC, words[:1], len(words), 0), m.write(c, DONE, np.arange(1), P, 0)])
        m.emit(c, [m.kernel(c, self.kernel_name, False)])
