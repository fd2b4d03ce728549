"""UDMA bulk push, chunked under the engine's request limit (seed 001, UDMA primitives).

Every core of a rank pushes its part of the rank's big symmetric buffer (an expert's
weights, a KV block: 384 MB a core) into the same part of the next rank's buffer over
the PCIe/SIO link with ``aclshmemx_udma_put_nbi``, in requests of 128 MB, since one
UDMA request carries at most 256 MB; then ``aclshmemx_udma_quiet(pe)`` and an MTE
signal on the core's ready slot on that peer. Core 0 of each rank waits every ready
slot, checks the buffer and resets the slots for the next launch.

The buffer is kept in 4 MB blocks (``RegionSpec.block``): each request writes its
stamp (round, sender, core) into every block it covers, and the check reads one
element of each block, so a request cut short shows as the blocks it did not reach.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, Engine, Op, Role

from .base import Kernel
from .sim.machine import RegionSpec

SHARD, READY = 0, 1
BLOCK = 1 << 20  # int32 elements a simulated word stands for: 4 MB
PART = 96 * BLOCK  # elements a core pushes: 384 MB
CHUNK = 32 * BLOCK  # elements one request of the kernel moves: 128 MB


class UdmaBulk(Kernel):
    name = "udma_bulk"
    kernel_name = "udma_bulk_push"
    doc = "UDMA put of a 384 MB buffer part per core to the next rank in 128 MB requests, quiet, MTE ready flag"
    faults = ("udma-put-unchunked",)

    def regions(self):
        C = self.p.cores
        return [RegionSpec("shard", Role.PAYLOAD, C * PART, slot_words=PART, block=BLOCK),
                RegionSpec("ready", Role.FLAG, C, reset=0)]

    def stamp(self, g: int, sender: int, core: int) -> int:
        return 1 + (g * self.p.ranks + sender) * self.p.cores + core

    def program(self, m, c):
        p = self.p
        for g in range(p.rounds):
            yield from self.host_round(m, c, g)
            yield from self.body(m, c, g)

    def body(self, m, c, g):
        p, r = self.p, c.rank
        peer = (r + 1) % p.ranks
        m.emit(c, [m.kernel(c, self.kernel_name, True)])
        if self.plan.hit("udma-put-unchunked", rank=r, core=c.core, round=g):
            sizes = [PART]  # the chunk loop lost: the whole part as one request
        else:
            sizes = [CHUNK] * (PART // CHUNK)
        off = c.core * PART
        for n in sizes:
            m.emit(c, [m.put(c, Engine.UDMA, peer, SHARD, [off], self.stamp(g, r, c.core), n)])
            off += n
            yield
        m.emit(c, [m.quiet(c, Engine.UDMA, peer), m.signal(c, Engine.MTE, peer, READY, c.core, Op.SET, 1)])
        yield
        if c.core == 0:
            w = m.wait(READY, np.arange(p.cores), Cmp.EQ, 1)
            while not w.done:
                g0, g1 = yield w
                m.emit(c, m.wait_parts(w, g0, g1, c), skip=w.partial)
                w.partial = 0
            self.record(m, c, g)
            m.emit(c, [m.write(c, READY, np.arange(1), p.cores, 0)])
        m.emit(c, [m.kernel(c, self.kernel_name, False)])

    def record(self, m, c, g) -> None:
        """One element of every 4 MB block of the rank's buffer, against the sender's stamps."""
        p = self.p
        sender = (c.rank - 1) % p.ranks
        blocks = PART // BLOCK
        self.want[(g, c.rank)] = np.repeat([[self.stamp(g, sender, k)] for k in range(p.cores)], blocks, axis=1)
        self.got[(g, c.rank)] = m.heap.mem[SHARD][c.rank].astype(np.int64).reshape(p.cores, blocks).copy()
