"""A generation barrier on one core, the data exchange on the other (the OpenSHMEM example's layout:
core 0 runs the barrier, its sibling core finishes the launch without it).

4 ranks x 2 cores, no host sync between launches: launch g of a rank starts once both its cores
ended launch g-1 (stream order, not recorded). Core 1 puts its row to every rank's data slot
[my_rank] (half g % 2), quiets, sets flag[my_rank] = g+1 there, then waits every flag[s] ge g+1.
Core 0 runs the end-of-launch generation barrier k = g+1: gen[my_rank] = k to every rank (self
included), then a wait on every gen[s] of its own memory. ``flag`` and ``gen`` only grow.
"""

from __future__ import annotations

from ._sched import RAN, Gate, Runner, stall, wait
from ._trace import Trace
from .registry import case, roots

P, C, H = 4, 2, 4
NAME = "split_generation"


def regions():
    return [
        {"name": "data", "role": "payload", "elem_bytes": 4, "length": 2 * P * H, "slot_words": H,
         "index": "rank"},
        {"name": "flag", "role": "flag", "elem_bytes": 4, "length": P, "monotonic": True, "index": "rank"},
        {"name": "gen", "role": "flag", "elem_bytes": 4, "length": P, "monotonic": True, "index": "rank"},
    ]


class SplitGeneration:
    def __init__(self, rounds=2, *, cmp="ge", stall_wait=None):
        self.rounds, self.cmp = rounds, cmp
        self.stall_wait = stall_wait or {}  # (rank, k, slot) -> passes before core 0 polls gen[slot]
        self.tr = Trace(ranks=P, cores=C, regions=regions(), protocol="split_generation", names=[NAME])
        self.stream = {(g, r): Gate(C) for g in range(rounds) for r in range(P)}

    def run(self):
        run = Runner(self.tr)
        for r in range(P):
            for c in range(C):
                run.start(r, c, self.core(r, c))
        self.hung = run.run()
        return self.tr

    def core(self, r, c):
        tr = self.tr
        for g in range(self.rounds):
            if g:
                yield from self.stream[(g, r)].pass_()
            tr.launch(g, [r])
            tr.kernel(r, c, NAME)
            yield RAN
            if c == 1:
                for d in range(P):
                    tr.put(r, c, d, "data", ((g % 2) * P + r) * H, H * 4)
                    yield RAN
                tr.quiet(r, c)
                for d in range(P):
                    tr.signal(r, c, d, "flag", r, g + 1)
                    yield RAN
                for s in range(P):
                    yield from wait(tr, r, c, "flag", s, "ge", g + 1)
            else:
                k = g + 1
                for d in range(P):
                    tr.signal(r, c, d, "gen", r, k)
                    yield RAN
                for s in range(P):
                    yield from stall(self.stall_wait.get((r, k, s), 0))
                    yield from wait(tr, r, c, "gen", s, self.cmp, k)
            tr.kernel(r, c, NAME, False)
            yield RAN


@case
def split_generation_eq_waiter():
    """Issue 18 item 3: the barrier core compares the generation with ``==``. Rank 0 core 0 is
    slow before it polls gen[2] in launch 0; meanwhile rank 2 has passed barrier 1 and stored 2.
    Rank 0 core 0 spins on == 1 for ever; its core 1 ended launch 0 and cannot begin launch 1, so
    the other ranks' data cores wait for rank 0's launch-1 flag, and their barrier cores for its
    gen 2. Rank 0's trace "ends after launch 0", but it did not stop: it is the waiter of the
    root, a symptom, never a second (MT103) root."""
    sg = SplitGeneration(2, cmp="eq", stall_wait={(0, 1, 2): 120})
    return sg.run(), roots([("MT204", 0, 0), ("MT204", None, None, "optional")],
                           "MT204 at rank 0 core 0's stuck == wait; rank 0 spins there, so the waits "
                           "on its launch-1 writes are symptoms of that root, not of an MT103 stop")
