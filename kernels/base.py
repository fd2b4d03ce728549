"""What every reference kernel shares: parameters, inputs, the expert function.

Arithmetic is integer throughout (tokens, scales and the expert function are
small integers, sums are int64), so a clean run equals the numpy reference
exactly, not approximately.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from ingest.contract import Kind

# Where a kernel records its routes (Kernel.route_layout); both in the accuracy matrix.
ROUTE_LAYOUTS = ("send", "read")

ROUTINGS = ("uniform", "skewed", "hot")


@dataclass(frozen=True)
class Params:
    ranks: int = 4
    cores: int = 4
    tokens: int = 16
    topk: int = 2
    hidden: int = 8
    local_experts: int = 2
    rounds: int = 1
    routing: str = "uniform"
    capacity: int | None = None  # receive capacity in rows; None: the protocol's own default
    sdma_threshold: int = 4  # doubleplane: a segment of at least this many rows goes over SDMA

    @property
    def num_experts(self) -> int:
        return self.ranks * self.local_experts

    def with_(self, **kw) -> "Params":
        return replace(self, **kw)

    def to_json(self) -> dict:
        return asdict(self)


def expert_fn(x: np.ndarray, expert: np.ndarray | int) -> np.ndarray:
    """The deterministic 'expert': y = x * (e % 5 + 1) + e % 7, exact in int64."""
    e = np.asarray(expert, dtype=np.int64)
    if e.ndim:
        e = e[:, None]
    return x.astype(np.int64) * (e % 5 + 1) + e % 7


@dataclass
class RoundInputs:
    x: np.ndarray  # (P, B, H) int32 tokens
    ids: np.ndarray  # (P, B, K) int64 expert ids (the router's output, faults applied)
    scales: np.ndarray  # (P, B, K) int64 combine weights


def make_inputs(p: Params, seed: int, rnd: int, routing: str | None = None, hot_rank: int = 0) -> RoundInputs:
    """Tokens, top-k distinct experts per token (Gumbel top-k over routing weights) and scales."""
    rng = np.random.default_rng([seed, 11, rnd])
    P, B, K, H, NE = p.ranks, p.tokens, p.topk, p.hidden, p.num_experts
    if K > NE:
        raise ValueError(f"topk {K} exceeds num_experts {NE}")
    routing = routing or p.routing
    if routing == "uniform":
        logw = np.zeros(NE)
    elif routing == "skewed":  # zipf-like popularity over a seeded order of experts
        logw = -1.1 * np.log1p(rng.permutation(NE).astype(float))
    elif routing == "hot":  # one expert rank draws most of the traffic
        logw = np.zeros(NE)
        logw[hot_rank * p.local_experts:(hot_rank + 1) * p.local_experts] = 3.0
    else:
        raise ValueError(f"unknown routing {routing!r}; expected one of {', '.join(ROUTINGS)}")
    x = rng.integers(-8, 8, size=(P, B, H), dtype=np.int32)
    scales = rng.integers(1, 4, size=(P, B, K)).astype(np.int64)
    ids = np.empty((P, B, K), dtype=np.int64)
    for r in range(P):  # per rank keeps the key matrix small for big runs
        keys = logw[None, :] + rng.gumbel(size=(B, NE))
        ids[r] = np.argpartition(-keys, K - 1, axis=1)[:, :K] if K < NE else np.argsort(-keys, axis=1)
    return RoundInputs(x, ids, scales)


def valid_ids(ids: np.ndarray, num_experts: int) -> np.ndarray:
    return (ids >= 0) & (ids < num_experts)


def trunc_div(a: np.ndarray, b: int) -> tuple[np.ndarray, np.ndarray]:
    """C++ integer division and remainder (truncation toward zero): -1 / L == 0 for L > 1."""
    q = np.trunc(a / b).astype(np.int64)
    return q, a - q * b


def seg_slots(keys: np.ndarray, nkeys: int) -> tuple[np.ndarray, np.ndarray]:
    """Running index of each element within its key (stable), and the count per key."""
    order = np.argsort(keys, kind="stable")
    counts = np.bincount(keys, minlength=nkeys)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    slot = np.empty(len(keys), dtype=np.int64)
    slot[order] = np.arange(len(keys)) - np.repeat(starts, counts)
    return slot, counts


class Kernel:
    """A reference kernel: regions, per-core programs, and what it computed."""

    name = ""
    doc = ""
    faults: tuple[str, ...] = ()
    output_kind = "rows"  # "rows": wrong output rows; "sum": lost accumulation

    def __init__(self, params: Params, plan, seed: int):
        self.p = params
        self.plan = plan
        self.seed = seed
        self.got: dict[tuple[int, int], np.ndarray] = {}  # (round, rank) -> computed rows
        self.want: dict[tuple[int, int], np.ndarray] = {}
        # Where routes are recorded (ROUTE_LAYOUTS): beside each send ("send"), or once per pair
        # where the kernel reads expert_ids, before any filter, with the dst_rank it computed
        # ("read", what docs/trace-format.md asks of a user's kernel). simulate() sets it.
        self.route_layout = "send"

    def record_routes_at_read(self, m, c, ids: np.ndarray, dst: np.ndarray) -> bool:
        """In the "read" layout, core 0 records every (token, topk) pair with its computed dst_rank
        (in range or not) and the caller records nothing more; False in the "send" layout."""
        if self.route_layout != "read":
            return False
        if c.core == 0:
            K = self.p.topk
            pairs = np.arange(len(ids))
            m.emit(c, [m.info(Kind.ROUTE, len(pairs), token=pairs // K, topk=pairs % K, expert=ids,
                              dst_rank=np.clip(dst, -2**15, 2**15 - 1))])
        return True

    @classmethod
    def fault_bounds(cls, p: Params) -> dict:
        return {}

    def regions(self):
        raise NotImplementedError

    def manifest_params(self) -> dict:
        p = self.p
        return {"tokens": p.tokens, "topk": p.topk, "hidden": p.hidden, "local_experts": p.local_experts,
                "num_experts": p.num_experts, "rounds": p.rounds, "routing": p.routing}

    def spawn(self, m) -> None:
        for c in m.cores:
            m.spawn(c.rank, c.core, self.program(m, c))

    def host_round(self, m, c, g: int):
        """The host's step before launch ``g`` (stream synchronize + barrier of every core of every
        rank after the first launch); then the core runs launch ``g``."""
        if g:
            yield m.barrier(("host", g), self.p.ranks * self.p.cores, None)
        c.launch = g

    def program(self, m, c):
        raise NotImplementedError
