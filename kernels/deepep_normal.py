"""DeepEP's normal (intranode) dispatch and combine: per-channel ring buffers over NVLink.

Facts from deepseek-ai/DeepEP csrc/kernels/legacy/intranode.cu (notes in
shared/reference/protocols.md §2.1); the code is ours. Tokens are split into
``channels = cores // 2`` contiguous ranges; channel ch runs on two cores of
every rank: core 2ch sends, core 2ch+1 receives. Each (channel, src) queue lives
on the receiver: a ring of ``capacity`` rows (``channel_x``), its tail
(``channel_tail``, advanced by the sender) and the sender's count
(``channel_count``, stored as ``-n-1`` so that 0 means "not written yet"); the
queue's head (``channel_head``, slot ch*P + dst) lives on the sender, which
waits on it for free space; the receiver returns it after draining rows.

Dispatch, per launch: each core zeroes the words it waits on, then every core of
every rank meets in a barrier (notify's barrier_block). The sender stores the
encoded count for every destination, then per token: waits for a free row
(head >= tail + 1 - capacity), copies the token (its hidden words and its index)
into row tail % capacity, completes the copy (the release's fence: a p2p quiet)
and advances the tail. The receiver polls every count != 0, decodes it, and per
source waits for the tail to pass its head, takes the rows, returns the head.
The expert rank sums its local experts' outputs per token (weighted), and
combine sends the sums back through the mirrored rings (``combine_*``): the
owner knows from its dispatch how many sums each rank owes it per channel.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, Engine, Kind, Op, Role, Scope

from .base import Kernel, expert_fn, make_inputs
from .sim.machine import RegionSpec

COUNT, TAIL, HEAD, X, CTAIL, CHEAD, CX = range(7)
ENG = Engine.P2P
RING_ROWS = 2  # num_recv_buffer_tokens: small, so senders really wait for space


class DeepepNormal(Kernel):
    name = "deepep_normal"
    doc = ("DeepEP intranode dispatch/combine: per-channel NVLink rings with head/tail indices, "
           "counts encoded -n-1")
    faults = ("count-unencoded", "tail-before-payload", "head-not-returned", "wrong-channel-poll", "rank-stop")

    @classmethod
    def adjust(cls, p, faults):
        # Two channels at least (a receiver can poll the wrong one), a sender and a receiver core each.
        return p.with_(cores=max(4, p.cores - p.cores % 2))

    @classmethod
    def fault_bounds(cls, p):
        return {"core": p.cores}

    def __init__(self, params, plan, seed):
        super().__init__(params, plan, seed)
        p = params
        self.NC = p.cores // 2
        self.cap = p.capacity or RING_ROWS
        self._inp = {}
        self.recv = {}  # (round, rank, channel) -> list over src of (tokens, rows) taken
        self.picked = {}  # (fault name, round) -> what the kernel chose for it

    def regions(self):
        p, NC, cap = self.p, self.NC, self.cap
        q = NC * p.ranks
        W = p.hidden + 1  # a row carries the token's hidden words and its index on the owner
        return [
            RegionSpec("channel_count", Role.COUNTER, q, index="segment"),
            RegionSpec("channel_tail", Role.COUNTER, q, index="segment"),
            RegionSpec("channel_head", Role.COUNTER, q, index="segment"),
            RegionSpec("channel_x", Role.PAYLOAD, q * cap * W, slot_words=W),
            RegionSpec("combine_tail", Role.COUNTER, q, index="segment"),
            RegionSpec("combine_head", Role.COUNTER, q, index="segment"),
            RegionSpec("combine_x", Role.PAYLOAD, q * cap * W, slot_words=W),
        ]

    def manifest_params(self):
        return {**super().manifest_params(), "channels": self.NC, "ring_rows": self.cap}

    # ---- inputs ------------------------------------------------------------
    def inputs(self, g):
        if g not in self._inp:
            from .reference import moe_combine
            inp = make_inputs(self.p, self.seed, g)
            self._inp[g] = inp
            ref = moe_combine(inp.x, inp.ids, inp.scales, self.p.local_experts)
            for r in range(self.p.ranks):
                self.want[(g, r)] = ref[r]
        return self._inp[g]

    def channel_tokens(self, ch):
        B, NC = self.p.tokens, self.NC
        return np.arange(ch * B // NC, (ch + 1) * B // NC)

    def sends(self, g, src, ch, dst):
        """Tokens of ``src``'s channel ``ch`` that go to ``dst`` (once per destination rank)."""
        ids = self.inputs(g).ids[src]
        t = self.channel_tokens(ch)
        return t[(ids[t] // self.p.local_experts == dst).any(axis=1)]

    def _biggest_flow(self, g, rank, into: bool):
        """(channel, peer) of the largest dispatch flow into (or out of) ``rank``: where a withheld head bites."""
        P = self.p.ranks
        flows = [(len(self.sends(g, s, ch, rank) if into else self.sends(g, rank, ch, s)), ch, s)
                 for ch in range(self.NC) for s in range(P)]
        n, ch, s = max(flows)
        return ch, s, n

    # ---- program -----------------------------------------------------------
    def program(self, m, c):
        p = self.p
        ch, sender = divmod(c.core, 2)
        sender = sender == 0
        for g in range(p.rounds):
            yield from self.host_round(m, c, g)
            if ch >= self.NC:
                continue
            self.inputs(g)
            m.emit(c, [m.kernel(c, "dispatch_normal", True)])
            ok = yield from (self.d_send(m, c, g, ch) if sender else self.d_recv(m, c, g, ch))
            if not ok:
                return  # the rank stopped mid-dispatch
            m.emit(c, [m.kernel(c, "dispatch_normal", False)])
            yield m.barrier(("stream", c.rank, g), p.cores, None)  # combine launches after dispatch
            m.emit(c, [m.kernel(c, "combine_normal", True)])
            if sender:
                yield from self.c_recv(m, c, g, ch)
            else:
                yield from self.c_send(m, c, g, ch)
            m.emit(c, [m.kernel(c, "combine_normal", False)])

    def _notify(self, m, c, g, what, *regions):
        """Zero the words this core waits on, then barrier_block with every core of every rank."""
        P = self.p.ranks
        ch = c.core // 2
        m.emit(c, [m.write(c, region, ch * P + np.arange(P), 1, 0) for region in regions])
        yield m.barrier((what, g), P * self.NC * 2, Scope.ALL)

    def _wait(self, m, c, region, offs, cmp, value):
        """Wait until every word at ``offs`` satisfies ``cmp value``; returns what each observed."""
        w = m.wait(region, offs, cmp, value)
        obs = np.zeros(len(w.offsets), np.int64)
        while not w.done:
            g0, g1 = yield w
            obs[g0:g1] = m.heap.mem[region][c.rank][w.offsets[g0:g1]]
            m.emit(c, m.wait_parts(w, g0, g1, c), skip=w.partial)
            w.partial = 0
        return obs

    def _row_offsets(self, q, slot):
        W = self.p.hidden + 1
        return (q * self.cap + slot % self.cap) * W

    def _ring_send(self, m, c, dst, q, ring, rows, release=True, stop_after=None):
        """Send ``rows`` through queue ``q`` (slot ch*P+src on dst; its head ch*P+dst here) of ``ring``."""
        (head_reg, x_reg, tail_reg), W, cap = ring, self.p.hidden + 1, self.cap
        hq = (q // self.p.ranks) * self.p.ranks + dst
        for i, row in enumerate(rows):
            if stop_after is not None and i >= stop_after:
                return False
            if i + 1 - cap > 0:  # the ring is full: wait for the receiver to return rows
                yield from self._wait(m, c, head_reg, [hq], Cmp.GE, i + 1 - cap)
            put = m.put(c, ENG, dst, x_reg, [self._row_offsets(q, i)], row[None, :], W)
            parts = [put] + ([m.quiet(c, ENG)] if release else [])
            m.emit(c, parts + [m.signal(c, ENG, dst, tail_reg, [q], Op.SET, i + 1)])
            yield
        return True

    def _ring_recv(self, m, c, src, q, n, ring, poll=None, return_head=True):
        """Drain ``n`` rows of queue ``q`` of ``ring`` from ``src``; returns the rows taken. ``poll``: the tail word
        actually polled (the wrong-channel fault)."""
        (head_reg, x_reg, tail_reg), W, P = ring, self.p.hidden + 1, self.p.ranks
        hq = (q // P) * P + c.rank  # the head's slot on the sender
        head, out = 0, []
        while head < n:
            tail = int((yield from self._wait(m, c, tail_reg, [q if poll is None else poll], Cmp.GT, head))[0])
            tail = min(tail, n)
            for i in range(head, tail):
                out.append(m.heap.mem[x_reg][c.rank][self._row_offsets(q, i) + np.arange(W)].copy())
            head = max(head, tail)
            if return_head:
                m.emit(c, [m.signal(c, ENG, src, head_reg, [hq], Op.SET, head)])
            yield
        return np.array(out, np.int64).reshape(-1, W)

    def _fire(self, name, c, g, ch):
        """A fault of one core: the seed picks its channel; the place then names the core."""
        f = self.plan.get(name, rank=c.rank, round=g) if ch == self.seed % self.NC else None
        if f is not None:
            f.place["core"] = c.core
        return f

    # ---- dispatch ----------------------------------------------------------
    def d_send(self, m, c, g, ch):
        p, r = self.p, c.rank
        P = p.ranks
        inp = self.inputs(g)
        yield from self._notify(m, c, g, "dispatch", HEAD)
        toks = self.channel_tokens(ch)
        K = p.topk
        pairs = (toks[:, None] * K + np.arange(K)).reshape(-1)
        flat = inp.ids[r].reshape(-1)[pairs]
        if self.route_layout == "read":
            if ch == 0:
                self.record_routes_at_read(m, c, inp.ids[r].reshape(-1), inp.ids[r].reshape(-1) // p.local_experts)
        else:
            m.emit(c, [m.info(Kind.ROUTE, len(pairs), token=pairs // K, topk=pairs % K, expert=flat,
                              dst_rank=flat // p.local_experts)])
        raw = self.plan.hit("count-unencoded", rank=r, round=g)
        for dst in range(P):
            n = len(self.sends(g, r, ch, dst))
            m.emit(c, [m.signal(c, ENG, dst, COUNT, [ch * P + r], Op.SET, n if raw else -n - 1)])
        yield
        stop = self.plan.hit("rank-stop", rank=r, round=g)
        late = self._fire("tail-before-payload", c, g, ch)
        for dst in range(P):
            t = self.sends(g, r, ch, dst)
            rows = np.concatenate([inp.x[r][t].astype(np.int64), t[:, None]], axis=1)
            ok = yield from self._ring_send(m, c, dst, ch * P + r, DISPATCH_RING, rows, release=not late,
                                            stop_after=len(rows) // 2 if stop else None)
            if not ok:
                return False
        if late:
            m.emit(c, [m.quiet(c, ENG)])  # the end of the kernel completes the stores at last
        return True

    def d_recv(self, m, c, g, ch):
        p, r = self.p, c.rank
        P, L, H = p.ranks, p.local_experts, p.hidden
        yield from self._notify(m, c, g, "dispatch", COUNT, TAIL)
        if self.plan.hit("rank-stop", rank=r, round=g):
            return False
        wrong = self._fire("wrong-channel-poll", c, g, ch)
        withhold = self.plan.get("head-not-returned", rank=r, round=g)
        if withhold is not None:
            wch, wsrc, _ = self._biggest_flow(g, r, into=True)
            withhold.place.update(channel=wch, src_rank=wsrc)
        enc = (yield from self._wait(m, c, COUNT, ch * P + np.arange(P), Cmp.NE, 0))
        counts = np.maximum(-enc - 1, 0)  # decode; a garbage (positive) word decodes to nothing
        inp = self.inputs(g)
        got = []
        for src in range(P):
            q = ch * P + src
            poll = None
            if wrong is not None:
                poll = ((ch + 1) % self.NC) * P + src
            keep = not (withhold is not None and (ch, src) == (withhold.place["channel"], withhold.place["src_rank"]))
            rows = yield from self._ring_recv(m, c, src, q, int(counts[src]), DISPATCH_RING, poll=poll,
                                              return_head=keep)
            tok = np.clip(rows[:, H], 0, p.tokens - 1)
            ids, sc = inp.ids[src][tok], inp.scales[src][tok]
            local = (ids // L) == r
            y = np.zeros((len(rows), H), np.int64)
            for k in range(p.topk):
                e = ids[:, k]
                y += np.where(local[:, k, None], expert_fn(rows[:, :H], e) * sc[:, k, None], 0)
            got.append((rows[:, H], y))
        self.recv[(g, r, ch)] = got
        return True

    # ---- combine -----------------------------------------------------------
    def c_send(self, m, c, g, ch):
        """Core 2ch+1: the sums of the tokens it received go back to their owners."""
        P = self.p.ranks
        yield from self._notify(m, c, g, "combine", CHEAD)
        for owner, (tok, y) in enumerate(self.recv[(g, c.rank, ch)]):
            rows = np.concatenate([y, tok[:, None]], axis=1)
            yield from self._ring_send(m, c, owner, ch * P + c.rank, COMBINE_RING, rows)

    def c_recv(self, m, c, g, ch):
        """Core 2ch: from every rank, the sums of this channel's tokens it sent there."""
        p, r = self.p, c.rank
        P, H = p.ranks, p.hidden
        yield from self._notify(m, c, g, "combine", CTAIL)
        out = self.got.setdefault((g, r), np.zeros((p.tokens, H), np.int64))
        for d in range(P):
            n = len(self.sends(g, r, ch, d))
            rows = yield from self._ring_recv(m, c, d, ch * P + d, n, COMBINE_RING)
            tok = rows[:, H]
            ok = (tok >= 0) & (tok < p.tokens)
            np.add.at(out, tok[ok], rows[ok, :H])

    def manifested(self, f, outcome) -> bool:
        st = outcome["status"]
        if f.name == "head-not-returned":
            ch, src = f.place.get("channel"), f.place.get("src_rank")
            return st == "hung" and ch is not None and len(self.sends(f.place["round"], src, ch, f.place["rank"])) > self.cap
        return st != "completed" and bool(f.fired)


# The rings' regions, at the end of the module so that the kernel's lines (the events' sites) stay put:
# (the receiver's returned head, on the sender; the rows; the sender's tail).
DISPATCH_RING, COMBINE_RING = (HEAD, X, TAIL), (CHEAD, CX, CTAIL)
