"""Reduce-scatter epilogue with the MTE bulk atomic (matmul_reduce_scatter.h l.241-297).

Per rank: the self contribution is written straight into D (plain, outside the
window) and the remote contributions into the symmetric workspace; then
barrier_all, SetAtomicAdd + PipeBarrier, one get_nbi per tile from every peer but
self (its MTE3 write into D accumulates), SetFlag/WaitFlag MTE3_S (the drain),
SetAtomicNone + PipeBarrier, barrier_all. D starts as garbage (an output buffer
the host never clears), so only the plain self write makes it right.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import DType, Engine, Op, PipeEvent, PipeOp, Role, Scope

from .reduce_base import ReduceKernel
from .sim.machine import RegionSpec

SYM, OUT = 0, 1
GARBAGE = 7


class ReduceScatter(ReduceKernel):
    name = "reduce_scatter"
    kernel_name = "matmul_reduce_scatter"
    doc = "MTE bulk atomic reduce-scatter: barrier, SetAtomicAdd, get_nbi from peers, MTE3 drain, none"
    faults = ("atomic-none-early", "plain-write-in-window", "self-via-atomic", "rank-stop")

    def regions(self):
        p = self.p
        w = p.tokens * p.hidden
        return [RegionSpec("workspace", Role.PAYLOAD, p.ranks * w, slot_words=w, index="rank"),
                RegionSpec("d_out", Role.OUTPUT, w, init=GARBAGE)]

    def body(self, m, c, g):
        p, r = self.p, c.rank
        P, H = p.ranks, p.hidden
        w = p.tokens * H
        contrib = self.contrib(g)[r]  # (P targets, w)
        rows = np.arange(c.core, p.tokens, p.cores)  # this core's tiles: one row each
        offs = rows * H
        m.emit(c, [m.kernel(c, self.kernel_name, True)])
        in_window = self.plan.hit("plain-write-in-window", rank=r, core=c.core, round=g)
        twice = self.plan.hit("self-via-atomic", rank=r, core=c.core, round=g)
        if len(rows):
            for t in range(P):  # the AIC's stores: remote blocks (and, faulty, self) to the workspace
                if t != r or twice:
                    m.emit(c, [m.write(c, SYM, t * w + offs, H, contrib[t].reshape(-1, H)[rows])])
            if not in_window:
                m.emit(c, [m.write(c, OUT, offs, H, contrib[r].reshape(-1, H)[rows])])
        yield m.barrier(("pre", g), P * p.cores, Scope.ALL)
        m.emit(c, [m.atomic_mode(c, Op.ADD, DType.INT32), m.pipe_sync(c, PipeOp.PIPE_BARRIER, PipeEvent.ALL)])
        if in_window and len(rows):
            m.emit(c, [m.write(c, OUT, offs, H, contrib[r].reshape(-1, H)[rows])])
        if len(rows):
            for s in range(P):
                if s == r and not twice:
                    continue  # self was written by the AIC path already
                m.emit(c, [m.get(c, Engine.MTE, s, SYM, r * w + offs, OUT, offs, H)])
                yield
        if not self.plan.hit("atomic-none-early", rank=r, core=c.core, round=g):
            m.emit(c, [m.pipe_sync(c, PipeOp.SET_FLAG, PipeEvent.MTE3_S),
                       m.pipe_sync(c, PipeOp.WAIT_FLAG, PipeEvent.MTE3_S)])
        m.emit(c, [m.atomic_mode(c, Op.NONE, DType.INT32)])
        yield  # gets still in flight land now, as plain writes
        m.emit(c, [m.pipe_sync(c, PipeOp.PIPE_BARRIER, PipeEvent.ALL)])
        yield m.barrier(("post", g), P * p.cores, Scope.ALL)
        self.record(m, c, g, OUT)
        m.emit(c, [m.kernel(c, self.kernel_name, False)])
