"""Reduce-scatter epilogue over comm blocks that reuse one workspace stage (atomic-add pattern §9).

D is cut into ``BLOCKS`` comm blocks of rows; each block goes through the same
symmetric workspace stage (WORKSPACE_STAGES = 1): the AIC stores the remote
contributions of the block into it (self straight into D), then the pre
``aclshmem_barrier_all`` (every peer's stage is written), the MTE bulk atomic
gets of the block from every peer, the MTE3 drain and SetAtomicNone, and the
post ``aclshmem_barrier_all`` (every peer has read this stage) before the next
block's AIC stores reuse it. The two barriers are what the data-race faults
leave out (every rank alike: a barrier_all one rank skipped would hang the rest).
"""

from __future__ import annotations

import numpy as np

from ingest.contract import DType, Engine, Op, PipeEvent, PipeOp, Role, Scope

from .reduce_base import ReduceKernel
from .sim.machine import RegionSpec

SYM, OUT = 0, 1
GARBAGE = 7
BLOCKS = 2


class ReduceScatterStaged(ReduceKernel):
    name = "reduce_scatter_staged"
    kernel_name = "matmul_reduce_scatter_staged"
    doc = "reduce-scatter over comm blocks reusing one workspace stage: pre and post barrier_all per block"
    faults = ("missing-pre-barrier", "missing-post-barrier")

    def block_rows(self, b: int) -> tuple[int, int]:
        t = self.p.tokens
        n = -(-t // BLOCKS)
        return min(b * n, t), min((b + 1) * n, t)

    def regions(self):
        p = self.p
        wb = -(-p.tokens // BLOCKS) * p.hidden  # one block of one target
        return [RegionSpec("workspace", Role.PAYLOAD, p.ranks * wb, slot_words=wb, index="rank"),
                RegionSpec("d_out", Role.OUTPUT, p.tokens * p.hidden, init=GARBAGE)]

    def body(self, m, c, g):
        p, r = self.p, c.rank
        P, H = p.ranks, p.hidden
        wb = -(-p.tokens // BLOCKS) * H
        contrib = self.contrib(g)[r]
        m.emit(c, [m.kernel(c, self.kernel_name, True)])
        for b in range(BLOCKS):
            lo, hi = self.block_rows(b)
            rows = np.arange(lo + c.core, hi, p.cores)
            offs, local = rows * H, (rows - lo) * H
            if len(rows):
                for t in range(P):  # the AIC's stores of this block into the one stage
                    if t != r:
                        m.emit(c, [m.write(c, SYM, t * wb + local, H, contrib[t].reshape(-1, H)[rows])])
                m.emit(c, [m.write(c, OUT, offs, H, contrib[r].reshape(-1, H)[rows])])
            if b or not self.plan.hit("missing-pre-barrier", round=g):  # the fault drops the first block's
                yield m.barrier(("pre", g, b), P * p.cores, Scope.ALL)
            else:
                yield  # the AIC flag only: this rank's own stores are done, a peer's may not be
            m.emit(c, [m.atomic_mode(c, Op.ADD, DType.INT32), m.pipe_sync(c, PipeOp.PIPE_BARRIER, PipeEvent.ALL)])
            if len(rows):
                for s in range(P):
                    if s != r:
                        m.emit(c, [m.get(c, Engine.MTE, s, SYM, r * wb + local, OUT, offs, H)])
                        yield
            m.emit(c, [m.pipe_sync(c, PipeOp.SET_FLAG, PipeEvent.MTE3_S),
                       m.pipe_sync(c, PipeOp.WAIT_FLAG, PipeEvent.MTE3_S),
                       m.atomic_mode(c, Op.NONE, DType.INT32), m.pipe_sync(c, PipeOp.PIPE_BARRIER, PipeEvent.ALL)])
            if b == BLOCKS - 1 or not self.plan.hit("missing-post-barrier", round=g):  # the fault: between blocks
                yield m.barrier(("post", g, b), P * p.cores, Scope.ALL)
            else:
                yield  # straight on to the next block's stores into the stage peers may still read
        self.record(m, c, g, OUT)
        m.emit(c, [m.kernel(c, self.kernel_name, False)])
