"""An all-gather whose cross-rank barrier is made of atomics and waits, not a barrier event.

P ranks x C cores, two stages per launch. Per stage every core writes its block of the rank's
``stage`` window (a local write), the rank's cores meet (scope core), core 0 runs the barrier,
the cores meet again, then each core gets its block from every peer's stage into ``out`` and
quiets, and one more barrier follows (the stage is written again only after every peer read it). Barriers (``kind``):
- ``block``: DeepEP's barrier_block: for each rank i, an amo add +1024 on my own sig[i] and an
  amo add -1024 on rank i's sig[my_rank], then a wait ``le 0`` on each own sig[i]; balanced, so
  it is reused with no reset and no epoch (the word is 0 between barriers);
- ``central``: an amo add 1 on rank 0's arrive word (UDMA, then the UDMA quiet for rank 0), rank 0
  waits arrive ``ge P*k`` and signals release = k to every rank; all wait release ``ge k``. The
  counters only grow, across launches too.
Launches are separated by the host's stream sync (not recorded).
"""

from __future__ import annotations

from ._sched import RAN, Gate, Runner, wait
from ._trace import Trace

H = 4
NAME = "allgather_amo_barrier"


class AtomicBarrier:
    def __init__(self, ranks, cores, launches, *, kind="block", annotated=False, clocks=None, stall=None,
                 faults=None):
        self.P, self.C, self.G, self.kind = ranks, cores, launches, kind
        self.stall = stall or {}  # (launch, rank, core, stage) -> passes before the stage's writes
        self.f = faults or {}
        regs = [
            {"name": "stage", "role": "payload", "elem_bytes": 4, "length": cores * H},
            {"name": "out", "role": "output", "elem_bytes": 4, "length": ranks * cores * H},
        ]
        if kind == "block":
            regs.append({"name": "sig", "role": "counter", "elem_bytes": 4, "length": ranks, "reset": 0,
                         "index": "rank"})
        else:
            regs += [{"name": "arrive", "role": "counter", "elem_bytes": 8, "length": 1, "monotonic": True},
                     {"name": "release", "role": "flag", "elem_bytes": 8, "length": 1, "monotonic": True}]
        self.tr = Trace(ranks=ranks, cores=cores, regions=regs, protocol="allgather", annotated=annotated,
                        names=[NAME], clocks=clocks)
        self.host = [Gate(ranks * cores) for _ in range(launches)]
        self.gates: dict = {}
        self.barriers = 0

    def gate(self, *key):
        if key not in self.gates:
            self.gates[key] = Gate(self.C)
        return self.gates[key]

    def run(self):
        run = Runner(self.tr)
        for r in range(self.P):
            for c in range(self.C):
                run.start(r, c, self.core(r, c))
        self.hung = run.run()
        return self.tr

    def barrier(self, g, r, c, k):
        """The k-th barrier of the whole run (1, 2, ...), the same k on every rank."""
        tr = self.tr
        tr.barrier(r, c, "core")
        yield from self.gate(g, r, k, "in").pass_()
        tr.barrier(r, c, "core", False)
        if c == 0:
            if self.kind == "block":
                for i in range(self.P):
                    tr.amo(r, c, r, "sig", i, 1024, engine="mte")
                    tr.amo(r, c, i, "sig", r, -1024, engine="mte")
                    yield RAN
                for i in range(self.P):
                    yield from wait(tr, r, c, "sig", i, "le", 0)
            else:
                tr.amo(r, c, 0, "arrive", 0, 1, engine="udma")
                if (g, r) not in self.f.get("no_amo_quiet", ()):
                    tr.quiet(r, c, "udma", peer=0)
                yield RAN
                if r == 0:
                    yield from wait(tr, r, c, "arrive", 0, "ge", self.P * k)
                    for d in range(self.P):
                        tr.signal(r, c, d, "release", 0, k)
                        yield RAN
                yield from wait(tr, r, c, "release", 0, "ge", k)
        tr.barrier(r, c, "core")
        yield from self.gate(g, r, k, "out").pass_()
        tr.barrier(r, c, "core", False)

    def core(self, r, c):
        tr, k = self.tr, 0
        for g in range(self.G):
            if g:
                yield from self.host[g].pass_()
            tr.launch(g, [r])
            tr.kernel(r, c, NAME)
            yield RAN
            for stage in range(2):
                for _ in range(self.stall.get((g, r, c, stage), 0)):
                    yield RAN
                tr.write(r, c, "stage", c * H, H * 4, 100 * g + 10 * stage + r)
                early = (g, r, stage) in self.f.get("early_get", ())  # the pre barrier after the gets
                k += 1
                if not early:
                    yield from self.barrier(g, r, c, k)
                for i in range(1, self.P):
                    s = (r + i) % self.P
                    tr.get(r, c, s, "stage", c * H, H * 4, "out", (s * self.C + c) * H)
                    yield RAN
                tr.quiet(r, c)
                if early:
                    yield from self.barrier(g, r, c, k)
                k += 1  # nobody writes a stage again before every peer has read it
                yield from self.barrier(g, r, c, k)
            tr.kernel(r, c, NAME, False)
            yield RAN
