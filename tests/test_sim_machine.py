"""Semantics of the simulated SHMEM machine, on tiny hand-written core programs."""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, Engine, Kind, Op, PipeEvent, PipeOp, Role
from kernels.sim import Machine, RegionSpec
from kernels.sim.ops import Signal

REGS = [RegionSpec("data", Role.PAYLOAD, 16), RegionSpec("flag", Role.FLAG, 4), RegionSpec("out", Role.OUTPUT, 16)]
DATA, FLAG, OUT = 0, 1, 2


def machine(seed=0, land_prob=0.0, **kw):
    return Machine(2, 1, REGS, seed, land_prob=land_prob, **kw)


def run(m, progs):
    for (rank, core), prog in progs.items():
        m.spawn(rank, core, prog(m, m.core(rank, core)))
    return m.run()


def test_pending_put_lands_only_at_covering_quiet():
    seen = {}

    def prog(m, c):
        m.emit(c, [m.put(c, Engine.MTE, 1, DATA, [0], np.arange(4), 4)])
        yield
        seen["before"] = m.heap.mem[DATA][1][:4].copy()
        m.emit(c, [m.quiet(c, Engine.SDMA)])  # the wrong engine: nothing completes
        seen["sdma"] = m.heap.mem[DATA][1][:4].copy()
        m.emit(c, [m.quiet(c, Engine.MTE)])
        seen["after"] = m.heap.mem[DATA][1][:4].copy()

    res = run(machine(), {(0, 0): prog})
    assert not res.hung
    assert (seen["before"] == 0).all() and (seen["sdma"] == 0).all()
    assert (seen["after"] == np.arange(4)).all()


def test_mte_quiet_does_not_complete_sdma():
    seen = {}

    def prog(m, c):
        m.emit(c, [m.put(c, Engine.SDMA, 1, DATA, [0], 5, 1)])
        m.emit(c, [m.quiet(c, Engine.MTE)])
        seen["mte"] = int(m.heap.mem[DATA][1][0])
        m.emit(c, [m.quiet(c, Engine.SDMA)])
        seen["sdma"] = int(m.heap.mem[DATA][1][0])
        yield

    run(machine(), {(0, 0): prog})
    assert seen == {"mte": 0, "sdma": 5}


def test_udma_quiet_completes_only_that_peer():
    m = Machine(3, 1, REGS, 0, land_prob=0.0)
    seen = {}

    def prog(m, c):
        m.emit(c, [m.amo(c, Engine.UDMA, 1, DATA, [0], Op.ADD, 3), m.amo(c, Engine.UDMA, 2, DATA, [0], Op.ADD, 4)])
        m.emit(c, [m.quiet(c, Engine.UDMA, 1)])
        seen["q1"] = (int(m.heap.mem[DATA][1][0]), int(m.heap.mem[DATA][2][0]))
        yield

    run(m, {(0, 0): prog})
    assert seen["q1"] == (3, 0)


def test_signal_overtakes_pending_payload_and_consumer_reads_stale():
    got = {}

    def producer(m, c):
        m.emit(c, [m.put(c, Engine.MTE, 1, DATA, [0], 42, 1)])  # no quiet before the flag
        m.emit(c, [m.signal(c, Engine.MTE, 1, FLAG, [0], Op.SET, 1)])
        yield

    def consumer(m, c):
        w = m.wait(FLAG, [0], Cmp.EQ, 1)
        yield w
        got["payload"] = int(m.heap.mem[DATA][1][0])

    run(machine(), {(0, 0): producer, (1, 0): consumer})
    assert got["payload"] == 0  # stale: the payload was still in flight


def test_put_signal_orders_payload_before_signal():
    got = {}

    def producer(m, c):
        m.emit(c, [m.put_signal(c, Engine.MTE, 1, DATA, [0], 42, 1, Signal(FLAG, [0], Op.SET, 1))])
        yield

    def consumer(m, c):
        yield m.wait(FLAG, [0], Cmp.EQ, 1)
        got["payload"] = int(m.heap.mem[DATA][1][0])

    res = run(machine(land_prob=0.5), {(0, 0): producer, (1, 0): consumer})
    assert not res.hung and got["payload"] == 42


def _atomic_reduce(drain: bool) -> int:
    def prog(m, c):
        if c.rank == 1:
            m.emit(c, [m.write(c, DATA, [0], 1, 5)])
            return
        yield m.barrier("b", 2, None)
        m.emit(c, [m.write(c, OUT, [0], 1, 10)])
        m.emit(c, [m.atomic_mode(c, Op.ADD)])
        m.emit(c, [m.get(c, Engine.MTE, 1, DATA, [0], OUT, [0], 1)])
        if drain:
            m.emit(c, [m.pipe_sync(c, PipeOp.WAIT_FLAG, PipeEvent.MTE3_S)])
        m.emit(c, [m.atomic_mode(c, Op.NONE)])
        m.emit(c, [m.pipe_sync(c, PipeOp.PIPE_BARRIER, PipeEvent.ALL)])

    def writer(m, c):
        m.emit(c, [m.write(c, DATA, [0], 1, 5)])
        yield m.barrier("b", 2, None)

    m = machine()
    run(m, {(0, 0): prog, (1, 0): writer})
    return int(m.heap.mem[OUT][0][0])


def test_atomic_mode_in_force_at_landing_decides():
    assert _atomic_reduce(drain=True) == 15  # accumulated
    assert _atomic_reduce(drain=False) == 5  # SetAtomicNone first: the late write overwrote


def test_hang_detection_and_dump_shape():
    def waiter(m, c):
        yield m.wait(FLAG, [2], Cmp.EQ, 1)

    m = machine()
    res = run(m, {(0, 0): waiter})
    assert res.hung and res.stuck[0][:2] == (0, 0)
    kinds = np.concatenate([ch[0] for ch in m.core(0, 0).log.chunks])
    assert list(kinds) == [Kind.WAIT_BEGIN]  # no wait_end for the stuck wait


def test_no_hang_while_ops_pending():
    def producer(m, c):
        m.emit(c, [m.put(c, Engine.MTE, 1, FLAG, [0], 1, 1)])  # never quieted: lands eventually
        yield

    def consumer(m, c):
        yield m.wait(FLAG, [0], Cmp.EQ, 1)

    res = run(machine(), {(0, 0): producer, (1, 0): consumer})
    assert not res.hung


def test_determinism_per_seed_and_variety_across_seeds():
    from kernels.api import simulate
    from kernels.base import Params

    def trace(seed):
        from kernels import api
        holder = {}
        orig = api.Machine.run

        def spy(self, *a, **k):
            holder["m"] = self
            return orig(self, *a, **k)
        api.Machine.run = spy
        try:
            simulate("classic", Params(ranks=4, cores=2, tokens=8), seed=seed)
        finally:
            api.Machine.run = orig
        m = holder["m"]
        return [np.concatenate([ch[2] for ch in c.log.chunks]) for c in m.cores]

    a, b, c = trace(3), trace(3), trace(4)
    assert all((x == y).all() for x, y in zip(a, b))
    assert any(len(x) != len(y) or (x != y).any() for x, y in zip(a, c))


def test_ring_wrap_accounted_as_lost(tmp_path):
    from ingest.dataset import Dataset
    from kernels.api import Recording, simulate
    from kernels.base import Params

    t = simulate("classic", Params(ranks=2, cores=2, tokens=8), seed=0, out=tmp_path,
                 recording=Recording(ring_capacity=20))
    d = Dataset(tmp_path / "dataset")
    assert t.lost > 0 and d.report.lost == t.lost
    assert d.num_rows() + t.lost == t.events
    for core in d.report.cores:
        assert core.rows <= 20 and core.first_seq == core.lost
