"""MegaMoE-style generation barrier (seed 001: "generation wait should compare >= generation").

4 ranks, one AIV core each, 2 tokens, top-2, 2 local experts, hidden 4. No host sync between
launches: launch g runs dispatch, barrier k = 2g+1, combine, barrier k = 2g+2, where a barrier
is a signal set gen[my_rank] = k to every rank (self included), then a wait on every gen[s]
of its own memory. Buffers are double (half = g % 2). Dispatch puts each pair's row and a
meta word (expert + 1) to the expert rank; after barrier 1 the expert rank takes the rows
whose meta is set, resets the meta words to 0, and puts the results back to the owners.
The correct wait is ``ge k``: a fast peer that passed barrier k may already have stored k+1.
"""

from __future__ import annotations

from ._sched import RAN, Runner, stall, wait
from ._trace import Trace
from .registry import case, clean, roots

P, B, K, L, H = 4, 2, 2, 2, 4
N = P * B * K  # pair slots of one half
ROUTES = (
    (((1, 6), (3, 4)), ((0, 4), (4, 7)), ((4, 1), (6, 3)), ((5, 2), (7, 3))),
    (((2, 5), (7, 0)), ((5, 1), (6, 2)), ((0, 7), (3, 4)), ((3, 0), (3, 6))),
)
SITES = {"1": "megamoe/dispatch.cpp:88", "2": "megamoe/sync.h:41"}


def regions():
    return [
        {"name": "recv", "role": "payload", "elem_bytes": 4, "length": 2 * N * H, "slot_words": H},
        {"name": "recv_meta", "role": "meta", "elem_bytes": 4, "length": 2 * N, "reset": 0},
        {"name": "comb", "role": "payload", "elem_bytes": 4, "length": 2 * B * K * H, "slot_words": H},
        {"name": "gen", "role": "flag", "elem_bytes": 8, "length": P, "monotonic": True, "index": "rank"},
    ]


class Generation:
    def __init__(self, rounds=2, *, annotated=False, cmp="ge", stall_wait=None):
        self.rounds, self.cmp = rounds, cmp
        self.stall_wait = stall_wait or {}  # (rank, k, slot) -> passes spent before polling that slot
        params = {"tokens": B, "topk": K, "hidden": H, "local_experts": L, "num_experts": P * L,
                  "expert_sentinel": None}
        self.tr = Trace(ranks=P, cores=1, regions=regions(), protocol="generation", params=params,
                        annotated=annotated, sites=SITES)

    def run(self):
        run = Runner(self.tr)
        for r in range(P):
            run.start(r, 0, self.core(r))
        self.hung = run.run()
        return self.tr

    def barrier(self, r, k):
        tr = self.tr
        for d in range(P):
            tr.signal(r, 0, d, "gen", r, k, site=2, epoch=k)
            yield RAN
        for s in range(P):
            yield from stall(self.stall_wait.get((r, k, s), 0))
            yield from wait(tr, r, 0, "gen", s, self.cmp, k, site=2, epoch=k)

    def core(self, r):
        tr = self.tr
        for g in range(self.rounds):
            tr.launch(g, [r])
            half = g % 2
            tr.kernel(r, 0, "megamoe_generation")
            pairs = [(t, k, ROUTES[g][r][t][k]) for t in range(B) for k in range(K)]
            for t, k, e in pairs:
                tr.route(r, 0, t, k, e, dst_rank=e // L, slot=r * B * K + t * K + k, site=1)
            yield RAN
            for d in sorted({e // L for _, _, e in pairs}):
                for t, k, e in pairs:
                    if e // L == d:
                        slot = half * N + r * B * K + t * K + k
                        tr.put(r, 0, d, "recv", slot * H, H * 4, site=1, epoch=2 * g + 1)
                        tr.put(r, 0, d, "recv_meta", slot, 4, e + 1, site=1, epoch=2 * g + 1)
                yield RAN
            tr.quiet(r, 0)
            yield from self.barrier(r, 2 * g + 1)
            got = [i for i in range(N) if tr.read(r, "recv_meta", half * N + i)]
            for i in got:
                tr.write(r, 0, "recv_meta", half * N + i, 4, 0)
            yield RAN
            for s in sorted({i // (B * K) for i in got}):
                for i in got:
                    if i // (B * K) == s:
                        tr.put(r, 0, s, "comb", (half * B * K + i % (B * K)) * H, H * 4, epoch=2 * g + 2)
                yield RAN
            tr.quiet(r, 0)
            yield from self.barrier(r, 2 * g + 2)
            tr.kernel(r, 0, "megamoe_generation", False)
            yield RAN


@case
def generation_clean():
    """Two launches of the generation barrier protocol, waits ``ge k``; bare manifest and events."""
    return Generation(2).run(), clean("two clean launches; gen values only grow (1..4)")


@case
def generation_eq_passed():
    """Issue 9 items 2 and 6: the barrier waits ``eq k`` (the code of every rank). In launch 1,
    rank 0 is slow between polls at barrier 3: it saw gen[0], gen[1] == 3, and before it looks at
    gen[2], rank 2 has passed barrier 3, combined and signalled 4. Rank 0 spins on a value it has
    passed; ranks 1-3 then wait in barrier 4 for rank 0's 4. Bare manifest: no ``monotonic``."""
    gen = Generation(2, cmp="eq", stall_wait={(0, 3, 2): 120})
    return gen.run(), roots([("MT204", 0, 0), ("MT204", None, None, "optional")],
                            "MT204 at rank 0's stuck == wait (its MT101 is a symptom); every rank runs the "
                            "same == code, so MT204 warnings elsewhere are acceptable, nothing else")


@case
def generation_launch_lag():
    """Issue 9 item 4: rank 2 is stuck in a wait of launch 0 while the others are in launch 1.
    Barrier waits ``eq k``; rank 2 is slow at barrier 2 (launch 0's last): before it polls gen[3],
    rank 3 has finished launch 0, begun launch 1 and signalled 3. Ranks 0, 1, 3 then wait in
    launch 1's barrier 3 for rank 2. Full annotations (monotonic, index, site, epoch)."""
    gen = Generation(2, annotated=True, cmp="eq", stall_wait={(2, 2, 3): 120})
    return gen.run(), roots([("MT204", 2, 0), ("MT204", None, None, "optional")],
                            "one root: rank 2's == wait in launch 0, not an MT103 for the lagging rank")
