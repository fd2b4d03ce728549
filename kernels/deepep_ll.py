"""DeepEP's low-latency dispatch and combine: IBGDA puts, per-expert counts, parity buffers.

Facts from deepseek-ai/DeepEP csrc/kernels/legacy/internode_ll.cu (notes in
shared/reference/protocols.md §2.3); the code is ours. Every call is its own
launch: round g dispatches at launch 2g and combines at launch 2g+1, and the
signal buffer (``recv_signal``, two halves of num_experts words) alternates by
launch parity: dispatch's counts sit in half 0 (slot local_expert*P + src),
combine's flags in half 1 (slot = global expert). Each launch zeroes the
*other* half for the next launch (next_clean): the words it zeroes were last
written two launches ago, and are written again in the next one.

Dispatch: core c sends the tokens of the global experts e = c mod cores; a
token goes to row (local_e*P + rank)*cap + slot of ``recv_x`` on e's rank
(``cap`` = num_max_dispatch_tokens_per_rank, the row carries the token index),
then the count -n-1 is added (amo) on the same queue pair with no quiet in
between: the queue pair delivers the data first. The receiver polls each
count != 0, decodes it, takes the rows. Combine: the expert rank puts each
token's weighted output to ``combine_x`` (row global_expert*tokens + token)
on the owner and then adds 1 to the expert's flag, same queue pair; the owner
waits every flag of its experts, then sums.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, Engine, Kind, Op, Role, Scope

from .base import Kernel, expert_fn, make_inputs
from .sim.machine import RegionSpec

SIGNAL, RECV_X, COMBINE_X = range(3)
ENG = Engine.IBGDA


class DeepepLL(Kernel):
    name = "deepep_ll"
    doc = ("DeepEP low-latency dispatch/combine: IBGDA data then count amo on one QP, per-expert counts "
           "-n-1, parity signal buffers cleaned one launch ahead")
    faults = ("count-unencoded", "parity-not-cleaned", "dispatch-tokens-exceeded", "rank-stop")

    def __init__(self, params, plan, seed):
        super().__init__(params, plan, seed)
        p = params
        self.NE = p.num_experts
        self.cap = p.capacity or p.tokens  # num_max_dispatch_tokens_per_rank
        if any(f.name == "dispatch-tokens-exceeded" for f in plan.faults):
            self.cap = p.tokens - 1  # the batch is larger than the buffers were sized for
        self._inp = {}
        self._round = {}  # id(fault) -> the round it was placed at
        self.taken = {}  # (round, rank, local_e, src) -> (tokens, rows)
        self.lost = {}  # (round, rank, local_e) -> tokens of the src whose rows were cut

    def regions(self):
        p, NE, W = self.p, self.NE, self.p.hidden + 1
        return [
            RegionSpec("recv_signal", Role.COUNTER, 2 * NE),
            RegionSpec("recv_x", Role.PAYLOAD, NE * self.cap * W, slot_words=W),
            RegionSpec("combine_x", Role.PAYLOAD, NE * p.tokens * p.hidden, slot_words=p.hidden),
        ]

    def manifest_params(self):
        return {**super().manifest_params(), "num_max_dispatch_tokens_per_rank": self.cap}

    def inputs(self, g):
        if g not in self._inp:
            from .reference import moe_combine
            p = self.p
            inp = make_inputs(p, self.seed, g)
            f = self._fault("dispatch-tokens-exceeded", g, launch=2 * g)  # the overflowing dispatch
            if f is not None:  # one source sends every token to one expert: its segment overflows
                src = (f.place["rank"] + 1) % p.ranks
                e = f.place["rank"] * p.local_experts + f.place["local_expert"]
                for t in range(p.tokens):
                    if e not in inp.ids[src, t]:
                        inp.ids[src, t, 0] = e
            self._inp[g] = inp
            ref = moe_combine(inp.x, inp.ids, inp.scales, p.local_experts)
            for r in range(p.ranks):
                self.want[(g, r)] = ref[r]
        return self._inp[g]

    def program(self, m, c):
        for g in range(self.p.rounds):
            yield from self.host_round(m, c, 2 * g)
            self.inputs(g)
            if not (yield from self.dispatch(m, c, g)):
                return
            yield from self.host_round(m, c, 2 * g + 1)
            yield from self.combine(m, c, g)

    def _wait(self, m, c, region, offs, cmp, value):
        w = m.wait(region, offs, cmp, value)
        obs = np.zeros(len(w.offsets), np.int64)
        while not w.done:
            g0, g1 = yield w
            obs[g0:g1] = m.heap.mem[region][c.rank][w.offsets[g0:g1]]
            m.emit(c, m.wait_parts(w, g0, g1, c), skip=w.partial)
            w.partial = 0
        return obs

    def _fault(self, name, g, rank=None, launch=None):
        """The fault ``name`` placed at round g (and rank); once it fires its place is restated in
        launches, two a round (the matcher compares it with the finding's launch)."""
        for f in self.plan.faults:
            rnd = self._round.setdefault(id(f), f.place.get("round"))
            if f.name == name and rnd == g and (rank is None or f.place.get("rank") == rank):
                f.fired = True
                if launch is not None:
                    f.place["round"] = launch
                return f
        return None

    def _at(self, name, rank, g, launch):
        return self._fault(name, g, rank, launch) is not None

    def _clean(self, m, c, half, skip):
        """next_clean: core 0 zeroes the other parity's half for the next launch."""
        if c.core == 0 and not skip:
            m.emit(c, [m.write(c, SIGNAL, half * self.NE + np.arange(self.NE), 1, 0)])

    # ---- dispatch (launch 2g, parity 0) --------------------------------------
    def dispatch(self, m, c, g):
        p, r = self.p, c.rank
        P, L, K, H, W = p.ranks, p.local_experts, p.topk, p.hidden, p.hidden + 1
        inp = self.inputs(g)
        m.emit(c, [m.kernel(c, "dispatch_ll", True)])
        self._clean(m, c, 1, False)
        flat = inp.ids[r].reshape(-1)
        if not self.record_routes_at_read(m, c, flat, flat // L):
            mine = np.flatnonzero(flat % p.cores == c.core)
            m.emit(c, [m.info(Kind.ROUTE, len(mine), token=mine // K, topk=mine % K, expert=flat[mine],
                              dst_rank=flat[mine] // L)])
        raw = self._at("count-unencoded", r, g, 2 * g)
        stop = self._at("rank-stop", r, g, 2 * g)
        for e in range(c.core, self.NE, p.cores):
            dst, le = divmod(e, L)
            tok = np.flatnonzero((inp.ids[r] == e).any(axis=1))
            n = len(tok)
            sent = tok[:self.cap]  # a row past the buffer has no place (DeepEP writes past it)
            if len(sent):
                rows = np.concatenate([inp.x[r][sent].astype(np.int64), sent[:, None]], axis=1)
                offs = ((le * P + r) * self.cap + np.arange(len(sent))) * W
                m.emit(c, [m.put(c, ENG, dst, RECV_X, offs, rows, W)])
            if stop:
                return False  # died after its first expert's rows, before any count
            # (no capacity on the count: the sender does not bound it; the receiver's deliver does)
            m.emit(c, [m.info(Kind.COUNT, 1, peer=dst, local_expert=le, value=n),
                       m.amo(c, ENG, dst, SIGNAL, [le * P + r], Op.ADD, n if raw else -n - 1)])
            yield
        m.emit(c, [m.quiet(c, ENG)])  # the send warps complete their queue pairs before they move on
        # Receive: core c takes the local experts le = c mod cores, from every source.
        for le in range(c.core, L, p.cores):
            enc = yield from self._wait(m, c, SIGNAL, le * P + np.arange(P), Cmp.NE, 0)
            for src in range(P):
                n = max(int(-enc[src] - 1), 0)
                take = min(n, self.cap)
                m.emit(c, [m.info(Kind.DELIVER, 1, local_expert=le, src_rank=src, requested=n, delivered=take,
                                  capacity=self.cap)])
                base = (le * P + src) * self.cap
                rows = m.heap.mem[RECV_X][r][(base + np.arange(take))[:, None] * W + np.arange(W)].astype(np.int64)
                self.taken[(g, r, le, src)] = (rows[:, H], rows[:, :H])
                if take < n:
                    self.lost[(g, r, le)] = src
        m.emit(c, [m.kernel(c, "dispatch_ll", False)])
        return True

    # ---- combine (launch 2g+1, parity 1) -------------------------------------
    def combine(self, m, c, g):
        p, r = self.p, c.rank
        P, L, H, B = p.ranks, p.local_experts, p.hidden, p.tokens
        inp = self.inputs(g)
        m.emit(c, [m.kernel(c, "combine_ll", True)])
        self._clean(m, c, 0, self._at("parity-not-cleaned", r, g, 2 * g + 1))
        for le in range(c.core, L, p.cores):
            e = r * L + le
            for src in range(P):
                tok, x = self.taken[(g, r, le, src)]
                ok = (tok >= 0) & (tok < B)
                tok, x = tok[ok], x[ok]
                k = np.argmax(inp.ids[src][tok] == e, axis=1) if len(tok) else np.zeros(0, np.int64)
                y = expert_fn(x, e) * inp.scales[src][tok, k][:, None]
                if len(tok):
                    m.emit(c, [m.put(c, ENG, src, COMBINE_X, (e * B + tok) * H, y, H)])
                m.emit(c, [m.amo(c, ENG, src, SIGNAL, [self.NE + e], Op.ADD, 1)])
                yield
        m.emit(c, [m.quiet(c, ENG)])
        # Receive: core c waits the flags of experts e = c mod cores, then every core sums its tokens.
        mine = np.arange(c.core, self.NE, p.cores)
        if len(mine):
            yield from self._wait(m, c, SIGNAL, self.NE + mine, Cmp.NE, 0)
        yield m.barrier(("grid", r, 2 * g + 1), p.cores, Scope.CORE)
        out = self.got.setdefault((g, r), np.zeros((B, H), np.int64))
        toks = np.arange(c.core, B, p.cores)
        data = m.heap.mem[COMBINE_X][r]
        for t in toks:
            ids = inp.ids[r][t]
            out[t] = sum(data[(e * B + t) * H + np.arange(H)].astype(np.int64) for e in ids)
        m.emit(c, [m.kernel(c, "combine_ll", False)])

    def manifested(self, f, outcome) -> bool:
        if f.name == "dispatch-tokens-exceeded":
            pl = f.place
            wrong = {(w["round"], w["rank"]) for w in outcome.get("wrong_rows", ())}
            src = self.lost.get((pl["round"] // 2, pl["rank"], pl["local_expert"]))
            return src is not None and (pl["round"] // 2, src) in wrong
        return outcome["status"] != "completed" and bool(f.fired)
