"""cann/shmem dispatch_gmm_combine (release/v1.3.0): fused dispatch + expert GEMM + combine.

Per launch: ``count = sync_base + 1``; the core serving peer p (p = core, core+C, ..., != rank)
puts this rank's whole ``tokenPerExpert[P*L]`` with ``count`` appended as the last word to
slot ``rank`` of p's ``sync`` region in ONE copy (flag last), then waits every peer's slot
for count or count+1. The contract has no range compare, so the wait is recorded as
``ge count`` with epoch=count: a peer can be at most one epoch ahead (passing count+1 needs
our count+1), so ``>= count`` and "count or count+1" accept the same words. The host
synchronizes between launches here, so count+1 never actually shows (without it, a peer one
epoch ahead would overwrite this epoch's counts, which share the slot with the epoch word). SyncAll, then core 0
stores ``sync_base = count``; no slot is ever reset (the epoch replaces the reset).

Every rank now holds the full P x P*L count matrix. Data is pulled: the core that owns
(local expert e, source s) gets s's rows for expert r*L+e out of s's ``xsend`` (rows sorted
by global expert, so they start at the prefix of s's tokenPerExpert) into ``recv`` at
``e*cap + rowStart`` with rowStart = rows of lower source ranks, clamped silently at the
receive capacity (maxOutputSize, ``cap`` rows per local expert):
``if rowStart < cap: rows = min(rows, cap - rowStart) else rows = 0``. The ``deliver``
event records requested/delivered/capacity, the only trace of the clamp. Gets, MTE quiet,
SyncAll, the experts run on the rows taken; the core serving owner s puts each result to
s's ``combine_data`` slot token*K+topk, quiet, the status word 1, quiet.

The owner knows what was clamped without being told: from the count matrix it computes,
for each of its pairs, rowStart + its index among its rows for that expert, and does not
wait for pairs at or past the capacity (their contribution is simply missing: the real
kernel's lossy semantics). It waits the status of every other top-k slot, unguarded like
combine_classic, so a pair dispatch dropped (invalid id) hangs it; it sums with the scales
and resets the status words to 0. Default capacity: P*B, the worst case (top-k experts are
distinct), so a clean run never clamps; ``capacity-skew`` sizes it for the load the
unskewed routing produces and sends every token of the faulted round to one expert.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, Engine, Kind, Role, Scope

from .base import Kernel, expert_fn, make_inputs, valid_ids
from .sim.machine import RegionSpec

XSEND, XMETA, SYNC, SYNCBASE, RECV, RMETA, CDATA, CSTATUS = range(8)
NAME = "dispatch_gmm_combine"


class Fused(Kernel):
    name = "fused"
    doc = ("dispatch_gmm_combine: epoch count exchange (count or count+1), peers' rows pulled "
           "(get), silent clamp at maxOutputSize, expert compute, combine with status words")
    faults = ("capacity-skew", "invalid-expert", "missing-quiet", "wrong-slot", "rank-stop")

    def __init__(self, params, plan, seed):
        super().__init__(params, plan, seed)
        p = params
        self.W = p.ranks * p.local_experts + 1  # tokenPerExpert[P*L] + the epoch word
        self._inp, self._stage, self.M = {}, {}, {}
        self.lost = {}  # (round, rank, e) -> {(owner, token)} whose row that expert clamped
        self.unquieted = set()  # (round, owner, token) sent by a core that skipped its quiet
        self.cap = p.capacity or (self._skew_capacity() if any(
            f.name == "capacity-skew" for f in plan.faults) else p.ranks * p.tokens)

    @classmethod
    def fault_bounds(cls, p):
        return {"core": min(p.cores, p.ranks), "local_expert": p.local_experts}

    def _skew_capacity(self) -> int:
        """maxOutputSize sized for the largest load the routing gives without the skew."""
        p = self.p
        load = [np.bincount(make_inputs(p, self.seed, g).ids.reshape(-1), minlength=p.num_experts).max()
                for g in range(p.rounds)]
        return max(1, int(max(load)))

    def regions(self):
        p, cap = self.p, self.cap
        P, L, H, BK = p.ranks, p.local_experts, p.hidden, p.tokens * p.topk
        return [RegionSpec("xsend", Role.PAYLOAD, BK * H, slot_words=H),
                RegionSpec("xsend_meta", Role.META, BK * 2, slot_words=2),
                RegionSpec("sync", Role.COUNTER, P * self.W, monotonic=True, slot_words=self.W, index="rank"),
                RegionSpec("sync_base", Role.COUNTER, 1, monotonic=True),
                RegionSpec("recv", Role.PAYLOAD, L * cap * H, slot_words=H),
                RegionSpec("recv_meta", Role.META, L * cap * 2, slot_words=2),
                RegionSpec("combine_data", Role.PAYLOAD, BK * H, slot_words=H, index="token_topk"),
                RegionSpec("combine_status", Role.FLAG, BK, reset=0, index="token_topk")]

    def manifest_params(self):
        return {**super().manifest_params(), "capacity": self.cap, "expert_sentinel": None}

    def inputs(self, g):
        if g not in self._inp:
            from .reference import moe_combine
            p = self.p
            inp = make_inputs(p, self.seed, g)
            f = self.plan.get("capacity-skew", round=g)
            if f is not None:  # every token of every rank also picks the hot expert
                hot = f.place["rank"] * p.local_experts + f.place["local_expert"]
                miss = ~(inp.ids == hot).any(axis=2)
                inp.ids[:, :, -1][miss] = hot
            for f in self.plan.faults:
                if f.name == "invalid-expert" and f.place["round"] == g:
                    inp.ids[f.place["rank"], f.place["token"], f.place["topk"]] = p.num_experts
                    f.fired = True
            self._inp[g] = inp
            ref = moe_combine(inp.x, inp.ids, inp.scales, p.local_experts)
            for r in range(p.ranks):
                self.want[(g, r)] = ref[r]
        return self._inp[g]

    def stage(self, m, g, r):
        """Host side, before launch: rank r's rows sorted by global expert into xsend."""
        if (g, r) not in self._stage:
            p = self.p
            ids = self.inputs(g).ids[r].reshape(-1)
            pairs = np.flatnonzero(valid_ids(ids, p.num_experts))
            pairs = pairs[np.argsort(ids[pairs], kind="stable")]
            tpe = np.bincount(ids[pairs], minlength=p.num_experts)
            m.heap.mem[XSEND][r][:len(pairs) * p.hidden] = self.inputs(g).x[r][pairs // p.topk].reshape(-1)
            m.heap.mem[XMETA][r][:len(pairs) * 2] = np.stack((pairs // p.topk, pairs % p.topk), 1).reshape(-1)
            start = np.concatenate(([0], np.cumsum(tpe)[:-1]))
            self._stage[(g, r)] = (tpe, start, pairs)
        return self._stage[(g, r)]

    def taken(self, M, s, ge):
        """(rowStart, rows requested, rows taken) of source s for global expert ge."""
        start, n = int(M[:s, ge].sum()), int(M[s, ge])
        return start, n, (min(n, self.cap - start) if start < self.cap else 0)

    # ------------------------------------------------------------------
    def program(self, m, c):
        p = self.p
        for g in range(p.rounds):
            yield from self.host_round(m, c, g)
            m.emit(c, [m.kernel(c, NAME, True)])
            if not (yield from self.exchange(m, c, g)):
                return  # the rank stopped mid-kernel
            yield from self.pull(m, c, g)
            yield from self.combine(m, c, g)
            yield from self.reduce(m, c, g)
            m.emit(c, [m.kernel(c, NAME, False)])

    def exchange(self, m, c, g):
        p, r, W = self.p, c.rank, self.W
        P, L, K = p.ranks, p.local_experts, p.topk
        tpe, start, pairs = self.stage(m, g, r)
        count = int(m.heap.mem[SYNCBASE][r][0]) + 1
        ids = self.inputs(g).ids[r].reshape(-1)
        if not self.record_routes_at_read(m, c, ids, ids // L) and c.core == 0:
            bad = np.flatnonzero(~valid_ids(ids, p.num_experts))
            if len(bad):  # nothing sends these: tokenPerExpert has no entry for them
                m.emit(c, [m.info(Kind.ROUTE, len(bad), token=bad // K, topk=bad % K, expert=ids[bad])])
            ge = ids[pairs]
            m.emit(c, [m.info(Kind.ROUTE, len(pairs), token=pairs // K, topk=pairs % K, expert=ge,
                              dst_rank=ge // L, slot=np.arange(len(pairs)) - start[ge])])
        served = np.arange(c.core, P, p.cores)
        peers = served[served != r]
        wrong = len(peers) and self.plan.hit("wrong-slot", rank=r, core=c.core, round=g)
        for i, d in enumerate(served):
            m.emit(c, [m.info(Kind.COUNT, L, peer=int(d), local_expert=np.arange(L),
                              value=tpe[d * L:(d + 1) * L], capacity=self.cap)])
            if d == r:
                continue  # self: the rank uses its own tokenPerExpert in place
            slot = (r + 1) % P if wrong and d == peers[0] else r
            m.emit(c, [m.put(c, Engine.MTE, int(d), SYNC, slot * W, np.append(tpe, count), W).recording(value=count)])
            yield
        m.emit(c, [m.quiet(c, Engine.MTE)])
        if self.plan.hit("rank-stop", rank=r, round=g):
            return False
        M = self.M.setdefault((g, r), np.zeros((P, P * L), dtype=np.int64))
        M[r] = tpe
        w = m.wait(SYNC, peers * W + W - 1, Cmp.GE, count, epoch=count, hi=count + 1)
        mem = m.heap.mem[SYNC][r]
        while not w.done:
            g0, g1 = yield w
            for d in peers[g0:g1]:
                M[d] = mem[d * W:d * W + P * L]
            m.emit(c, m.wait_parts(w, g0, g1, c), skip=w.partial)
            w.partial = 0
        yield m.barrier(("sync", r, g, 0), p.cores, Scope.CORE)  # SyncAll
        if c.core == 0:
            m.emit(c, [m.write(c, SYNCBASE, 0, 1, count)])
        return True

    def pull(self, m, c, g):
        p, r, cap = self.p, c.rank, self.cap
        P, L, H = p.ranks, p.local_experts, p.hidden
        M = self.M[(g, r)]
        for j in range(c.core, L * P, p.cores):
            e, s = divmod(j, P)
            ge = r * L + e
            row0, n, take = self.taken(M, s, ge)
            m.emit(c, [m.info(Kind.DELIVER, 1, local_expert=e, src_rank=s, requested=n, delivered=take,
                              capacity=cap)])
            tpe, start, pairs = self.stage(m, g, s)
            if take < n:  # what the clamp cost, for the truth only: the kernel never looks
                lost = pairs[start[ge] + take:start[ge] + n] // p.topk
                self.lost.setdefault((g, r, e), set()).update((s, int(t)) for t in lost)
            if take:
                src = start[ge] + np.arange(take)
                dst = e * cap + row0 + np.arange(take)
                m.emit(c, [m.get(c, Engine.MTE, s, XSEND, src * H, RECV, dst * H, H),
                           m.get(c, Engine.MTE, s, XMETA, src * 2, RMETA, dst * 2, 2)])
                yield
        m.emit(c, [m.quiet(c, Engine.MTE)])
        yield m.barrier(("sync", r, g, 1), p.cores, Scope.CORE)  # SyncAll: the GEMM sees every row

    def combine(self, m, c, g):
        p, r, cap = self.p, c.rank, self.cap
        P, L, K, H = p.ranks, p.local_experts, p.topk, p.hidden
        M, mem = self.M[(g, r)], m.heap.mem
        for owner in range(c.core, P, p.cores):
            rows, experts = [], []
            for e in range(L):
                row0, _, take = self.taken(M, owner, r * L + e)
                rows.append(e * cap + row0 + np.arange(take))
                experts.append(np.full(take, r * L + e))
            rows, experts = np.concatenate(rows), np.concatenate(experts)
            if not len(rows):
                continue
            y = expert_fn(mem[RECV][r][rows[:, None] * H + np.arange(H)], experts)
            meta = mem[RMETA][r][rows[:, None] * 2 + np.arange(2)]
            slot = meta[:, 0] * K + meta[:, 1]
            if self.plan.hit("missing-quiet", rank=r, core=c.core, round=g):
                self.unquieted.update((g, owner, int(t)) for t in meta[:, 0])
                for i in range(0, len(rows), 4):  # the row loop takes time: earlier rows are in flight
                    j = slice(i, i + 4)
                    m.emit(c, [m.put(c, Engine.MTE, owner, CDATA, slot[j] * H, y[j], H),
                               m.put(c, Engine.MTE, owner, CSTATUS, slot[j], 1, 1)])
                    yield  # data and status both in flight: nothing orders them
                m.emit(c, [m.quiet(c, Engine.MTE)])
            else:
                d = m.put(c, Engine.MTE, owner, CDATA, slot * H, y, H)
                s = m.put(c, Engine.MTE, owner, CSTATUS, slot, 1, 1)
                m.emit(c, [d, m.quiet(c, Engine.MTE, n=d.n), s, m.quiet(c, Engine.MTE, n=d.n)])
            yield

    def reduce(self, m, c, g):
        """Tokens strided over cores: wait each pair not clamped, sum with the scales, reset."""
        p, r = self.p, c.rank
        K, H = p.topk, p.hidden
        out = self.got.setdefault((g, r), np.zeros((p.tokens, H), dtype=np.int64))
        toks = np.arange(c.core, p.tokens, p.cores)
        if not len(toks):
            return
        inp, M = self.inputs(g), self.M[(g, r)]
        tpe, start, pairs = self.stage(m, g, r)
        ids = inp.ids[r].reshape(-1)
        kept = np.ones(len(ids), dtype=bool)
        ge = ids[pairs]
        row = M[:r, ge].sum(axis=0) + np.arange(len(pairs)) - start[ge]  # row in the expert's recv
        kept[pairs[row >= self.cap]] = False
        slots = (toks[:, None] * K + np.arange(K)).reshape(-1)
        slots = slots[kept[slots]]
        w = m.wait(CSTATUS, slots, Cmp.EQ, 1)
        mem = m.heap.mem
        while not w.done:
            g0, g1 = yield w
            sl = slots[g0:g1]
            data = mem[CDATA][r][sl[:, None] * H + np.arange(H)].astype(np.int64)
            np.add.at(out, sl // K, data * inp.scales[r].reshape(-1)[sl][:, None])
            m.emit(c, m.wait_parts(w, g0, g1, c) + [m.write(c, CSTATUS, sl, 1, 0)], skip=w.partial)
            w.partial = 0

    # ---- truth: did this fault's consequence happen here? --------------
    def manifested(self, f, outcome) -> bool:
        pl, st = f.place, outcome["status"]
        wrong = {(w["round"], w["rank"], w["row"]) for w in outcome.get("wrong_rows", ())}
        stuck = outcome.get("stuck", ())
        if f.name == "capacity-skew":
            lost = self.lost.get((pl["round"], pl["rank"], pl["local_expert"]), ())
            return any((pl["round"], o, t) in wrong for o, t in lost)
        if f.name == "missing-quiet":
            return bool(wrong & self.unquieted)
        if f.name == "invalid-expert":
            slot = pl["token"] * self.p.topk + pl["topk"]
            return any(s["rank"] == pl["rank"] and s.get("region") == "combine_status" and s["slot"] == slot
                       for s in stuck)
        if f.name == "wrong-slot":
            return any(s.get("region") == "sync" and s["slot"] == pl["rank"] for s in stuck)
        return st == "hung" and bool(f.fired)  # rank-stop: it stopped and the run hung
