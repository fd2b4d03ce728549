"""The simulated symmetric-memory machine: P ranks x C cores, a seeded scheduler.

Cores are generators. A core runs until it yields: a ``Wait`` (blocks until its
condition holds on the core's own memory), a ``Barrier`` (blocks until every
member arrived) or ``None`` (a plain scheduling point). The operations between
two yields run atomically and may be batched (a thousand puts is one call), but
what they leave pending (non-blocking puts, gets, amos) lands op by op later: at a
quiet / pipe drain that covers its engine, or earlier, at a step the scheduler
picks, in any order to one peer unless a fence separates them.

The run stops when every core finished, or when every unfinished core is blocked
and nothing is pending: that is a hang, and the trace then ends exactly where a
post-mortem dump would (a stuck wait has its wait_begin and no wait_end).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ingest.contract import Cmp, Kind, Op, Scope

from .memory import Heap, Pending, RegionSpec
from .ops import Ops
from .recorder import CoreLog, Part, Sites

__all__ = ["Machine", "Wait", "Barrier", "RunResult", "RegionSpec"]

_WINDOW = 4096
rng_random = np.random.Generator.random  # groups examined per wait evaluation: bounds the cost of one check


def _cond(v: np.ndarray, cmp: int, value, hi) -> np.ndarray:
    if cmp == Cmp.EQ:
        ok = v == value
    elif cmp == Cmp.NE:
        ok = v != value
    elif cmp == Cmp.GT:
        ok = v > value
    elif cmp == Cmp.GE:
        ok = v >= value
    elif cmp == Cmp.LT:
        ok = v < value
    else:
        ok = v <= value
    if hi is not None:
        ok &= v <= hi
    return ok


@dataclass(eq=False)
class Wait:
    """wait_until over a run of slots, taken in order, ``group`` slots at a time.

    Every word of a slot (``words``) must satisfy ``cmp value`` (and ``<= hi`` when
    given: the epoch barrier's "count or count+1"). The core resumes with the range
    of groups now satisfied; ``partial`` counts the wait rows the machine already
    recorded for the head group while blocked, which the kernel skips.
    """

    region: int
    offsets: np.ndarray
    cmp: int
    value: object  # scalar or array per slot
    words: int = 1
    group: int = 1
    site: int = -1
    epoch: object = None
    hi: object = None
    pos: int = 0  # slots consumed
    partial: int = 0

    @property
    def done(self) -> bool:
        return self.pos >= len(self.offsets)

    def values(self, sl) -> object:
        return self.value[sl] if isinstance(self.value, np.ndarray) else self.value


@dataclass(eq=False)
class Barrier:
    key: object
    members: int
    scope: int | None  # None: an internal rendezvous (kernel boundary, host sync), not recorded
    value: int | None = None
    site: int = -1


@dataclass
class RunResult:
    hung: bool
    steps: int
    stuck: list = field(default_factory=list)  # (rank, core, Wait | Barrier)
    finished: set = field(default_factory=set)


class Core:
    __slots__ = ("id", "rank", "core", "gen", "req", "log", "launch", "atomic", "pend",
                 "fence", "blocked", "done", "send", "ridx", "pidx")

    def __init__(self, cid, rank, core, cap):
        self.id, self.rank, self.core = cid, rank, core
        self.gen = None
        self.req = None
        self.log = CoreLog(cap)
        self.launch = 0
        self.atomic = Op.NONE
        self.pend: list[Pending] = []
        self.fence = 0
        self.blocked = False
        self.done = False
        self.send = None
        self.ridx = -1
        self.pidx = -1


# How a cross-rank barrier is recorded (Machine._barrier_parts).
BARRIER_LAYOUTS = ("all", "core0")


class Machine(Ops):
    def __init__(self, ranks: int, cores: int, regions: list[RegionSpec], seed: int,
                 ring_capacity: int | None = None, land_prob: float = 0.35, barrier_layout: str = "all"):
        if barrier_layout not in BARRIER_LAYOUTS:
            raise ValueError(f"unknown barrier layout {barrier_layout!r}; expected one of {', '.join(BARRIER_LAYOUTS)}")
        self.barrier_layout = barrier_layout
        self.P, self.C = ranks, cores
        self.heap = Heap(ranks, regions, self)
        self.rng = np.random.default_rng(seed)
        self.sites = Sites()
        self.names: list[str] = []
        self.land_prob = land_prob
        self.now = 0
        self.cores = [Core(r * cores + c, r, c, ring_capacity) for r in range(ranks) for c in range(cores)]
        self._run: list[Core] = []
        self._blocked: list[dict] = [{} for _ in range(ranks)]  # insertion order: determinism
        self._dirty: dict[int, None] = {}
        self._pending = self.heap._cores  # truthy while anything is in flight
        self._bar: dict[object, list[Core]] = {}
        self.events = 0
        # Per-rank speed for this seed: most ranks full speed, some stragglers, so
        # that races between fast and slow peers really come up.
        self.speed = self.rng.choice([1.0, 1.0, 0.4, 0.1], size=ranks)

    # ---- setup -----------------------------------------------------------
    def core(self, rank: int, core: int) -> Core:
        return self.cores[rank * self.C + core]

    def spawn(self, rank: int, core: int, gen) -> None:
        c = self.core(rank, core)
        c.gen = gen
        self._ready(c)

    def name_id(self, name: str) -> int:
        if name not in self.names:
            self.names.append(name)
        return self.names.index(name)

    # ---- recording ---------------------------------------------------------
    def emit(self, c: Core, parts: list[Part], skip: int = 0, upto: int | None = None) -> None:
        self.events += c.log.emit(parts, c.launch, self.now, skip, upto)

    def part(self, kind: int, n: int = 1, depth: int = 2, **cols) -> Part:
        if "site" not in cols:
            cols["site"] = self.sites.here(depth)
        return Part(int(kind), n, cols)

    # ---- scheduler ---------------------------------------------------------
    def _ready(self, c: Core) -> None:
        if c.ridx < 0:
            c.ridx = len(self._run)
            self._run.append(c)

    def _unready(self, c: Core) -> None:
        i = c.ridx
        last = self._run.pop()
        if last is not c:
            self._run[i] = last
            last.ridx = i
        c.ridx = -1

    def touch(self, rank: int) -> None:
        self._dirty[rank] = None

    def run(self, max_steps: int = 50_000_000) -> RunResult:
        rng = self.rng
        steps = 0
        while steps < max_steps:
            steps += 1
            self.now += 16
            if self._pending and rng.random() < self.land_prob:
                self.heap.land_random(rng)
            if self._dirty:
                for r in self._dirty:
                    for c in self._blocked[r]:
                        c.blocked = False
                        self._ready(c)
                    self._blocked[r].clear()
                self._dirty.clear()
            if not self._run:
                if self._pending:
                    self.heap.land_random(rng, force=True)
                    continue
                break
            c = self._pick(rng)
            self._step(c)
        stuck = [(c.rank, c.core, c.req) for c in self.cores if not c.done and c.gen is not None]
        return RunResult(hung=bool(stuck), steps=steps, stuck=stuck,
                         finished={(c.rank, c.core) for c in self.cores if c.done})

    def _pick(self, rng) -> Core:
        """A runnable core, slow ranks (stragglers) less often: rejection on the rank's speed."""
        run = self._run
        n = len(run)
        if n == 1:
            return run[0]
        speed = self.speed
        for _ in range(8):
            c = run[int(rng.integers(n))]
            if speed[c.rank] >= 1.0 or rng.random() < speed[c.rank]:
                return c
        return c

    def _step(self, c: Core) -> None:
        req = c.req
        send = None
        if isinstance(req, Wait):
            got = self._evaluate(c, req)
            if got is None:
                self._unready(c)
                c.blocked = True
                self._blocked[c.rank][c] = None
                return
            send = got
        elif isinstance(req, Barrier):
            if req in self._bar:  # still waiting for members
                self._unready(c)
                return
            if req.scope is not None:
                self.emit(c, self._barrier_parts(c, req, begin=False))
        c.req = None
        try:
            nxt = c.gen.send(send)
        except StopIteration:
            c.done = True
            self._unready(c)
            return
        c.req = nxt
        if c.pend and rng_random(self.rng) < self.land_prob:
            # What the core just issued is in flight while it runs on: part of it may
            # land right away, before older transfers and before the next quiet.
            self.heap.land_some(c, self.rng)
        if isinstance(nxt, Barrier):
            self._arrive(c, nxt)

    def _barrier_parts(self, c: Core, b: Barrier, begin: bool) -> list[Part]:
        """What core ``c`` records entering (or leaving) barrier ``b``, in the machine's layout.

        "all": every core records the cross-rank barrier. "core0": core 0 alone
        records it and then a core-scope barrier, which the rank's other cores
        record in its place (they follow core 0 through it); both are legal
        (docs/trace-format.md) and must diagnose alike.
        """
        kind = Kind.BARRIER_BEGIN if begin else Kind.BARRIER_END
        if self.barrier_layout == "all" or b.scope != int(Scope.ALL):
            return [self.part(kind, scope=b.scope, value=b.value, site=b.site)]
        if c.core != 0:
            return [self.part(kind, scope=int(Scope.CORE), site=b.site)]
        if begin:
            return [self.part(kind, scope=b.scope, value=b.value, site=b.site)]
        return [self.part(Kind.BARRIER_END, scope=b.scope, value=b.value, site=b.site),
                self.part(Kind.BARRIER_BEGIN, scope=int(Scope.CORE), site=b.site),
                self.part(Kind.BARRIER_END, scope=int(Scope.CORE), site=b.site)]

    def _arrive(self, c: Core, b: Barrier) -> None:
        if b.scope is not None:
            self.emit(c, self._barrier_parts(c, b, begin=True))
        group = self._bar.setdefault(b.key, [])
        group.append(c)
        if len(group) == b.members:
            del self._bar[b.key]
            for m in group:
                m.req = b  # the same object: its key is gone, so stepping releases
                self._ready(m)
        else:
            self._unready(c)

    def barrier(self, key, members: int, scope: int | None, value: int | None = None) -> Barrier:
        """The request to yield; ``key`` names the rendezvous (same key = same barrier)."""
        site = self.sites.here(2) if scope is not None else -1
        return Barrier(key, members, scope, value, site)

    def wait(self, region: int, offsets, cmp: int, value, words: int = 1, group: int = 1,
             epoch=None, hi=None) -> Wait:
        return Wait(region, np.asarray(offsets, dtype=np.int64), int(cmp), value, words, group,
                    self.sites.here(2), epoch, hi)

    def _evaluate(self, c: Core, w: Wait):
        """(g0, g1): groups now satisfied from the head, or None (blocked)."""
        g = w.group
        start = w.pos
        stop = min(len(w.offsets), start + _WINDOW * g)
        offs = w.offsets[start:stop]
        mem = self.heap.mem[w.region][c.rank]
        v = w.values(slice(start, stop))
        if w.words == 1:
            ok = _cond(mem[offs], w.cmp, v, w.hi)
        else:
            v = v[:, None] if isinstance(v, np.ndarray) else v
            ok = _cond(mem[offs[:, None] + np.arange(w.words)], w.cmp, v, w.hi).all(axis=1)
        okg = ok.reshape(-1, g).all(axis=1) if g > 1 else ok
        bad = np.flatnonzero(~okg)
        k = len(okg) if len(bad) == 0 else int(bad[0])
        if k:
            w.pos = start + k * g
            return (start // g, start // g + k)
        # Blocked: record what a dump would show for the head group so far: the
        # satisfied waits of the group, then the wait_begin of the stuck slot.
        s = int(np.flatnonzero(~ok[:g])[0])
        want = 2 * s + 1
        if want > w.partial:
            self.emit(c, self.wait_parts(w, start, start + s + 1, c), skip=w.partial, upto=want)
            w.partial = want
        return None

    def wait_parts(self, w: Wait, s0: int, s1: int, c: Core) -> list[Part]:
        """wait_begin / wait_end parts for slots [s0, s1) (the last may be still open)."""
        offs = w.offsets[s0:s1]
        n = s1 - s0
        ep = w.epoch[s0:s1] if isinstance(w.epoch, np.ndarray) else w.epoch
        obs = self.heap.mem[w.region][c.rank][offs]
        b = Part(Kind.WAIT_BEGIN, n, {"region": w.region, "offset": offs, "cmp": w.cmp,
                                      "value": w.values(slice(s0, s1)), "words": w.words,
                                      "site": w.site, "epoch": ep})
        e = Part(Kind.WAIT_END, n, {"region": w.region, "offset": offs, "observed": obs,
                                    "outcome": 0, "site": w.site, "epoch": ep})
        return [b, e]
