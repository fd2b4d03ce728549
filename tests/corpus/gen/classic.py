"""cann/shmem dispatch_classic + combine_classic_once, written from the seeds (protocols.md 1.2-1.3).

4 ranks x 2 AIV cores, 2 tokens per rank, top-2, 2 local experts (8 experts), hidden 4.
Window per rank: payload | assist | ready | count | combine_data | combine_status; ready,
assist, count and status entries are 8 int32 words (32 B). Producer core i serves dst
ranks i, i+2: per pair a payload put + quiet, then the three assist words + quiet, then
per local expert its ready slots (8 words of 1) + quiet and the count slot {1, n, 0..} +
quiet (a count slot for every local expert, empty or not). Core barrier (scope core),
then core 0 waits every count slot == 1, reads n, waits each ready slot (8 words == 1),
takes the row, resets the ready slot to 0, records the deliver and resets the count slot
to -1. Combine (same launch, after every core's dispatch ended: stream order, not
recorded): core i puts each row it received from owners i, i+2 back to the owner's
combine_data slot token*K+topk, quiet, its status slot (8 words of 1), quiet; then the
owner's core t (token t) waits both top-k status slots and resets them to 0. Rounds are
launches separated by the host's stream sync + barrier_all (not recorded).

A put records ``value`` = the word at its offset (1 for ready / status / the count slot's
flag word); the count itself travels in the ``count`` event, as the kernel announces it.
"""

from __future__ import annotations

from ._sched import RAN, Gate, Runner, stall, wait
from ._trace import Trace

P, C, B, K, L, H = 4, 2, 2, 2, 2, 4
S = B * K  # slots per segment: the classic kernel cannot truncate
SLOT = 8
NUM_EXPERTS = P * L
# expert_ids[round][rank][token][topk]: distinct top-k, every rank sends to several ranks.
ROUTES = (
    (((1, 6), (3, 4)), ((0, 4), (4, 7)), ((4, 1), (6, 3)), ((5, 2), (7, 3))),
    (((2, 5), (7, 0)), ((5, 1), (6, 2)), ((0, 7), (3, 4)), ((3, 0), (3, 6))),
)
PARAMS = {"tokens": B, "topk": K, "hidden": H, "local_experts": L, "num_experts": NUM_EXPERTS,
          "capacity": S, "expert_sentinel": None}
SITES = {"1": "examples/dispatch/dispatch_classic/dispatch_kernel.cpp:120",
         "2": "examples/dispatch/dispatch_classic/dispatch_kernel.cpp:250",
         "3": "examples/combine/combine_classic/combine_kernel.cpp:110"}


def regions():
    seg = P * L * S
    return [
        {"name": "payload", "role": "payload", "elem_bytes": 4, "length": seg * H, "slot_words": H,
         "index": "dispatch"},
        {"name": "assist", "role": "meta", "elem_bytes": 4, "length": seg * SLOT, "slot_words": SLOT,
         "index": "dispatch"},
        {"name": "ready", "role": "flag", "elem_bytes": 4, "length": seg * SLOT, "reset": 0,
         "slot_words": SLOT, "index": "dispatch"},
        {"name": "count", "role": "counter", "elem_bytes": 4, "length": L * P * SLOT, "reset": -1,
         "slot_words": SLOT, "index": "segment"},
        {"name": "combine_data", "role": "payload", "elem_bytes": 4, "length": B * K * H, "slot_words": H,
         "index": "token_topk"},
        {"name": "combine_status", "role": "flag", "elem_bytes": 4, "length": B * K * SLOT, "reset": 0,
         "slot_words": SLOT, "index": "token_topk"},
    ]


def dst_of(expert: int) -> tuple[int, int]:
    """C++ int64 division and remainder, truncating toward zero as the kernel computes them."""
    q = abs(expert) // L * (1 if expert >= 0 else -1)
    return q, expert - q * L


class Classic:
    """One classic run; ``faults`` are the knobs the corpus scripts turn (see each trace)."""

    def __init__(self, rounds=2, *, params=True, annotated=False, keep=(), faults=None, protocol="classic",
                 barrier=None):
        self.rounds, self.barrier = rounds, barrier
        self.f = faults or {}
        self.tr = Trace(ranks=P, cores=C, regions=regions(), protocol=protocol,
                        params=dict(PARAMS) if params else None, annotated=annotated, keep=keep, sites=SITES)
        self.host = [Gate(P * C) for _ in range(rounds)]
        self.dispatched = {(g, r): Gate(C) for g in range(rounds) for r in range(P)}
        self.core_bar = {(g, r): Gate(C) for g in range(rounds) for r in range(P)}
        self.gates: dict = {}
        self.rows: dict = {}  # (round, rank) -> the (src, token, topk) of each row rank received

    def gate(self, n, *key):
        if key not in self.gates:
            self.gates[key] = Gate(n)
        return self.gates[key]

    def ids(self, g, r, t, k):
        return self.f.get("invalid", {}).get((g, r, t, k), ROUTES[g][r][t][k])

    def run(self):
        run = Runner(self.tr)
        for r in range(P):
            for c in range(C):
                run.start(r, c, self.core(r, c))
        self.runner = run
        self.hung = run.run()
        return self.tr

    def stall_at(self, g, r, c, where):
        return stall(self.f.get("stall", {}).get((g, r, c, where), 0))

    # ------------------------------------------------------------------
    def core(self, r, c):
        for g in range(self.rounds):
            if g:
                yield from self.host[g].pass_()
            self.tr.launch(g, [r])
            if not (yield from self.dispatch(g, r, c)):
                return
            yield from self.dispatched[(g, r)].pass_()  # combine launches after dispatch on the stream
            if not (yield from self.combine(g, r, c)):
                return

    def pairs(self, g, r):
        return [(t, k, self.ids(g, r, t, k)) for t in range(B) for k in range(K)]

    def dispatch(self, g, r, c):
        tr = self.tr
        tr.kernel(r, c, "dispatch_classic")
        yield RAN
        yield from self.stall_at(g, r, c, "dispatch")
        if c == 0 and self.f.get("routes", "read") == "read":  # where expert_ids are read: every pair once
            for t, k, e in self.pairs(g, r):
                tr.route(r, c, t, k, e, dst_rank=dst_of(e)[0], site=1)
            yield RAN
        for dst in range(c, P, C):
            sel = [(t, k, e) for t, k, e in self.pairs(g, r) if dst_of(e)[0] == dst]
            slot_of, n_of = {}, [0] * L
            for t, k, e in sel:
                loc = dst_of(e)[1]
                slot_of[(t, k)] = (loc, n_of[loc])
                n_of[loc] += 1
            gslot = {tk: (r * L + loc) * S + i for tk, (loc, i) in slot_of.items()}
            if self.f.get("routes") == "filter":  # recorded inside the send loop: sent pairs only
                for t, k, e in sel:
                    tr.route(r, c, t, k, e, dst_rank=dst, slot=slot_of[(t, k)][1], site=1)
            for t, k, e in sel:
                tr.put(r, c, dst, "payload", gslot[(t, k)] * H, H * 4, site=1)
                if (g, r, c) in self.f.get("die", ()):
                    return False  # the core died here: no quiet, nothing after
                if (g, r, c) not in self.f.get("no_quiet", ()):  # else the assist quiet drains it, late
                    tr.quiet(r, c)
                yield RAN
            for t, k, e in sel:
                for w, v in enumerate((r, t, k)):
                    tr.signal(r, c, dst, "assist", gslot[(t, k)] * SLOT + w, v)
            if sel:
                tr.quiet(r, c)
            yield RAN
            shift = 1 if self.f.get("ready_shift") == (g, r, dst) else 0  # the off-by-one
            for loc in range(L):
                mine = [gslot[tk] for tk, (lo, _) in slot_of.items() if lo == loc]
                for gs in mine:
                    tr.put(r, c, dst, "ready", (gs + shift) * SLOT, SLOT * 4, 1, data=[1] * SLOT, site=1)
                    yield RAN
                if mine:
                    tr.quiet(r, c)
                yield from self.stall_at(g, r, c, ("count", dst, loc))
                seg = loc * P + r
                tr.count(r, c, dst, loc, n_of[loc], capacity=S)
                tr.put(r, c, dst, "count", seg * SLOT, SLOT * 4, 1, data=[1, n_of[loc]] + [0] * (SLOT - 2),
                       site=1)
                tr.quiet(r, c)
                yield RAN
        tr.barrier(r, c, "core")  # aclshmemi_barrier_core_soft
        yield from self.core_bar[(g, r)].pass_()
        tr.barrier(r, c, "core", False)
        if c == 0:
            yield from self.receive(g, r)
        tr.kernel(r, c, "dispatch_classic", False)
        yield RAN
        return True

    def receive(self, g, r):
        tr, c = self.tr, 0
        n = {}
        for seg in range(L * P):
            yield from wait(tr, r, c, "count", seg * SLOT, "eq", 1, site=2)
            n[seg] = tr.read(r, "count", seg * SLOT + 1)
        rows = self.rows[(g, r)] = []
        for seg in range(L * P):
            loc, src = divmod(seg, P)
            for i in range(n[seg]):
                gs = (src * L + loc) * S + i
                yield from wait(tr, r, c, "ready", gs * SLOT, "eq", 1, words=SLOT, site=2)
                rows.append((src, tr.read(r, "assist", gs * SLOT + 1), tr.read(r, "assist", gs * SLOT + 2)))
                tr.write(r, c, "ready", gs * SLOT, SLOT * 4, 0)
            tr.deliver(r, c, loc, src, n[seg], n[seg], S)
            if (g, r, seg) not in self.f.get("keep_count", ()):
                tr.write(r, c, "count", seg * SLOT, SLOT * 4, -1)
            yield RAN

    def barrier_all(self, g, r, c):
        """The seed's BARRIER_ALL_RANKS() before the combine sends, an opaque aclshmem_barrier_all:
        recorded on every core (``all``), or on core 0 between two scope-core barriers (``core0``)."""
        tr = self.tr
        if self.barrier == "all":
            tr.barrier(r, c, "all")
            yield from self.gate(P * C, g, "all").pass_()
            tr.barrier(r, c, "all", False)
            return
        for side in ("in", "out"):
            tr.barrier(r, c, "core")
            yield from self.gate(C, g, r, side).pass_()
            tr.barrier(r, c, "core", False)
            if c == 0 and side == "in":
                tr.barrier(r, c, "all")
                yield from self.gate(P, g, "all").pass_()
                tr.barrier(r, c, "all", False)

    def combine(self, g, r, c):
        tr = self.tr
        tr.kernel(r, c, "combine_classic")
        yield RAN
        yield from self.stall_at(g, r, c, "combine")
        if self.barrier:
            yield from self.barrier_all(g, r, c)
        for owner in range(c, P, C):
            for src, t, k in self.rows[(g, r)]:
                if src != owner:
                    continue
                slot = t * K + k
                tr.put(r, c, owner, "combine_data", slot * H, H * 4)
                tr.quiet(r, c)
                tr.put(r, c, owner, "combine_status", slot * SLOT, SLOT * 4, 1, data=[1] * SLOT, site=3)
                tr.quiet(r, c)
                yield RAN
        budget = self.f.get("timeout", {}).get((g, r, c))
        for t in range(c, B, C):
            for k in range(K):
                ok = yield from wait(tr, r, c, "combine_status", (t * K + k) * SLOT, "eq", 1, words=SLOT,
                                     timeout=budget, site=3)
                if not ok:
                    return False  # DeepEP-style: print and trap right after the timeout
            if (g, r, c) not in self.f.get("keep_status", ()):
                for k in range(K):
                    tr.write(r, c, "combine_status", (t * K + k) * SLOT, SLOT * 4, 0)
            yield RAN
        tr.kernel(r, c, "combine_classic", False)
        yield RAN
        return True

