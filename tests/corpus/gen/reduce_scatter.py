"""Reduce-scatter epilogue with the MTE bulk atomic (protocols.md 1.6, seed 004 section 6.1),
and the two legal ways of recording its cross-rank barrier (issue 9 item 4).

4 ranks x 2 AIV cores, 4 rows of hidden 4. Per launch and core (rows core, core+2): write the
remote contributions into the symmetric workspace (block t for target rank t) and the self
contribution straight into d_out; barrier_all; SetAtomicAdd + PipeBarrier; one get_nbi per
(peer, row) from the peer's workspace block for this rank into d_out (accumulating);
SetFlag/WaitFlag MTE3_S (the drain); SetAtomicNone + PipeBarrier; barrier_all.

barrier_all is SHMEM's epoch barrier: the local cores meet, core 0 signals
sync[my_rank] = k to every peer and waits each peer's sync[s] for k (recorded ``ge k``: the
SHMEM wait accepts k or k+1), the local cores meet again. The generation k grows by one per
barrier and is never reset (2 barriers per launch: k = 2g+1, 2g+2). Layouts:
- ``all``: every core records barrier_begin / barrier_end of scope all around the whole barrier;
- ``core0``: core 0 alone records the scope-all barrier (with its signals and waits); every core
  records a scope-core barrier before it and one after it.
"""

from __future__ import annotations

from ._sched import RAN, Gate, Runner, stall, wait
from ._trace import Trace
from .registry import case, clean, roots

P, C, ROWS, H = 4, 2, 4, 4
W = ROWS * H  # one rank's block in the workspace
NAME = "matmul_reduce_scatter"


def regions():
    return [
        {"name": "workspace", "role": "payload", "elem_bytes": 4, "length": P * W, "slot_words": W,
         "index": "rank"},
        {"name": "d_out", "role": "output", "elem_bytes": 4, "length": W},
        {"name": "sync", "role": "flag", "elem_bytes": 4, "length": P, "monotonic": True, "index": "rank"},
    ]


class ReduceScatter:
    def __init__(self, rounds=2, *, layout="all", cmp="ge", stall_wait=None, annotated=False, no_drain=()):
        self.rounds, self.layout, self.cmp = rounds, layout, cmp
        self.no_drain = set(no_drain)  # (launch, rank, core): SetAtomicNone without the MTE3_S wait
        self.stall_wait = stall_wait or {}  # (rank, k, slot) -> passes before polling that slot
        self.tr = Trace(ranks=P, cores=C, regions=regions(), protocol="reduce_scatter",
                        params={"tokens": ROWS, "hidden": H}, annotated=annotated, names=[NAME])
        self.gates: dict = {}
        self.host = [Gate(P * C) for _ in range(rounds)]

    def gate(self, *key):
        if key not in self.gates:
            self.gates[key] = Gate(C)
        return self.gates[key]

    def run(self):
        run = Runner(self.tr)
        for r in range(P):
            for c in range(C):
                run.start(r, c, self.core(r, c))
        self.hung = run.run()
        return self.tr

    def barrier_all(self, r, c, k):
        tr, core0 = self.tr, self.layout == "core0"
        if core0:
            tr.barrier(r, c, "core")
        else:
            tr.barrier(r, c, "all")
        yield from self.gate(r, k, "in").pass_()
        if core0:
            tr.barrier(r, c, "core", False)
        if c == 0:
            if core0:
                tr.barrier(r, c, "all")
            for d in range(P):
                if d != r:
                    tr.signal(r, c, d, "sync", r, k, epoch=k)
                    yield RAN
            for s in range(P):
                if s != r:
                    yield from stall(self.stall_wait.get((r, k, s), 0))
                    yield from wait(tr, r, c, "sync", s, self.cmp, k, epoch=k)
            if core0:
                tr.barrier(r, c, "all", False)
        if core0:
            tr.barrier(r, c, "core")
        yield from self.gate(r, k, "out").pass_()
        tr.barrier(r, c, "core" if core0 else "all", False)

    def core(self, r, c):
        tr = self.tr
        rows = range(c, ROWS, C)
        for g in range(self.rounds):
            if g:
                yield from self.host[g].pass_()
            tr.launch(g, [r])
            tr.kernel(r, c, NAME)
            for t in range(P):
                if t != r:
                    for row in rows:
                        tr.write(r, c, "workspace", t * W + row * H, H * 4, 10 * r + t + g)
                    yield RAN
            for row in rows:
                tr.write(r, c, "d_out", row * H, H * 4, 11 * r + g)
            yield from self.barrier_all(r, c, 2 * g + 1)
            tr.atomic_mode(r, c, "add", "int32")
            tr.pipe_sync(r, c, "pipe_barrier", "all")
            for s in range(P):
                if s != r:
                    for row in rows:
                        tr.get(r, c, s, "workspace", r * W + row * H, H * 4, "d_out", row * H)
                    yield RAN
            if (g, r, c) not in self.no_drain:
                tr.pipe_sync(r, c, "set_flag", "mte3_s")
                tr.pipe_sync(r, c, "wait_flag", "mte3_s")
            tr.atomic_mode(r, c, "none", "int32")
            tr.pipe_sync(r, c, "pipe_barrier", "all")
            yield from self.barrier_all(r, c, 2 * g + 2)
            tr.kernel(r, c, NAME, False)
            yield RAN


STUCK = {(0, 3, 3): 150}  # launch 1, barrier 3: rank 0 core 0 looks at sync[3] late
STUCK_NOTE = ("one root: rank 0 core 0's == wait on sync[3] (rank 3 already signalled 4); its sibling core "
              "and the other ranks' barriers are symptoms. Every rank runs the == code, so MT204 warnings "
              "elsewhere are acceptable")


@case
def rs_barrier_all_cores_clean():
    """Two clean launches; every core records the cross-rank barrier (scope all); bare manifest."""
    return ReduceScatter(2, layout="all").run(), clean("legal layout: barrier_all recorded on every core")


@case
def rs_barrier_core0_clean():
    """Two clean launches; core 0 alone records the scope-all barrier, every core follows it
    through a scope-core barrier before and after; bare manifest."""
    return ReduceScatter(2, layout="core0").run(), clean("legal layout: core 0 + core-scope barriers")


@case
def rs_barrier_all_cores_stuck():
    """Barrier recorded on every core; the barrier waits ``eq k`` (no k+1). In launch 1, rank 0
    core 0 polls sync[3] after rank 3 has passed barrier 3, reduced, and signalled 4: it hangs
    inside the barrier, its core 1 hangs in the same barrier, ranks 1-3 in barrier 4."""
    rs = ReduceScatter(2, layout="all", cmp="eq", stall_wait=STUCK)
    return rs.run(), roots([("MT204", 0, 0), ("MT204", None, None, "optional")], STUCK_NOTE)


@case
def rs_barrier_core0_stuck():
    """The same hang with core 0 alone recording the scope-all barrier: rank 0 core 1 hangs in
    the scope-core barrier after it, waiting for core 0."""
    rs = ReduceScatter(2, layout="core0", cmp="eq", stall_wait=STUCK)
    return rs.run(), roots([("MT204", 0, 0), ("MT204", None, None, "optional")], STUCK_NOTE)


@case
def rs_ring_wrap_lost_atomic_mode():
    """Issue 9 item 7: two clean launches dumped as binary rings; rank 1 core 0's ring was too
    small and wrapped: the records it kept begin right after launch 0's ``atomic_mode add``, so
    its first gets seem to lie outside any atomic window. The ingest report counts the lost
    records; nothing is wrong in the kernel."""
    tr = ReduceScatter(2, layout="all").run()
    mine = sorted((e for e in tr.events if (e["rank"], e["core"]) == (1, 0)), key=lambda e: e["seq"])
    opened = next(i for i, e in enumerate(mine) if e["kind"] == "atomic_mode" and e["op"] == "add")
    keep = len(mine) - opened - 1
    return tr, clean("ring wrap cut an atomic window open: partial-trace notes at most, no error root"), \
        {"ring": {(1, 0): keep}}
