"""A staged tile send over UDMA with a per-peer row count (seed 001 "UDMA 原语": Put/Get are
non-blocking submissions, `aclshmemx_udma_quiet(pe)` before a get's result is read or a put's
source is reused; seed 004 sections 2.3 and 6.3: UDMA scalar atomics, int32/uint32/int64/
uint64/float only, a quiet before the result is read, no concurrent RMA and AMO to one PE).

4 ranks x 2 cores, tiles of T words. Per launch, core c of rank r serves the peers d != r with
d % 2 == c (rank 0 core 1 serves 1 and 3). Per peer, in order:
  fill the core's staging slot stage[c*T..) with the tile for d (a local ``write``, or an MTE
  ``get`` from x on the rank across, then ``aclshmem_quiet``);
  ``aclshmemx_udma_put_nbi`` payload[r*T..) on d from the staging slot (the put names its
  source: local_region stage, local_offset c*T); ``aclshmemx_udma_quiet(d)``;
  ``aclshmemx_udma_atomic_add`` of the rows (T, int32) into count[r] on d, and the tile's
  weight into wsum[r] (half) or wsumf[r] (float) on d where a case asks;
  ``aclshmemx_udma_quiet(d)``; a UDMA signal done[r] = 1 on d, landed by a last quiet.
Core 0 of each rank waits every done[s], checks (as the script, not the trace) that payload
holds the tile s meant for it, then resets count, wsum, wsumf and done to 0 for the next launch.
Helper layouts (core 1 fills core 0's slot, or adds core 0's counts): see ``helper_round``.

The memory model reads a put's source when the put lands (at its quiet), not when it is
issued: a source refilled before the quiet sends the new contents, as the engine would.
"""

from __future__ import annotations

from ._sched import RAN, Gate, Runner, wait
from ._trace import Trace

P, C, T = 4, 2, 8
NAME = "udma_tile_send"
FULL = {"platform": "Ascend950", "transport": [["udma" if p != r else None for p in range(P)] for r in range(P)]}


def tile(g, r, d):
    """The value of every word of the tile rank r sends rank d in launch g (never 0)."""
    return 1000 * (g + 1) + 10 * r + d


class EngineTrace(Trace):
    """The corpus trace plus the manifest's engine-limit keys (platform, transport) when full."""

    def __init__(self, *, full: bool, **kw):
        super().__init__(annotated=full, **kw)
        self.full = full

    def manifest(self) -> dict:
        doc = super().manifest()
        if self.full:
            doc.update(FULL)
        return doc


class Source:
    """A put's source words, read when the put lands."""

    def __init__(self, tr, rank, region, offset):
        self.tr, self.rank, self.region, self.offset = tr, rank, region, offset

    def __getitem__(self, i):
        return self.tr.read(self.rank, self.region, self.offset + i)


class UdmaSend:
    """``faults``: (launch, rank, core) -> what that core does wrong, one of
    "refill"  one quiet after all its puts, the staging slot refilled for the next peer before it;
    "get_refill"  the same with the fill an MTE get (its MTE quiet completes no UDMA put);
    "mte_quiet"  the put is completed with ``aclshmem_quiet`` (MTE) before the refill: no UDMA quiet;
    "tail_word"  after the put, the tile's last word (its trailer) is written before the quiet;
    "amo_unquieted"  the count add is issued before the put's quiet (one quiet after both);
    "half_abort"  a half weight add over UDMA: the unified API aborts, the core stops there;
    "half_weight"  a half weight add over UDMA through the engine API: the trace goes on;
    "float_weight"  a float weight add over UDMA (supported: not a fault).
    ``helper``: "fill": core 1 fills core 0's staging slot (GM, shared) and core 0 sends it;
    "count": core 1 adds the counts of core 0's tiles (one UDMA queue per PE serves the rank's
    cores); ``early_handback``: core 0 hands over before its put's quiet (see helper_round);
    ``fill_put``: core 1 fills the slot with a put to its own rank (a GM-to-GM copy from x).
    """

    def __init__(self, rounds=2, *, faults=None, full=False, dtype=True, helper=None,
                 early_handback=False, fill_put=False):
        self.rounds, self.faults, self.dtype = rounds, dict(faults or {}), dtype
        self.helper, self.early_handback, self.fill_put = helper, early_handback, fill_put
        regs = [{"name": "payload", "role": "payload", "elem_bytes": 4, "length": P * T, "slot_words": T,
                 "index": "rank"},
                {"name": "stage", "role": "payload", "elem_bytes": 4, "length": C * T},
                {"name": "x", "role": "payload", "elem_bytes": 4, "length": P * T, "slot_words": T},
                {"name": "count", "role": "counter", "elem_bytes": 4, "length": P, "reset": 0, "index": "rank"},
                {"name": "wsum", "role": "output", "elem_bytes": 2, "length": P, "reset": 0, "index": "rank"},
                {"name": "wsumf", "role": "output", "elem_bytes": 4, "length": P, "reset": 0, "index": "rank"},
                {"name": "done", "role": "flag", "elem_bytes": 4, "length": P, "reset": 0, "index": "rank"}]
        self.tr = EngineTrace(full=full, ranks=P, cores=C, regions=regs, protocol="udma_tile_send",
                              params={"tokens": T}, names=[NAME])
        self.host = [Gate(P * C) for _ in range(rounds)]
        self.hand = {}
        self.corrupt: list[tuple[int, int, int]] = []  # (launch, receiver, sender) with a wrong tile

    def run(self):
        self.runner = Runner(self.tr)
        for r in range(P):
            for c in range(C):
                self.runner.start(r, c, self.core(r, c))
        self.hung = self.runner.run()
        return self.tr

    # ---- one-sided operations with delayed landing --------------------------------------
    def put(self, r, c, d, pending, slot):
        tr = self.tr
        tr.emit(r, c, "put", engine="udma", peer=d, region="payload", offset=r * T, nbytes=T * 4,
                value=tr.read(r, "stage", slot), local_region="stage", local_offset=slot)
        pending.append((d, [(d, "payload", r * T, T, None, Source(tr, r, "stage", slot))]))

    def quiet(self, r, c, pending, peer=None, engine="udma"):
        self.tr.quiet(r, c, engine, peer)
        if engine != "udma":
            return  # aclshmem_quiet drains the core's pipes: it completes no UDMA work
        for item in [x for x in pending if peer is None or x[0] == peer]:
            self.tr.land(item[1])
            pending.remove(item)

    def amo(self, r, c, d, pending, region, value, dtype):
        tr = self.tr
        tr.emit(r, c, "amo", engine="udma", peer=d, region=region, offset=r, op="add", value=value,
                dtype=dtype if self.dtype else None)
        pending.append((d, [(d, region, r, 1, value, None, "add")]))

    def fill(self, r, c, d, g, slot, how, pending):
        tr = self.tr
        if how == "write":
            tr.write(r, c, "stage", slot, T * 4, tile(g, r, d))
            return
        src = (r + 2) % P  # x on the rank across holds the tile r forwards to d (written by the host)
        for i in range(T):
            tr.mem[(src, "x", d * T + i)] = tile(g, r, d)
        tr.get(r, c, src, "x", d * T, T * 4, "stage", slot, engine="mte")
        self.quiet(r, c, pending, None, "mte")  # aclshmem_quiet completes the MTE get (not the UDMA put)

    # ---- the kernel -------------------------------------------------------------------------
    def peers(self, r, c):
        if self.helper:  # core 0 sends to every peer, core 1 helps
            return [d for d in range(P) if d != r] if c == 0 else []
        return [d for d in range(P) if d != r and d % C == c]

    def handover(self, r, c, g, k):
        """sync_all number k of (launch, rank): both cores pass it together."""
        key = (g, r, k)
        self.hand.setdefault(key, Gate(C))
        self.tr.pipe_sync(r, c, "sync_all", "all")
        yield from self.hand[key].pass_()

    def core(self, r, c):
        tr = self.tr
        for g in range(self.rounds):
            if g:
                yield from self.host[g].pass_()
            tr.launch(g, [r])
            tr.kernel(r, c, NAME)
            if self.helper:
                yield from self.helper_round(r, c, g)
            else:
                yield from self.send_round(r, c, g)
            if c == 0:
                yield from self.receive(r, c, g)
            tr.kernel(r, c, NAME, False)
            yield RAN

    def send_round(self, r, c, g):
        fault = self.faults.get((g, r, c))
        pending: list = []
        slot = c * T
        how = "get" if fault == "get_refill" else "write"
        peers = self.peers(r, c)
        if fault in ("refill", "get_refill", "mte_quiet"):
            for d in peers:
                self.fill(r, c, d, g, slot, how, pending)
                self.put(r, c, d, pending, slot)
                if fault == "mte_quiet":
                    self.quiet(r, c, pending, None, "mte")
                yield RAN
            self.quiet(r, c, pending)
            for d in peers:
                self.amo(r, c, d, pending, "count", T, "int32")
            self.quiet(r, c, pending)
            for d in peers:
                yield from self.notify(r, c, d, pending)
            return
        for d in peers:
            self.fill(r, c, d, g, slot, how, pending)
            self.put(r, c, d, pending, slot)
            if fault == "tail_word":
                tr = self.tr
                tr.write(r, c, "stage", slot + T - 1, 4, tile(g, r, d) + 1)  # the trailer, too early
            if fault != "amo_unquieted":
                self.quiet(r, c, pending, d)
            self.amo(r, c, d, pending, "count", T, "int32")
            if fault == "float_weight":
                self.amo(r, c, d, pending, "wsumf", 1, "float")
            if fault in ("half_abort", "half_weight"):
                self.amo(r, c, d, pending, "wsum", 1, "half")
                if fault == "half_abort":
                    while True:  # kernel_abort: the core stops at the amo and never records again
                        yield "blocked"
            self.quiet(r, c, pending, d)
            yield RAN
            yield from self.notify(r, c, d, pending)

    def notify(self, r, c, d, pending):
        tr = self.tr
        tr.emit(r, c, "signal", engine="udma", peer=d, region="done", offset=r, op="set", value=1)
        pending.append((d, [(d, "done", r, 1, 1, None, "set")]))
        self.quiet(r, c, pending, d)
        yield RAN

    def helper_round(self, r, c, g):
        """Core 0 puts a tile to every peer; core 1 fills the slot (helper "fill") or adds the
        counts (helper "count"). sync_all A hands the filled slot over, B hands it back once the
        put is complete (with ``early_handback`` on launch 0 rank 0: before the put's quiet),
        C hands the added count to core 0's done signal."""
        pending: list = []
        early = self.early_handback and (g, r) == (0, 0)
        fills, counts = self.helper == "fill", self.helper == "count"
        targets = [d for d in range(P) if d != r]
        for k, d in enumerate(targets):
            if c == 1:
                if fills and k == 0:
                    self.helper_fill(r, c, g, d)
                yield from self.handover(r, c, g, 3 * k)
                yield from self.handover(r, c, g, 3 * k + 1)  # the put is complete: slot free, PE free
                if counts:
                    self.amo(r, c, d, pending, "count", T, "int32")
                    self.quiet(r, c, pending, d)
                if fills and k + 1 < len(targets):
                    self.helper_fill(r, c, g, targets[k + 1])
                yield from self.handover(r, c, g, 3 * k + 2)
                continue
            if not fills:
                self.fill(r, c, d, g, 0, "write", pending)
            yield from self.handover(r, c, g, 3 * k)
            self.put(r, c, d, pending, 0)
            if early:  # hands back before the quiet: the refill or the add races the engine
                yield from self.handover(r, c, g, 3 * k + 1)
                yield RAN
            self.quiet(r, c, pending, d)
            if not early:
                yield from self.handover(r, c, g, 3 * k + 1)
            if not counts:
                self.amo(r, c, d, pending, "count", T, "int32")
                self.quiet(r, c, pending, d)
            yield from self.handover(r, c, g, 3 * k + 2)
            yield from self.notify(r, c, d, pending)

    def helper_fill(self, r, c, g, d):
        if self.fill_put:  # a GM-to-GM copy as a put to itself, from x
            self.self_copy(r, c, g, d)
        else:
            self.tr.write(r, c, "stage", 0, T * 4, tile(g, r, d))

    def self_copy(self, r, c, g, d):
        tr = self.tr
        for i in range(T):
            tr.mem[(r, "x", d * T + i)] = tile(g, r, d)  # the host's input
        tr.emit(r, c, "put", engine="mte", peer=r, region="stage", offset=0, nbytes=T * 4,
                value=tile(g, r, d), local_region="x", local_offset=d * T)
        tr.land([(r, "stage", 0, T, None, Source(tr, r, "x", d * T))])
        tr.quiet(r, c, "mte")

    def receive(self, r, c, g):
        tr = self.tr
        for s in range(P):
            if s != r:
                yield from wait(tr, r, c, "done", s, "eq", 1)
                if any(tr.read(r, "payload", s * T + i) != tile(g, s, r) for i in range(T)):
                    self.corrupt.append((g, r, s))
        tr.write(r, c, "count", 0, P * 4, 0)
        tr.write(r, c, "wsum", 0, P * 2, 0)
        tr.write(r, c, "wsumf", 0, P * 4, 0)
        tr.write(r, c, "done", 0, P * 4, 0)

