"""MegaMoE-style rounds with no host sync, ordered by monotonic generation counters.

Each launch (round g) runs two generation barriers on one monotonic flag array
(slot s written by rank s): k = 2g+1 after dispatch, k = 2g+2 after combine. A
rank first signals k to every peer, then waits every slot >= k. Signals go out
before the wait, so a fast peer that passed barrier k may already have stored k+1
in a slow rank's slot before that rank looked: the correct wait is >=; with ==
it never sees its generation and hangs. Buffers are double (half = g % 2): no
peer can be two generations ahead, since passing k+1 needs everyone's k+1.
Dispatch puts each pair's token to the expert rank (payload + quiet before the
barrier); the expert rank computes and puts results back to the owner.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, Engine, Kind, Op, Role

from .base import Kernel, expert_fn, make_inputs, valid_ids

RECV, META, COMB, GEN = range(4)


class Generation(Kernel):
    name = "generation"
    doc = "MegaMoE-style rounds without host sync: waits on monotonic generation counters (>=)"
    faults = ("generation-eq", "missing-quiet", "wrong-peer", "rank-stop")

    def __init__(self, params, plan, seed):
        super().__init__(params, plan, seed)
        self._inp = {}

    @classmethod
    def fault_bounds(cls, p):
        return {"core": 1}

    def regions(self):
        from .sim.machine import RegionSpec
        p = self.p
        n = p.ranks * p.tokens * p.topk
        tk = p.tokens * p.topk
        return [RegionSpec("recv", Role.PAYLOAD, 2 * n * p.hidden, slot_words=p.hidden),
                RegionSpec("recv_meta", Role.META, 2 * n, reset=0),
                RegionSpec("comb", Role.PAYLOAD, 2 * tk * p.hidden, slot_words=p.hidden),
                RegionSpec("gen", Role.FLAG, p.ranks, monotonic=True, index="rank")]

    def manifest_params(self):
        return {**super().manifest_params(), "capacity": None, "expert_sentinel": None}

    def inputs(self, g):
        if g not in self._inp:
            from .reference import moe_combine
            inp = make_inputs(self.p, self.seed, g)
            self._inp[g] = inp
            ref = moe_combine(inp.x, inp.ids, inp.scales, self.p.local_experts)
            for r in range(self.p.ranks):
                self.want[(g, r)] = ref[r]
        return self._inp[g]

    def program(self, m, c):
        if c.core:
            return  # one core per rank drives this protocol
        yield
        for g in range(self.p.rounds):
            c.launch = g
            if not (yield from self.round(m, c, g)):
                return

    def barrier(self, m, c, k, g):
        p, r = self.p, c.rank
        peers = np.arange(p.ranks)
        f = self.plan.get("wrong-peer", rank=r)
        if f is not None and g >= f.place["round"]:  # the bug is in the code: every barrier from then on
            peers = np.where(peers == (r + 1) % p.ranks, r, peers)  # one peer never hears from us
        for d in peers:
            m.emit(c, [m.signal(c, Engine.MTE, int(d), GEN, r, Op.SET, k)])
        eq = self.plan.hit("generation-eq", rank=r)
        w = m.wait(GEN, np.arange(p.ranks), Cmp.EQ if eq else Cmp.GE, k, epoch=k)
        while not w.done:
            g0, g1 = yield w
            m.emit(c, m.wait_parts(w, g0, g1, c), skip=w.partial)
            w.partial = 0

    def round(self, m, c, g):
        p, r = self.p, c.rank
        P, L, K, H, B = p.ranks, p.local_experts, p.topk, p.hidden, p.tokens
        inp = self.inputs(g)
        half = g % 2
        n = P * B * K
        m.emit(c, [m.kernel(c, "megamoe_generation", True)])
        ids = inp.ids[r].reshape(-1)
        pairs = np.flatnonzero(valid_ids(ids, p.num_experts))
        dst = ids[pairs] // L
        if not self.record_routes_at_read(m, c, ids, ids // L):
            m.emit(c, [m.info(Kind.ROUTE, len(pairs), token=pairs // K, topk=pairs % K, expert=ids[pairs],
                              dst_rank=dst, slot=r * B * K + pairs)])
        slot = half * n + r * B * K + pairs
        for d in np.unique(dst):
            sel = dst == d
            m.emit(c, [m.put(c, Engine.MTE, int(d), RECV, slot[sel] * H, inp.x[r][pairs[sel] // K], H),
                       m.put(c, Engine.MTE, int(d), META, slot[sel], (ids[pairs[sel]] + 1)[:, None], 1)])
            yield
        if self.plan.hit("rank-stop", rank=r, round=g):
            return False
        if not self.plan.hit("missing-quiet", rank=r, round=g):
            m.emit(c, [m.quiet(c, Engine.MTE)])
        yield from self.barrier(m, c, 2 * g + 1, g)
        mem = m.heap.mem
        meta = mem[META][r][half * n:(half + 1) * n]
        got = np.flatnonzero(meta)  # the pairs delivered to this rank this generation
        rows = mem[RECV][r][(half * n + got)[:, None] * H + np.arange(H)]
        y = expert_fn(rows, meta[got] - 1)
        m.emit(c, [m.write(c, META, half * n + got, 1, 0)])
        src, pair = got // (B * K), got % (B * K)
        for s in np.unique(src):
            sel = src == s
            m.emit(c, [m.put(c, Engine.MTE, int(s), COMB, (half * B * K + pair[sel]) * H, y[sel], H)])
            yield
        m.emit(c, [m.quiet(c, Engine.MTE)])
        yield from self.barrier(m, c, 2 * g + 2, g)
        comb = mem[COMB][r][half * B * K * H:(half + 1) * B * K * H].reshape(B, K, H).astype(np.int64)
        ok = valid_ids(inp.ids[r], p.num_experts)
        self.got[(g, r)] = (comb * (inp.scales[r] * ok)[:, :, None]).sum(axis=1)
        m.emit(c, [m.kernel(c, "megamoe_generation", False)])
        return True
