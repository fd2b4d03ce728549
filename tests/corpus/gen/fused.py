"""dispatch_gmm_combine (protocols.md 1.5): fused dispatch + expert GEMM + combine with an epoch count exchange.

4 ranks x 2 cores, 2 local experts, hidden 4. Per launch, count = sync_base + 1. The core serving
peer d (d = core, core+2) announces this rank's tokenPerExpert for d's experts (``count`` events)
and, for d != self, writes the whole tokenPerExpert[P*L] with count appended last in ONE copy to
slot my_rank of d's ``sync`` region: recorded as a put_signal (payload words, then the epoch
word). Then it waits each served peer's epoch word ``ge count`` (SHMEM accepts count or count+1).
SyncAll (scope core), core 0 stores sync_base = count. Data is pulled: the core owning
(local expert e, source s) gets s's rows for expert r*L+e from s's xsend (rows staged by the host,
sorted by expert) into recv at e*cap + rowStart, clamped at the capacity (``deliver`` records
requested / delivered / capacity). Quiet, SyncAll; the core serving owner o puts each result to
o's combine_data slot token*K+topk, quiet, the status words (1), quiet. The owner waits the status
of each of its pairs that was not clamped (it computes the clamp from the count matrix), unguarded
for invalid ids like combine_classic, and resets it to 0. Launches are separated by a host sync.
"""

from __future__ import annotations

from ._sched import RAN, Gate, Runner, wait
from ._trace import Trace
from .registry import case, clean, roots

P, C, L, H = 4, 2, 2, 4
WD = P * L + 1  # tokenPerExpert + the epoch word
NAME = "dispatch_gmm_combine"
ROUTES = (
    (((1, 6), (3, 4)), ((0, 4), (4, 7)), ((4, 1), (6, 3)), ((5, 2), (7, 3))),
    (((2, 5), (7, 0)), ((5, 1), (6, 2)), ((0, 7), (3, 4)), ((3, 0), (3, 6))),
)


class Fused:
    def __init__(self, routes=ROUTES, *, cap=None, clamp=True, params=True, annotated=False):
        self.routes = routes
        self.rounds = len(routes)
        self.B, self.K = len(routes[0][0]), len(routes[0][0][0])
        self.cap = cap or P * self.B
        self.clamp, self.annotated = clamp, annotated
        B, K, cap = self.B, self.K, self.cap
        regs = [
            {"name": "xsend", "role": "payload", "elem_bytes": 4, "length": B * K * H, "slot_words": H},
            {"name": "xsend_meta", "role": "meta", "elem_bytes": 4, "length": B * K * 2, "slot_words": 2},
            {"name": "sync", "role": "counter", "elem_bytes": 4, "length": P * WD, "monotonic": True,
             "slot_words": WD, "index": "rank"},
            {"name": "sync_base", "role": "counter", "elem_bytes": 4, "length": 1, "monotonic": True},
            {"name": "recv", "role": "payload", "elem_bytes": 4, "length": L * cap * H, "slot_words": H},
            {"name": "recv_meta", "role": "meta", "elem_bytes": 4, "length": L * cap * 2, "slot_words": 2},
            {"name": "combine_data", "role": "payload", "elem_bytes": 4, "length": B * K * H, "slot_words": H,
             "index": "token_topk"},
            {"name": "combine_status", "role": "flag", "elem_bytes": 4, "length": B * K, "reset": 0,
             "index": "token_topk"},
        ]
        params = {"tokens": B, "topk": K, "hidden": H, "local_experts": L, "num_experts": P * L,
                  "capacity": cap} if params else None
        self.tr = Trace(ranks=P, cores=C, regions=regs, protocol="fused", params=params, annotated=annotated)
        self.host = [Gate(P * C) for _ in range(self.rounds)]
        self.sync = {(g, r, i): Gate(C) for g in range(self.rounds) for r in range(P) for i in range(2)}

    def run(self):
        run = Runner(self.tr)
        for r in range(P):
            for c in range(C):
                run.start(r, c, self.core(r, c))
        self.hung = run.run()
        return self.tr

    # ---- what the host staged and what every rank computes from the count matrix ----
    def valid(self, e):
        return 0 <= e < P * L

    def staged(self, g, r):
        """Rank r's valid pairs sorted by expert (xsend order), tokenPerExpert and each expert's first row."""
        pairs = [(t, k, self.routes[g][r][t][k]) for t in range(self.B) for k in range(self.K)]
        pairs = sorted((p for p in pairs if self.valid(p[2])), key=lambda p: p[2])
        tpe = [sum(1 for p in pairs if p[2] == ge) for ge in range(P * L)]
        start = [sum(tpe[:ge]) for ge in range(P * L)]
        return pairs, tpe, start

    def taken(self, g, s, ge):
        """(rowStart, requested, taken) of source s for global expert ge on its expert rank."""
        row0 = sum(self.staged(g, q)[1][ge] for q in range(s))
        n = self.staged(g, s)[1][ge]
        if not self.clamp:
            return row0, n, n
        return row0, n, (min(n, self.cap - row0) if row0 < self.cap else 0)

    # ------------------------------------------------------------------------------------
    def core(self, r, c):
        for g in range(self.rounds):
            if g:
                yield from self.host[g].pass_()
            self.tr.launch(g, [r])
            if not (yield from self.launch(g, r, c)):
                return

    def syncall(self, g, r, c, i):
        self.tr.barrier(r, c, "core")
        yield from self.sync[(g, r, i)].pass_()
        self.tr.barrier(r, c, "core", False)

    def launch(self, g, r, c):
        tr, B, K, cap = self.tr, self.B, self.K, self.cap
        count = tr.read(r, "sync_base", 0) + 1
        pairs, tpe, start = self.staged(g, r)
        tr.kernel(r, c, NAME)
        if c == 0:  # where expert_ids are read: every pair once, invalid ones too
            for t in range(B):
                for k in range(K):
                    e = self.routes[g][r][t][k]
                    tr.route(r, c, t, k, e, dst_rank=e // L if self.valid(e) else None)
        yield RAN
        served = list(range(c, P, C))
        for d in served:
            for e in range(L):
                tr.count(r, c, d, e, tpe[d * L + e], capacity=cap if self.annotated else None)
            if d != r:
                tr.put_signal(r, c, d, "sync", r * WD, (WD - 1) * 4, "sync", r * WD + WD - 1, count, epoch=count)
            yield RAN
        tr.quiet(r, c)
        for d in served:
            if d != r:
                yield from wait(tr, r, c, "sync", d * WD + WD - 1, "ge", count, epoch=count)
        yield from self.syncall(g, r, c, 0)
        if c == 0:
            tr.write(r, c, "sync_base", 0, 4, count)
        for j in range(c, L * P, C):
            e, s = divmod(j, P)
            ge = r * L + e
            row0, n, take = self.taken(g, s, ge)
            tr.deliver(r, c, e, s, n, take, cap)
            if take:
                src = self.staged(g, s)[2][ge]
                tr.get(r, c, s, "xsend", src * H, take * H * 4, "recv", (e * cap + row0) * H)
                tr.get(r, c, s, "xsend_meta", src * 2, take * 8, "recv_meta", (e * cap + row0) * 2)
            yield RAN
        tr.quiet(r, c)
        yield from self.syncall(g, r, c, 1)
        for owner in served:  # the expert GEMM ran on the rows taken; results go back
            slots = []
            for e in range(L):
                ge = r * L + e
                row0, _, take = self.taken(g, owner, ge)
                opairs, _, ostart = self.staged(g, owner)
                slots += [opairs[ostart[ge] + i][0] * K + opairs[ostart[ge] + i][1] for i in range(take)]
            for slot in slots:
                tr.put(r, c, owner, "combine_data", slot * H, H * 4)
            if slots:
                tr.quiet(r, c)
            for slot in slots:
                tr.put(r, c, owner, "combine_status", slot, 4, 1)
            if slots:
                tr.quiet(r, c)
            yield RAN
        for t in range(c, B, C):
            for k in range(K):
                e = self.routes[g][r][t][k]
                if self.valid(e) and self.clamp:
                    i = next(i for i, p in enumerate(pairs) if p[:2] == (t, k)) - start[e]
                    if self.taken(g, r, e)[0] + i >= cap:
                        continue  # clamped by the expert rank: nothing will come
                yield from wait(tr, r, c, "combine_status", t * K + k, "eq", 1)
                tr.write(r, c, "combine_status", t * K + k, 4, 0)
            yield RAN
        tr.kernel(r, c, NAME, False)
        yield RAN
        return True


# Top-1 routing, 4 tokens: rank 0 sends all four to expert 2 (rank 1, local expert 0); no expert
# gets more than 3 rows otherwise, so a capacity of 3 rows clamps nothing but that segment.
SKEWED = ((((2,), (2,), (2,), (2,)), ((0,), (3,), (4,), (5,)), ((1,), (6,), (7,), (3,)),
           ((0,), (4,), (5,), (6,))),)


MINUS_ONE = (tuple(tuple(tuple(-1 if (r, t, k) == (3, 1, 0) else e for k, e in enumerate(tk))
                         for t, tk in enumerate(rk)) for r, rk in enumerate(ROUTES[0])),)


@case
def fused_clean():
    """Two clean launches of dispatch_gmm_combine (epoch 1, 2); bare manifest and events."""
    return Fused().run(), clean("two clean launches, count exchange by epoch, nothing clamped")


@case
def fused_minus_one_no_sentinel():
    """Issue 9 item 8: rank 3 routes token 1 top-k 0 to expert -1; the manifest's params give
    num_experts but no expert_sentinel, so no sentinel is allowed. tokenPerExpert has no entry
    for it, nothing sends it, and rank 3's combine (core 1) waits forever for its status."""
    return Fused(MINUS_ONE).run(), roots([("MT501", 3, 0)], "expert -1 with no sentinel: invalid "
                                          "whatever num_experts is; the stuck status wait is its symptom")


@case
def fused_minus_one_no_params():
    """The same -1 in a manifest with no params at all (no num_experts, no sentinel): an id
    below 0 is no expert of any kernel, so the route is still the root."""
    return Fused(MINUS_ONE, params=False).run(), roots(
        [("MT501", 3, 0)], "no params: -1 is invalid whatever num_experts is")


@case
def fused_deliver_over_capacity():
    """Issue 9 item 8: the receive path lost its clamp (``rows = min(rows, cap - rowStart)``):
    rank 1 takes all 4 rows rank 0 sent to its local expert 0 into a capacity of 3, so the 4th
    row lands on local expert 1's first row; deliver says delivered 4 > capacity 3. The owner
    waits all its pairs, so nothing hangs: silent corruption. Counts carry no capacity (bare)."""
    return Fused(SKEWED, cap=3, clamp=False).run(), roots(
        [(("MT301", "MT302", "MT303"), 1, 0)],
        "a capacity-truncation finding at the receiver rank 1 core 0 (deliver delivered 4 > capacity 3)")
