"""The symmetric heap and the transfers still in flight.

A region is one numpy array of shape (ranks, length): the same window on every
rank. A ``Pending`` batch is n operations of one core to one peer on one engine
(puts, gets, amos or fused put_signals); each op lands on its own, so a batch can
be half delivered. Whether a landing write accumulates is decided by the issuing
core's atomic mode at the moment it lands, which is what makes SetAtomicNone
before the MTE3 drain lose contributions.

A window may be kept in blocks (``RegionSpec.block`` elements to one simulated word):
a buffer of hundreds of MB, of which the kernel checks one element a block, costs a
few hundred words. Its offsets and lengths are whole blocks, its data one value a
request (a stamp): that is all a blocked window models.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.contract import Engine, Kind, Op, Role
from ingest.manifest import ANNOTATIONS, Region

_DTYPE = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
# Chance that an early-delivery pick of a batch on this engine goes through.
# Engines without concurrent RMA and AMO to one PE (atomic-add pattern §2.3, §2.4).
_NO_CONCURRENT = (Engine.UDMA, Engine.ROCE)
_EARLY = {Engine.MTE: 1.0, Engine.SDMA: 0.25, Engine.UDMA: 0.4, Engine.ROCE: 0.4, Engine.LOCAL: 1.0,
          Engine.P2P: 1.0, Engine.IBGDA: 0.4}
# Engines that deliver one core's ops to one peer in issue order (one queue pair per core and
# peer, contract.Engine.IBGDA): the oldest such batch to the peer lands first, a prefix at a time.
_ORDERED = (Engine.IBGDA,)
# The most one UDMA request carries (seed 001, UDMA primitives: "a single request at most
# 256 MB, beyond that it must be chunked"). The seed gives the limit, not what the engine does
# past it; the simulated engine carries the request's first 256 MB and drops the rest, so the
# quiet and any flag after it pass and only the data is short. (The simulator is the machine
# the rules are tested against: it states the engine's limit itself, as MT704 states its own.)
UDMA_MAX_REQUEST = 256 << 20


def carried_words(engine: int, words: int, elem_bytes: int) -> int:
    """Of a request of ``words`` elements, the ones the engine moves."""
    if engine == Engine.UDMA and words * elem_bytes > UDMA_MAX_REQUEST:
        return UDMA_MAX_REQUEST // elem_bytes
    return words


@dataclass(frozen=True)
class RegionSpec:
    name: str
    role: Role
    length: int
    elem_bytes: int = 4
    reset: int | None = None
    monotonic: bool = False
    slot_words: int = 1
    index: str | None = None
    init: int = 0  # what the host memsets the window to before the first launch
    block: int = 1  # elements per simulated word (module doc): the manifest states ``length`` elements

    def region(self, rid: int) -> Region:
        # The simulator knows every property of its windows: it states them all, none left to infer.
        return Region(rid, self.name, self.role, self.elem_bytes, self.length, self.reset,
                      self.monotonic, self.slot_words, self.index, annotated=frozenset(ANNOTATIONS))


class Pending:
    __slots__ = ("core", "kind", "engine", "peer", "region", "offs", "words", "data",
                 "src_region", "src_offs", "sig", "left", "fence", "dropped")

    def __init__(self, core, kind, route, dest, data, src=None, sig=None):
        """``route``: (engine, peer); ``dest``: (region, offsets, words each); ``src``: (region, offsets)
        the data is read from when it lands (a get's remote words, a sourced put's local ones)."""
        self.core, self.kind, self.data, self.sig = core, kind, data, sig
        self.engine, self.peer = route
        self.region, self.offs, self.words = dest
        self.src_region, self.src_offs = (None, None) if src is None else src
        self.left = np.arange(len(self.offs))
        self.fence = core.fence
        self.dropped = False  # an amo the engine loses (issued with RMA to its PE in flight)


class Heap:
    def __init__(self, ranks: int, specs: list[RegionSpec], machine):
        self.specs = specs
        self.ids = {s.name: i for i, s in enumerate(specs)}
        self.mem = [np.full((ranks, s.length // s.block), s.init, dtype=_DTYPE[s.elem_bytes]) for s in specs]
        self.block = [s.block for s in specs]
        self.m = machine
        self._cores: list = []  # cores with pending work, swap-removed

    def __getitem__(self, name: str) -> np.ndarray:
        return self.mem[self.ids[name]]

    # ---- writes ------------------------------------------------------------
    def store(self, rank: int, region: int, offs: np.ndarray, words: int, data, add: bool) -> None:
        """Write ``words`` elements at each offset: data is (n, words), (words,) or a scalar."""
        mem = self.mem[region][rank]
        b = self.block[region]
        if b > 1:  # a blocked window: whole blocks, one value a request
            offs, words = offs // b, -(-words // b)
        idx = offs[:, None] + np.arange(words) if words > 1 else offs
        if words == 1 and isinstance(data, np.ndarray) and data.ndim == 2:
            data = data.reshape(-1)
        if add:
            vals = np.broadcast_to(data, idx.shape) if not np.isscalar(data) else data
            np.add.at(mem, idx, vals)
        else:
            mem[idx] = data
        self.m.touch(rank)

    # ---- pending -------------------------------------------------------------
    def enqueue(self, p: Pending) -> None:
        c = p.core
        if p.engine in _NO_CONCURRENT:
            self._concurrent(c, p)
        if not c.pend:
            c.pidx = len(self._cores)
            self._cores.append(c)
        c.pend.append(p)

    @staticmethod
    def _concurrent(c, p: Pending) -> None:
        """UDMA / RoCE do not support concurrent RMA and AMO to one PE: an amo that is in
        flight together with a put or get to its PE on its engine is lost."""
        amo = p.kind == Kind.AMO
        for q in c.pend:
            if q.engine != p.engine or q.peer != p.peer or not len(q.left) or (q.kind == Kind.AMO) == amo:
                continue
            (p if amo else q).dropped = True

    def _drop_core(self, c) -> None:
        i = c.pidx
        last = self._cores.pop()
        if last is not c:
            self._cores[i] = last
            last.pidx = i

    def land(self, p: Pending, sel: np.ndarray) -> None:
        c = p.core
        add = c.atomic == Op.ADD
        data = p.data
        rows = data[sel] if isinstance(data, np.ndarray) and data.ndim == 2 else data
        if p.kind == Kind.GET:
            # Atomic mode turns MTE3 writes into adds; SDMA / UDMA / RoCE write the destination
            # plainly (no inline reduce).
            add = add and p.engine == Engine.MTE
            src = self.mem[p.src_region][p.peer]
            sidx = p.src_offs[sel, None] + np.arange(p.words) if p.words > 1 else p.src_offs[sel]
            self.store(c.rank, p.region, p.offs[sel], p.words, src[sidx].copy(), add)
        elif p.kind == Kind.AMO:
            if p.dropped:
                return
            self.store(p.peer, p.region, p.offs[sel], 1, rows if np.isscalar(rows) else rows.reshape(-1), True)
        else:
            if p.src_region is not None:  # a put that reads its local source as it lands
                src = self.mem[p.src_region][c.rank]
                rows = src[p.src_offs[sel, None] + np.arange(p.words)].copy()
            self.store(p.peer, p.region, p.offs[sel], p.words, rows, add)
            if p.sig is not None:  # put_signal: the signal lands with (after) its payload
                region, offs, op, vals = p.sig
                v = vals[sel] if isinstance(vals, np.ndarray) else vals
                self.store(p.peer, region, offs[sel], 1, v, op == Op.ADD)

    def complete(self, c, engine: int, peer: int | None = None) -> None:
        """Land every pending op of core c that a quiet / drain of ``engine`` covers."""
        if not c.pend:
            return
        keep = []
        for p in c.pend:
            if engine == Engine.ALL or (p.engine == engine and (peer is None or p.peer == peer)):
                self.land(p, p.left)
            else:
                keep.append(p)
        c.pend = keep
        if not keep:
            self._drop_core(c)

    def land_random(self, rng, force: bool = False) -> None:
        """The scheduler delivers part of one batch early, respecting fences per peer.

        Newer batches are favoured (a 32 B flag write completes before a bulk payload
        issued earlier) and the bulk engines deliver early less often than MTE: both
        only shape which legal interleavings come up, never which are possible.
        """
        cores = self._cores
        self.land_some(cores[int(rng.integers(len(cores)))], rng, force)

    def land_some(self, c, rng, force: bool = False) -> None:
        pend = c.pend
        i = len(pend) - 1 if rng.random() < 0.5 else int(rng.integers(len(pend)))
        p = pend[i]
        if not force and rng.random() >= _EARLY[p.engine]:
            return
        for j in range(i):  # an older batch to the same peer behind a fence (or on its queue pair) goes first
            q = pend[j]
            if q.peer == p.peer and (q.fence < p.fence or (p.engine in _ORDERED and q.engine == p.engine)):
                i, p = j, q
                break
        n = len(p.left)
        if p.engine in _ORDERED:  # in issue order within the batch too
            mask = np.arange(n) < 1 + int(rng.integers(n))
        else:
            mask = rng.random(n) < 0.5
        if not mask.any():
            mask[int(rng.integers(n))] = True
        self.land(p, p.left[mask])
        p.left = p.left[~mask]
        if not len(p.left):
            pend.pop(i)
            if not pend:
                self._drop_core(c)

    def pending_ops(self) -> int:
        return sum(len(p.left) for c in self._cores for p in c.pend)
