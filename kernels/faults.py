"""The faults a reference kernel can be run with, and where each one is placed.

Each fault names its family (what the analyzer must call it) and its documented
consequence; the kernels consult a ``FaultPlan`` at the exact point the real bug
lives. Placement keys a fault does not get from ``--at`` are drawn from the seed.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FaultSpec:
    name: str
    family: str
    doc: str
    consequence: str
    keys: tuple[str, ...]  # placement keys the fault uses
    min_rounds: int = 1  # a flag not reset between rounds needs a next round to bite
    # Optional contract fields (kind.field) all of the fault's evidence lies in: a trace that
    # leaves them out (the accuracy matrix's bare mode) cannot show the fault at all.
    evidence_in: tuple[str, ...] = ()


FAULTS: dict[str, FaultSpec] = {f.name: f for f in (
    FaultSpec("invalid-expert", "invalid-expert-id",
              "one (token, topk) carries an expert id >= num_experts",
              "dispatch drops the pair; the owner's combine waits its status slot forever (hang) "
              "where the protocol waits every top-k slot, else the token loses that expert",
              ("rank", "round", "token", "topk")),
    FaultSpec("invalid-expert-neg", "invalid-expert-id",
              "one (token, topk) carries expert id -1 where the protocol does not accept the sentinel",
              "as invalid-expert; with local_experts > 1 C++ truncation also aliases the payload "
              "into the neighbouring segment",
              ("rank", "round", "token", "topk")),
    FaultSpec("missing-quiet", "missing-drain",
              "the quiet between the payload puts and the flag that publishes them is left out",
              "the flag can land before its payload: the consumer reads stale payload (wrong rows)",
              ("rank", "core", "round")),
    FaultSpec("wrong-engine-quiet", "missing-drain",
              "the payload goes over SDMA / UDMA but the kernel quiets MTE (aclshmem_quiet)",
              "the MTE quiet does not complete the other engine: the flag overtakes the payload "
              "(stale rows / lost sum)",
              ("rank", "core", "round")),
    FaultSpec("ready-not-reset", "stale-flag",
              "the consumer does not reset the ready slots to 0 after taking them",
              "next round the ready slots already read 1: the consumer takes payload before it lands "
              "(stale rows); in classic/doubleplane the count slot, sent after the ready quiet, gates "
              "the read, so it stays latent unless the count is stale too", ("rank", "round"), min_rounds=2),
    FaultSpec("count-not-reset", "stale-flag",
              "the consumer does not reset the count slots to -1",
              "next round the consumer reads last round's counts: it takes the wrong number of rows "
              "(missing rows, or a hang on rows that never come)", ("rank", "round"), min_rounds=2),
    FaultSpec("status-not-reset", "stale-flag",
              "the token owner does not reset its combine status slots to 0",
              "next round combine reads last round's results before the new ones land (stale rows)",
              ("rank", "core", "round"), min_rounds=2),
    FaultSpec("generation-eq", "stale-flag",
              "a monotonic generation is waited with == instead of >=",
              "a peer that ran one generation ahead is never seen as equal: hang", ("rank",), min_rounds=3),
    FaultSpec("capacity-skew", "capacity-truncation",
              "routing concentrates on one expert rank beyond its receive capacity (maxOutputSize)",
              "rows past the capacity are clamped silently: those tokens lose the expert (wrong rows); "
              "the place is the receiver (rank, local_expert, round)",
              ("rank", "local_expert", "round")),
    FaultSpec("atomic-none-early", "missing-drain",
              "SetAtomicNone runs before the MTE3 drain (no SetFlag/WaitFlag MTE3_S)",
              "gets still in flight land as plain overwrites: lost accumulation", ("rank", "core", "round")),
    FaultSpec("plain-write-in-window", "missing-drain",
              "a plain DataCopy write (the self contribution) is issued inside the atomic-add window",
              "the write accumulates onto the buffer's old content instead of replacing it (wrong sum)",
              ("rank", "core", "round")),
    FaultSpec("self-via-atomic", "missing-drain",
              "the self contribution is also fetched through the atomic path",
              "self is counted twice (wrong sum)", ("rank", "core", "round")),
    FaultSpec("same-chunk", "data-race",
              "two cores of the SDMA fallback are given the same output chunk",
              "their read-add-write races overwrite each other and another chunk is never reduced "
              "(lost accumulation)", ("rank", "core", "round")),
    FaultSpec("missing-pre-barrier", "data-race",
              "the barrier_all between the workspace stores and the gets of a comm block is left out "
              "(every rank alike)",
              "a fast rank gets a peer's stage before the peer stored it: it adds the stage's old contents "
              "(lost accumulation)", ("round",)),
    FaultSpec("missing-post-barrier", "data-race",
              "the barrier_all after a comm block's gets, before the next block reuses the stage, is left out "
              "(every rank alike)",
              "a fast rank stores the next block into its stage while a slow peer still reads the previous "
              "one: the peer adds the wrong block (lost accumulation)", ("round",)),
    FaultSpec("concurrent-rma-amo", "data-race",
              "the UDMA quiet between a put to a peer and the atomics to the same peer is left out",
              "the amo issued while the put is outstanding is dropped by the engine (lost accumulation)",
              ("rank", "core", "round")),
    FaultSpec("put-source-reused", "missing-drain",
              "the UB staging tile of a UDMA put is cleared for reuse before the quiet that completes the put",
              "the engine reads the tile when it sends: the peer's stage slot gets the cleared tile "
              "(wrong stage contents)", ("rank", "core", "round"),
              evidence_in=("put.local_region", "put.local_offset")),
    FaultSpec("float-atomic-roce", "engine-limit",
              "the reduction uses aclshmem_float_atomic_add, and some peers are reached over RoCE",
              "the unified API aborts the kernel at the first RoCE peer: every rank stops, the peers "
              "waiting for it hang", ("round",)),
    FaultSpec("half-atomic-udma", "engine-limit",
              "the reduction uses aclshmem_half_atomic_add, and some peers are reached over UDMA",
              "half atomics are MTE-only: the unified API aborts at the first UDMA peer; the peers waiting "
              "for it hang", ("round",)),
    FaultSpec("int64-atomic-a2", "engine-limit",
              "the reduction uses aclshmem_int64_atomic_add on an A2 (910B) machine, whose MTE has no int64 "
              "atomic add (the manifest names the platform)",
              "no A2 path for the call: the kernel aborts at the first MTE peer's atomic (as the unified API "
              "does for any type a transport lacks); every rank stops, no sum is read", ("round",)),
    FaultSpec("sdma-get-in-atomic", "engine-limit",
              "the reduce sets SetAtomicAdd and gets each peer's chunk straight into D with sdma_get_nbi",
              "SDMA has no inline reduce: each get overwrites D, only the last peer's chunk survives "
              "(lost accumulation)", ("rank", "core", "round")),
    FaultSpec("udma-put-unchunked", "engine-limit",
              "a core puts its whole 384 MB buffer part to the peer in one aclshmemx_udma_put_nbi (the "
              "chunk loop lost), over the 256 MB one UDMA request carries",
              "the engine moves the request's first 256 MB only: the quiet and the ready flag pass, the "
              "part's last 128 MB are never written (wrong data)", ("rank", "core", "round")),
    FaultSpec("wrong-slot", "hang",
              "a flag (count / ready / generation) is sent to the wrong slot on the right peer",
              "the slot the consumer waits on is never written: hang", ("rank", "core", "round")),
    FaultSpec("wrong-peer", "hang",
              "a flag is sent to the right slot on the wrong peer",
              "the peer that waits for it never sees it: hang", ("rank", "core", "round")),
    # DeepEP (kernels/deepep_normal.py, kernels/deepep_ll.py).
    FaultSpec("count-unencoded", "hang",
              "the sender stores its token count raw instead of encoded as -n-1 (0 means 'not written yet')",
              "a real count of 0 reads as 'not yet': the receiver's wait != 0 hangs; a count n > 0 decodes to "
              "-n-1, so the receiver takes no rows and the rows' owner waits for them (hang / missing rows); "
              "the place is the sender", ("rank", "round")),
    FaultSpec("tail-before-payload", "missing-drain",
              "the sender advances a channel's tail before its copy of the row is complete (no release)",
              "the receiver sees the tail, reads the ring row before it landed: stale rows; the place is the "
              "sender's core", ("rank", "round")),
    FaultSpec("head-not-returned", "hang",
              "the receiver drains a channel's queue but never stores the head back to the sender",
              "the sender waits for free space forever once the ring is full, the receiver for rows behind "
              "it (a cycle); the place is the receiver", ("rank", "round")),
    FaultSpec("wrong-channel-poll", "hang",
              "a receiver polls the tail of another channel than the one whose ring it drains",
              "it waits for rows that channel never sends (hang) or reads ring rows not written yet (stale "
              "rows); the place is the receiver's core", ("rank", "round")),
    FaultSpec("parity-not-cleaned", "stale-flag",
              "a launch skips next_clean: the other parity's signal words are not zeroed for the next launch",
              "the next launch of that parity reads the count its words kept from two launches ago: it takes "
              "rows before they land, or the wrong number of rows (stale rows); the place is the rank and "
              "launch that skipped the clean", ("rank", "round"), min_rounds=2),
    FaultSpec("dispatch-tokens-exceeded", "capacity-truncation",
              "one source sends more tokens to one expert than num_max_dispatch_tokens_per_rank rows",
              "rows past the buffer have no place: those tokens lose the expert (wrong rows); the place is "
              "the receiver (rank, local_expert, launch)", ("rank", "local_expert", "round")),
    FaultSpec("rank-stop", "hang",
              "a rank stops mid-kernel (it dies after issuing part of its work)",
              "every peer waiting for its flags or its barrier arrival hangs", ("rank", "round")),
)}


@dataclass
class Fault:
    name: str
    place: dict  # rank, core, round, token, topk ... as used
    spec: FaultSpec = field(repr=False, default=None)
    # The kernel reached the fault's place and took the faulty path (set by FaultPlan.get);
    # kernels that read ``place`` directly instead of asking the plan leave it False.
    fired: bool = False

    def at(self, **where) -> bool:
        return all(self.place.get(k, v) == v for k, v in where.items())


class FaultPlan:
    """The faults of one run; ``hit(name, **where)`` is asked at the bug's location."""

    def __init__(self, faults: list[Fault]):
        self.faults = faults

    def get(self, name: str, **where) -> Fault | None:
        for f in self.faults:
            if f.name == name and f.at(**where):
                f.fired = True
                return f
        return None

    def hit(self, name: str, **where) -> bool:
        return self.get(name, **where) is not None

    def __bool__(self) -> bool:
        return bool(self.faults)


# A placement key and the Params field that bounds it: key=v places a fault at v in [0, bound).
PLACEMENT = {"rank": "ranks", "core": "cores", "round": "rounds", "token": "tokens", "topk": "topk",
             "local_expert": "local_experts"}


def parse_at(text: str | None) -> dict:
    """``rank=3,core=1,round=0`` -> {"rank": 3, "core": 1, "round": 0}; ValueError naming a bad item."""
    out: dict = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        k, sep, v = item.partition("=")
        k = k.strip()
        if not sep:
            raise ValueError(f"bad --at item {item!r}: expected key=value")
        if k not in PLACEMENT:
            raise ValueError(f"bad --at item {item!r}: {k!r} is not one of {', '.join(map(repr, PLACEMENT))}")
        try:
            out[k] = int(v)
        except ValueError:
            raise ValueError(f"bad --at item {item!r}: {v.strip()!r} is not an integer") from None
    return out


def check_at(at: dict, params, faults=()) -> None:
    """ValueError when a placement lies outside the simulated machine (rank=99 on 4 ranks)."""
    rounds = max([FAULTS[f].min_rounds for f in faults if f in FAULTS] + [params.rounds])
    for k, v in at.items():
        bound = rounds if k == "round" else getattr(params, PLACEMENT[k])
        if not 0 <= v < bound:
            raise ValueError(f"bad --at item '{k}={v}': {k} must lie in [0, {bound}) "
                             f"(--{PLACEMENT[k].replace('_', '-')} {bound})")


def place(names: list[str], at: dict | list[dict] | None, params, seed: int, allowed,
          bounds: dict | None = None) -> FaultPlan:
    """Resolve every fault's placement: given keys win, the rest come from the seed."""
    import numpy as np  # here, not at the top: `moetrace --help` reads FAULTS

    rng = np.random.default_rng([seed, 7])
    ats = at if isinstance(at, list) else [at or {}] * len(names)
    faults = []
    for name, given in zip(names, ats):
        spec = FAULTS.get(name)
        if spec is None:
            raise ValueError(f"unknown fault {name!r}; expected one of {', '.join(FAULTS)}")
        if name not in allowed:
            raise ValueError(f"fault {name!r} does not apply to this protocol; it takes {', '.join(allowed)}")
        bnd = {"rank": params.ranks, "core": params.cores, "token": params.tokens, "topk": params.topk,
               "local_expert": params.local_experts, "round": max(1, params.rounds - (spec.min_rounds - 1))}
        bnd.update(bounds or {})
        p = {}
        for k in spec.keys:
            if k in given:
                p[k] = int(given[k])
            else:
                p[k] = int(rng.integers(max(1, bnd[k])))
        for k, v in given.items():
            p.setdefault(k, int(v))
        faults.append(Fault(name, p, spec))
    return FaultPlan(faults)
