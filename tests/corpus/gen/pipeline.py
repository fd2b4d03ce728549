"""A pipeline of ranks passing chunks downstream, each step published by a generation flag.

P ranks in a chain 0 -> 1 -> ... -> P-1 (``ring``: P-1 -> 0 too, rank 0 then waits on P-1's
chunk before its next step), STEPS steps per launch. Core c runs the steps s = c mod C with its
own flag word gen[c] (``words`` words wide, written by one put of that many words, or one
signal where 1). At step s of launch g (generation k = g*STEPS + s + 1) a core of rank r waits
its own gen[c] ``ge k`` (``gt k-1``) where r has an upstream, writes the chunk into its out
slot s (local), and where r has a downstream puts the chunk to the downstream's buf slot s
(one slot per step, none reused within a launch), quiets and sets the downstream's gen[c] = k.
A fast upstream runs ahead: the downstream often finds k+1, k+2 when it waits for k; the
chain's head waits on nothing and ends its launch long before the tail. The generations only
grow, across launches; launches are separated by the host's stream sync (not recorded).
"""

from __future__ import annotations

from ._sched import RAN, Gate, Runner, stall, wait
from ._trace import Trace

H = 4
NAME = "pipeline_stage"


class Pipeline:
    def __init__(self, ranks, cores, launches, steps, *, ring=False, words=1, cmp="ge", stall=None,
                 annotated=False, clocks=None, faults=None):
        self.P, self.C, self.G, self.S = ranks, cores, launches, steps
        self.ring, self.words, self.cmp = ring, words, cmp
        self.stall = stall or {}  # (launch, rank, core, step) -> passes before that step
        self.f = faults or {}
        regs = [
            {"name": "buf", "role": "payload", "elem_bytes": 4, "length": steps * H, "slot_words": H},
            {"name": "out", "role": "output", "elem_bytes": 4, "length": steps * H},
            {"name": "gen", "role": "flag", "elem_bytes": 8, "length": cores * words, "monotonic": True,
             "slot_words": words},
        ]
        self.tr = Trace(ranks=ranks, cores=cores, regions=regs, protocol="pipeline", annotated=annotated,
                        names=[NAME], clocks=clocks)
        self.host = [Gate(ranks * cores) for _ in range(launches)]

    def run(self):
        run = Runner(self.tr)
        for r in range(self.P):
            for c in range(self.C):
                run.start(r, c, self.core(r, c))
        self.hung = run.run()
        return self.tr

    def upstream(self, r):
        return (r - 1) % self.P if (r or self.ring) else None

    def downstream(self, r):
        return (r + 1) % self.P if (r < self.P - 1 or self.ring) else None

    def core(self, r, c):
        tr, W = self.tr, self.words
        for g in range(self.G):
            if g:
                yield from self.host[g].pass_()
            tr.launch(g, [r])
            tr.kernel(r, c, NAME)
            yield RAN
            for s in range(c, self.S, self.C):
                k = g * self.S + s + 1
                yield from stall(self.stall.get((g, r, c, s), 0))
                if (g, r, c, s) in self.f.get("die", ()):
                    return  # the core stopped here: nothing more from it
                # The ring's head starts each launch's first step itself: nothing came round yet.
                if self.upstream(r) is not None and not (self.ring and r == 0 and s < self.C):
                    target = k - self.C if self.ring and r == 0 else k
                    value = target - 1 if self.cmp == "gt" else target
                    yield from wait(tr, r, c, "gen", c * W, self.cmp, value, words=W)
                tr.write(r, c, "out", s * H, H * 4, k)
                d = self.downstream(r)
                if d is not None:
                    tr.put(r, c, d, "buf", s * H, H * 4)
                    if (g, r, s) not in self.f.get("no_quiet", ()):
                        tr.quiet(r, c)
                    if W == 1:
                        tr.signal(r, c, d, "gen", c, k)
                    else:
                        tr.put(r, c, d, "gen", c * W, W * 8, k, data=[k] * W)
                yield RAN
            tr.kernel(r, c, NAME, False)
            yield RAN
