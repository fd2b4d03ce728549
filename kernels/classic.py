"""cann/shmem dispatch_classic + combine_classic_once (and their doubleplane variant).

Window [payload | assist | ready | count] per rank; segment (src_rank*L + e) owns S
slots (S = B*K, so the classic kernel cannot truncate). Producer core i serves
dst ranks i, i+C, ...; four passes: count, payload put + quiet, assist signals +
quiet, ready 8-word slots + quiet, then the count slot {1, count, 0...} + quiet.
Consumer (core 0) waits every count slot == 1, then every ready slot (all 8 words
== 1), compacts, resets ready to 0 and count to -1. Combine: core i puts each
result and its 8-word status slot back to owners i, i+C, ...; the owner waits all
K statuses of a token, sums with the scales over valid expert ids only (like
combine_classic l.120) and resets the statuses. Doubleplane: a segment of at least
``sdma_threshold`` rows carries its payload over SDMA, with an SDMA quiet every
256 puts and before the control flags.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, Engine, Kind, Op, Role, Scope

from .base import Kernel, expert_fn, make_inputs, seg_slots, trunc_div, valid_ids
from .sim.machine import RegionSpec

PAYLOAD, ASSIST, READY, COUNT, CDATA, CSTATUS = range(6)
SLOT = 8  # DISPATCH_SLOT_INT32: ready / assist / count / status entries are 32 B
ONES = np.ones(SLOT, dtype=np.int64)
SDMA_BATCH = 256


class Classic(Kernel):
    name = "classic"
    doc = "dispatch_classic + combine_classic: MTE payload, per-token quiet, ready/count/status 8-word slots"
    faults = ("invalid-expert", "invalid-expert-neg", "missing-quiet", "ready-not-reset", "count-not-reset",
              "status-not-reset", "wrong-slot", "wrong-peer", "rank-stop")
    doubleplane = False

    def __init__(self, params, plan, seed):
        super().__init__(params, plan, seed)
        p = params
        self.S = p.capacity or p.tokens * p.topk
        self._inp = {}
        self.rx = {}  # (round, rank) -> (expand rows, assist rows, ep_recv_count)

    def kname(self, what):
        return f"{what}_{'doubleplane' if self.doubleplane else 'classic'}"

    @classmethod
    def fault_bounds(cls, p):
        return {"core": min(p.cores, p.ranks)}

    def regions(self):
        p, S = self.p, self.S
        slots = p.ranks * p.local_experts * S
        tk = p.tokens * p.topk
        return [
            RegionSpec("payload", Role.PAYLOAD, slots * p.hidden, slot_words=p.hidden, index="dispatch"),
            RegionSpec("assist", Role.META, slots * SLOT, slot_words=SLOT, index="dispatch"),
            RegionSpec("ready", Role.FLAG, slots * SLOT, reset=0, slot_words=SLOT, index="dispatch"),
            RegionSpec("count", Role.COUNTER, p.local_experts * p.ranks * SLOT, reset=-1, slot_words=SLOT,
                       index="segment", init=-1),
            RegionSpec("combine_data", Role.PAYLOAD, tk * p.hidden, slot_words=p.hidden, index="token_topk"),
            RegionSpec("combine_status", Role.FLAG, tk * SLOT, reset=0, slot_words=SLOT, index="token_topk"),
        ]

    def manifest_params(self):
        return {**super().manifest_params(), "capacity": self.S, "expert_sentinel": None,
                "segment_slots": self.S}

    def inputs(self, g):
        if g not in self._inp:
            inp = make_inputs(self.p, self.seed, g)
            for name, val in (("invalid-expert", self.p.num_experts), ("invalid-expert-neg", -1)):
                for f in self.plan.faults:
                    if f.name == name and f.place["round"] == g:
                        inp.ids[f.place["rank"], f.place["token"], f.place["topk"]] = val
            self._inp[g] = inp
            self._reference(g, inp)
        return self._inp[g]

    def _reference(self, g, inp):
        from .reference import moe_combine
        ref = moe_combine(inp.x, inp.ids, inp.scales, self.p.local_experts)
        for r in range(self.p.ranks):
            self.want[(g, r)] = ref[r]

    # ------------------------------------------------------------------
    def program(self, m, c):
        p = self.p
        for g in range(p.rounds):
            yield from self.host_round(m, c, g)
            self.inputs(g)
            if not (yield from self.dispatch(m, c, g)):
                return  # the rank stopped mid-kernel
            yield m.barrier(("stream", c.rank, g), p.cores, None)  # combine launches after dispatch
            yield from self.combine(m, c, g)

    def dispatch(self, m, c, g):
        p, S, r = self.p, self.S, c.rank
        P, L, K = p.ranks, p.local_experts, p.topk
        inp = self.inputs(g)
        flat = inp.ids[r].reshape(-1)
        dstr, local = trunc_div(flat, L)
        m.emit(c, [m.kernel(c, self.kname("dispatch"), True)])
        at_read = self.record_routes_at_read(m, c, flat, dstr)
        if c.core == 0 and not at_read:  # pairs no core serves (dst out of range): dropped, as the real kernel does
            lost = np.flatnonzero((dstr < 0) | (dstr >= P))
            if len(lost):
                m.emit(c, [m.info(Kind.ROUTE, len(lost), token=lost // K, topk=lost % K, expert=flat[lost])])
        stop = self.plan.hit("rank-stop", rank=r, round=g)
        for dst in range(c.core, P, p.cores):
            sel = np.flatnonzero(dstr == dst)
            loc = local[sel]
            slot, counts = seg_slots(np.where(loc < 0, L, loc), L + 1)  # key L: the C++ local -1
            if len(sel) and not at_read:
                m.emit(c, [m.info(Kind.ROUTE, len(sel), token=sel // K, topk=sel % K, expert=flat[sel],
                                  dst_rank=dst, slot=slot)])
            block = r * L + loc  # local -1 aliases the neighbouring segment (negative on rank 0)
            keep = block >= 0
            sel, slot, block, loc = sel[keep], slot[keep], block[keep], loc[keep]
            gslot = block * S + slot
            rows = inp.x[r][sel // K]
            nq = self.plan.hit("missing-quiet", rank=r, core=c.core, round=g)
            yield from self._payload(m, c, g, dst, (gslot, rows, loc), counts[:L], nq)
            if stop:
                return False
            a0 = m.signal(c, Engine.MTE, dst, ASSIST, gslot * SLOT, Op.SET, r)
            a1 = m.signal(c, Engine.MTE, dst, ASSIST, gslot * SLOT + 1, Op.SET, sel // K)
            a2 = m.signal(c, Engine.MTE, dst, ASSIST, gslot * SLOT + 2, Op.SET, sel % K)
            if len(sel):
                m.emit(c, [a0, a1, a2])
            if not nq:
                m.emit(c, [m.quiet(c, Engine.MTE)])
            yield
            for e in range(L):
                gs = gslot[loc == e]
                if len(gs):
                    m.emit(c, [m.put(c, Engine.MTE, dst, READY, gs * SLOT, ONES, SLOT)])
                    yield  # the ready puts are in flight while the core reaches its quiet
                    if not nq:
                        m.emit(c, [m.quiet(c, Engine.MTE)])
                peer, seg = dst, e * P + r
                if self.plan.hit("wrong-peer", rank=r, core=c.core, round=g) and e == 0:
                    peer = (dst + 1) % P
                if self.plan.hit("wrong-slot", rank=r, core=c.core, round=g) and e == 0:
                    seg = e * P + (r + 1) % P
                cnt = int(counts[e])
                m.emit(c, [m.info(Kind.COUNT, 1, peer=peer, local_expert=e, value=cnt, capacity=S),
                           m.put(c, Engine.MTE, peer, COUNT, seg * SLOT, np.array([1, cnt, 0, 0, 0, 0, 0, 0]),
                                 SLOT).recording(value=cnt)])
                yield
                m.emit(c, [m.quiet(c, Engine.MTE)])
        if stop:
            return False
        yield m.barrier(("core", r, g), p.cores, Scope.CORE)  # aclshmemi_barrier_core_soft
        if c.core == 0:
            yield from self._receive(m, c, g)
        m.emit(c, [m.kernel(c, self.kname("dispatch"), False)])
        return True

    def _payload(self, m, c, g, dst, tokens, counts, nq):
        (gslot, rows, loc), p = tokens, self.p  # tokens: their global slots, rows and local experts
        sdma = self.doubleplane and counts.max(initial=0) >= p.sdma_threshold
        big = np.isin(loc, np.flatnonzero(counts >= p.sdma_threshold)) if sdma else np.zeros(len(loc), bool)
        small = ~big
        if small.any():
            put = m.put(c, Engine.MTE, dst, PAYLOAD, gslot[small] * p.hidden, rows[small], p.hidden)
            m.emit(c, [put] if nq else [put, m.quiet(c, Engine.MTE, n=put.n)])
        if big.any():
            wrong = self.plan.hit("wrong-engine-quiet", rank=c.rank, core=c.core, round=g)
            idx = np.flatnonzero(big)
            for s in range(0, len(idx), SDMA_BATCH):  # an SDMA quiet every 256 puts and at the end
                part = idx[s:s + SDMA_BATCH]
                m.emit(c, [m.put(c, Engine.SDMA, dst, PAYLOAD, gslot[part] * p.hidden, rows[part], p.hidden)])
                if not nq:
                    m.emit(c, [m.quiet(c, Engine.MTE if wrong else Engine.SDMA)])
                yield
        yield

    def _receive(self, m, c, g):
        """Core 0: wait counts, then ready slots; compact; reset ready and count."""
        p, S, r = self.p, self.S, c.rank
        P, L, H = p.ranks, p.local_experts, p.hidden
        segs = np.arange(L * P)
        w = m.wait(COUNT, segs * SLOT, Cmp.EQ, 1)
        cnt = np.zeros(L * P, dtype=np.int64)
        while not w.done:
            g0, g1 = yield w
            cnt[g0:g1] = m.heap.mem[COUNT][r][segs[g0:g1] * SLOT + 1]
            m.emit(c, m.wait_parts(w, g0, g1, c), skip=w.partial)
            w.partial = 0
        cnt = np.clip(cnt, 0, S)  # a stale / garbage count cannot index past the segment
        ep_recv = np.cumsum(cnt)
        xs, asg = [], []
        no_ready = self.plan.hit("ready-not-reset", rank=r, round=g)
        no_count = self.plan.hit("count-not-reset", rank=r, round=g)
        mem = m.heap.mem
        for seg in range(L * P):
            e, src = divmod(seg, P)
            n = int(cnt[seg])
            gslot = (src * L + e) * S + np.arange(n)
            if n:
                w = m.wait(READY, gslot * SLOT, Cmp.EQ, 1, words=SLOT)
                while not w.done:
                    g0, g1 = yield w
                    gs = gslot[g0:g1]
                    xs.append(mem[PAYLOAD][r][gs[:, None] * H + np.arange(H)].copy())
                    asg.append(mem[ASSIST][r][gs[:, None] * SLOT + np.arange(3)].copy())
                    parts = m.wait_parts(w, g0, g1, c)
                    if not no_ready:
                        parts.append(m.write(c, READY, gs * SLOT, SLOT, 0))
                    m.emit(c, parts, skip=w.partial)
                    w.partial = 0
            m.emit(c, [m.info(Kind.DELIVER, 1, local_expert=e, src_rank=src, requested=n, delivered=n,
                              capacity=S)])
            if not no_count:
                m.emit(c, [m.write(c, COUNT, seg * SLOT, SLOT, -1)])
            if seg % P == P - 1:
                yield
        x = np.concatenate(xs) if xs else np.zeros((0, H), np.int32)
        a = np.concatenate(asg) if asg else np.zeros((0, 3), np.int64)
        row_expert = r * L + np.repeat(np.arange(L * P) // P, cnt)
        self.rx[(g, r)] = (expert_fn(x, row_expert), a, ep_recv)  # the local experts run here

    def combine(self, m, c, g):
        p, r = self.p, c.rank
        P, L, K, H = p.ranks, p.local_experts, p.topk, p.hidden
        m.emit(c, [m.kernel(c, self.kname("combine"), True)])
        y, a, ep_recv = self.rx[(g, r)]
        starts = np.concatenate(([0], ep_recv[:-1]))
        for owner in range(c.core, P, p.cores):
            rows = np.concatenate([np.arange(starts[e * P + owner], ep_recv[e * P + owner]) for e in range(L)])
            if not len(rows):
                continue
            slot = a[rows, 1] * K + a[rows, 2]
            if self.doubleplane and len(rows) >= p.sdma_threshold:
                wrong = self.plan.hit("wrong-engine-quiet", rank=r, core=c.core, round=g)
                m.emit(c, [m.put(c, Engine.SDMA, owner, CDATA, slot * H, y[rows], H)])
                m.emit(c, [m.quiet(c, Engine.MTE if wrong else Engine.SDMA)])
                m.emit(c, [m.put(c, Engine.MTE, owner, CSTATUS, slot * SLOT, ONES, SLOT)])
                m.emit(c, [m.quiet(c, Engine.MTE)])
            elif self.plan.hit("missing-quiet", rank=r, core=c.core, round=g):
                for i in range(0, len(rows), 4):  # the row loop takes time: earlier rows are in flight
                    j = slice(i, i + 4)
                    d = m.put(c, Engine.MTE, owner, CDATA, slot[j] * H, y[rows[j]], H)
                    m.emit(c, [d, m.put(c, Engine.MTE, owner, CSTATUS, slot[j] * SLOT, ONES, SLOT)])
                    yield  # data and status both in flight: nothing orders them
                m.emit(c, [m.quiet(c, Engine.MTE)])
            else:
                d = m.put(c, Engine.MTE, owner, CDATA, slot * H, y[rows], H)
                q1 = m.quiet(c, Engine.MTE, n=d.n)
                s = m.put(c, Engine.MTE, owner, CSTATUS, slot * SLOT, ONES, SLOT)
                m.emit(c, [d, q1, s, m.quiet(c, Engine.MTE, n=d.n)])
            yield
        yield from self._reduce(m, c, g)
        m.emit(c, [m.kernel(c, self.kname("combine"), False)])

    def _reduce(self, m, c, g):
        """Tokens strided over cores: wait all K statuses, sum valid experts, reset statuses."""
        p, r = self.p, c.rank
        K, H = p.topk, p.hidden
        inp = self.inputs(g)
        toks = np.arange(c.core, p.tokens, p.cores)
        if not len(toks):
            return
        slots = (toks[:, None] * K + np.arange(K)).reshape(-1)
        out = self.got.setdefault((g, r), np.zeros((p.tokens, H), dtype=np.int64))
        keep_status = self.plan.hit("status-not-reset", rank=r, core=c.core, round=g)
        w = m.wait(CSTATUS, slots * SLOT, Cmp.EQ, 1, words=SLOT, group=K)
        mem = m.heap.mem
        while not w.done:
            t0, t1 = yield w
            t = toks[t0:t1]
            sl = slots[t0 * K:t1 * K].reshape(-1, K)
            data = mem[CDATA][r][sl[:, :, None] * H + np.arange(H)].astype(np.int64)
            ok = valid_ids(inp.ids[r][t], p.num_experts)
            out[t] = (data * (inp.scales[r][t] * ok)[:, :, None]).sum(axis=1)
            wb, we = m.wait_parts(w, t0 * K, t1 * K, c)
            parts = []
            for k in range(K):
                parts += [_pick(wb, K, k), _pick(we, K, k)]
            if not keep_status:
                for k in range(K):
                    parts.append(m.write(c, CSTATUS, sl[:, k] * SLOT, SLOT, 0))
            m.emit(c, parts, skip=w.partial)
            w.partial = 0


def _pick(part, K, k):
    """Every K-th row of a per-slot part: the k-th top-k slot of each token."""
    cols = {n: (v[k::K] if isinstance(v, np.ndarray) else v) for n, v in part.cols.items()}
    return type(part)(part.kind, part.n // K, cols)
