"""Write examples/classic-2rank/: one round of a classic dispatch, 2 ranks x 2 cores.

Deterministic (a fixed seed), so the committed files are reproducible:
``python examples/make_classic_2rank.py`` rewrites them byte for byte.

The protocol follows the classic SHMEM dispatch (docs: shared/reference):
producer core i of every rank serves destination rank i: per (token, topk)
routed there it puts the payload row, signals the three assist words, puts
the 8-word ready slot, quiets after each phase, then announces each
segment's count with one put of the 8-word count slot. Core 0 then consumes:
it waits for every segment's count, then each slot's ready words, takes the
rows, and resets the ready and count slots for the next round.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

RANKS, CORES = 2, 2
TOKENS, TOPK, LOCAL_EXPERTS, HIDDEN = 4, 2, 2, 16
EXPERTS = RANKS * LOCAL_EXPERTS
SEG = TOKENS * TOPK  # slots per (src_rank, local_expert) segment
SLOTS = RANKS * LOCAL_EXPERTS * SEG
W = 8  # words per ready / assist / count slot

SITES = {
    1: "examples/dispatch_classic.cpp:125",  # route
    2: "examples/dispatch_classic.cpp:148",  # payload put
    3: "examples/dispatch_classic.cpp:171",  # assist signals
    4: "examples/dispatch_classic.cpp:196",  # ready put
    5: "examples/dispatch_classic.cpp:204",  # count put
    6: "examples/dispatch_classic.cpp:226",  # wait count
    7: "examples/dispatch_classic.cpp:250",  # wait ready
    8: "examples/dispatch_classic.cpp:262",  # reset ready
    9: "examples/dispatch_classic.cpp:266",  # reset count
}


def manifest() -> dict:
    return {
        "format": "moetrace-trace/1",
        "ranks": RANKS,
        "cores": CORES,
        "clock_hz": 1_000_000_000,
        "protocol": "classic",
        "params": {"tokens": TOKENS, "topk": TOPK, "hidden": HIDDEN, "local_experts": LOCAL_EXPERTS,
                   "num_experts": EXPERTS, "capacity": SEG, "expert_sentinel": None},
        "regions": [
            {"name": "payload", "role": "payload", "elem_bytes": 2, "length": SLOTS * HIDDEN},
            {"name": "assist", "role": "meta", "elem_bytes": 4, "length": SLOTS * W, "slot_words": W,
             "index": "dispatch"},
            {"name": "ready", "role": "flag", "elem_bytes": 4, "length": SLOTS * W, "reset": 0,
             "slot_words": W, "index": "dispatch"},
            {"name": "count", "role": "counter", "elem_bytes": 4, "length": RANKS * LOCAL_EXPERTS * W,
             "reset": -1, "slot_words": W, "index": "segment"},
        ],
        "sites": {str(k): v for k, v in SITES.items()},
    }


class Core:
    def __init__(self, rank: int, core: int, out: list):
        self.rank, self.core, self.out = rank, core, out
        self.seq = 0
        self.ts = 1000 * (rank + 1) + 37 * core

    def emit(self, kind: str, step: int = 5, **fields) -> None:
        self.seq += 1
        self.ts += step
        ev = {"rank": self.rank, "core": self.core, "seq": self.seq, "ts": self.ts, "launch": 0, "kind": kind}
        ev.update({k: v for k, v in fields.items() if v is not None})
        self.out.append(ev)


def main() -> None:
    rng = random.Random(20240601)
    experts = {r: [[rng.randrange(EXPERTS) for _ in range(TOPK)] for _ in range(TOKENS)] for r in range(RANKS)}
    events: list[dict] = []
    cores = {(r, c): Core(r, c, events) for r in range(RANKS) for c in range(CORES)}
    counts = {}  # (dst, local_expert, src) -> rows
    for r in range(RANKS):
        for c in range(CORES):
            cores[(r, c)].emit("kernel_begin", name="dispatch_classic")
        for t in range(TOKENS):
            for k in range(TOPK):
                e = experts[r][t][k]
                cores[(r, 0)].emit("route", token=t, topk=k, expert=e, dst_rank=e // LOCAL_EXPERTS, site=1)
    for r in range(RANKS):
        for dst in range(RANKS):
            core = cores[(r, dst)]
            pairs = [(t, k, experts[r][t][k] % LOCAL_EXPERTS) for t in range(TOKENS) for k in range(TOPK)
                     if experts[r][t][k] // LOCAL_EXPERTS == dst]
            fill = {}
            slots = []
            for t, k, le in pairs:
                i = fill.get(le, 0)
                fill[le] = i + 1
                slot = (r * LOCAL_EXPERTS + le) * SEG + i
                slots.append((slot, t, k))
                core.emit("put", engine="mte", peer=dst, region="payload", offset=slot * HIDDEN,
                          nbytes=HIDDEN * 2, site=2)
                core.emit("quiet", engine="mte")
            for slot, t, k in slots:
                for w, v in enumerate((r, t, k)):
                    core.emit("signal", engine="mte", peer=dst, region="assist", offset=slot * W + w,
                              op="set", value=v, site=3)
            core.emit("quiet", engine="mte")
            core.emit("pipe_sync", op="set_flag", event="s_mte3")
            core.emit("pipe_sync", op="wait_flag", event="s_mte3")
            for slot, _, _ in slots:
                core.emit("put", engine="mte", peer=dst, region="ready", offset=slot * W, nbytes=W * 4,
                          value=1, site=4)
            core.emit("quiet", engine="mte")
            for le in range(LOCAL_EXPERTS):
                n = fill.get(le, 0)
                counts[(dst, le, r)] = n
                core.emit("count", peer=dst, local_expert=le, value=n, capacity=SEG)
                core.emit("put", engine="mte", peer=dst, region="count", offset=(le * RANKS + r) * W,
                          nbytes=W * 4, value=1, site=5)
            core.emit("quiet", engine="mte")
        for c in range(CORES):
            cores[(r, c)].emit("barrier_begin", scope="core")
        for c in range(CORES):
            cores[(r, c)].emit("barrier_end", scope="core", step=40)
    for r in range(RANKS):
        core = cores[(r, 0)]
        for le in range(LOCAL_EXPERTS):
            for src in range(RANKS):
                off = (le * RANKS + src) * W
                core.emit("wait_begin", region="count", offset=off, cmp="eq", value=1, site=6)
                core.emit("wait_end", region="count", offset=off, observed=1, outcome="ok", step=120, site=6)
        for le in range(LOCAL_EXPERTS):
            for src in range(RANKS):
                n = counts[(r, le, src)]
                for i in range(n):
                    slot = (src * LOCAL_EXPERTS + le) * SEG + i
                    core.emit("wait_begin", region="ready", offset=slot * W, cmp="eq", value=1, words=W, site=7)
                    core.emit("wait_end", region="ready", offset=slot * W, observed=1, outcome="ok", step=60,
                              site=7)
                    core.emit("write", region="ready", offset=slot * W, nbytes=W * 4, value=0, site=8)
                core.emit("deliver", local_expert=le, src_rank=src, requested=n, delivered=n, capacity=SEG)
                core.emit("write", region="count", offset=(le * RANKS + src) * W, nbytes=W * 4, value=-1, site=9)
        for c in range(CORES):
            cores[(r, c)].emit("kernel_end", name="dispatch_classic")
    out = Path(__file__).resolve().parent / "classic-2rank"
    out.mkdir(exist_ok=True)
    (out / "manifest.json").write_text(json.dumps(manifest(), indent=2) + "\n")
    with open(out / "events.jsonl", "w") as f:
        for ev in events:
            f.write(json.dumps(ev, separators=(",", ":")) + "\n")
    print(f"wrote {len(events)} events to {out}")


if __name__ == "__main__":
    main()
