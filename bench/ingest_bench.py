"""Ingest benchmark: a large binary ring dump -> dataset, end to end.

Builds once (cached under bench/cache/) a classic-dispatch-like trace of
16 ranks x 8 cores: per launch each core routes its tokens (route + payload
put + ready-flag put per top-k pair), announces counts to its peers (count +
signal), quiets, waits for its senders' flags, delivers and resets them,
between kernel / barrier / pipe_sync / atomic_mode markers. One .mtr file per
rank, as each rank's host would dump its rings. Then times
``ingest.run.ingest`` (median of --repeat runs, with min/max), prints events
per second and bytes per event on disk, and rewrites the Ingest section of
bench/RESULTS.md.

    uv run python bench/ingest_bench.py [--events 10000000] [--repeat 3] [--no-results]
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ingest.contract import COLUMN, Cmp, DType, Engine, Kind, Op, Outcome, PipeEvent, PipeOp, Scope  # noqa: E402
from ingest.manifest import Manifest  # noqa: E402
from ingest.rings import write_ring_file  # noqa: E402
from _results import write_section  # noqa: E402

CACHE = ROOT / "bench" / "cache"
BEGIN, END = "<!-- ingest:begin -->", "<!-- ingest:end -->"

P, CORES, K, HIDDEN, E_L = 16, 8, 8, 7168, 8
TOKENS = 128  # per rank per launch
CAPACITY = 256  # receive rows per (src, local expert)


def manifest() -> Manifest:
    ne = P * E_L
    slots = P * E_L * TOKENS * K
    return Manifest.from_json({
        "format": "moetrace-trace/1", "ranks": P, "cores": CORES, "protocol": "classic",
        "clock_hz": 1.8e9,
        "params": {"tokens": TOKENS, "topk": K, "hidden": HIDDEN, "local_experts": E_L,
                   "num_experts": ne, "capacity": CAPACITY, "expert_sentinel": None},
        "regions": [
            {"name": "recv_x", "role": "payload", "elem_bytes": 2, "length": slots * HIDDEN},
            {"name": "ready", "role": "flag", "elem_bytes": 4, "length": slots * 8, "reset": 0,
             "slot_words": 8, "index": "dispatch"},
            {"name": "count", "role": "counter", "elem_bytes": 4, "length": E_L * P * 8, "reset": 0,
             "slot_words": 8, "index": "segment"},
        ],
        "sites": {str(i): f"kernels/classic_dispatch.cpp:{100 + 10 * i}" for i in range(16)},
        "names": ["classic_dispatch"],
    })


def _blocks(rng, rank: int, core: int, launches: int) -> dict[str, np.ndarray]:
    """One core's events for all launches, launch-major, as contract arrays."""
    L = launches
    tok = np.arange(core, TOKENS, CORES)  # tokens this core routes
    T = len(tok)
    blocks: list[dict[str, np.ndarray]] = []

    def block(kind, m, **cols):
        b = {"kind": np.broadcast_to(np.asarray(kind, np.int64), (L, m))}
        for k, v in cols.items():
            b[k] = np.broadcast_to(np.asarray(v, np.int64), (L, m))
        blocks.append(b)

    lvec = np.arange(L)[:, None]
    block(Kind.KERNEL_BEGIN, 1, name=0, site=0, epoch=lvec + 1)
    block(Kind.ATOMIC_MODE, 1, op=Op.ADD, dtype=DType.INT32, site=1)
    # Routes: (L, T, K) triples of route, payload put, ready-flag put.
    expert = rng.integers(0, P * E_L, (L, T, K))
    dst = expert // E_L
    slot = (np.arange(T)[:, None] * K + np.arange(K))[None].repeat(L, 0)
    key = (rank * E_L + expert % E_L) * (TOKENS * K) + slot
    engine = np.where(dst // 8 == rank // 8, Engine.MTE, Engine.ROCE)
    n3 = (L, T * K, 3)
    r = {c: np.full(n3, COLUMN[c].numpy_null, np.int64) for c in
         ("token", "topk", "expert", "dst_rank", "slot", "engine", "peer", "region", "offset", "nbytes",
          "value", "site", "epoch")}
    kind3 = np.empty(n3, np.int64)
    kind3[..., 0], kind3[..., 1], kind3[..., 2] = Kind.ROUTE, Kind.PUT, Kind.PUT
    f = lambda a: a.reshape(L, T * K)  # noqa: E731
    r["token"][..., 0] = f(np.broadcast_to(tok[None, :, None], (L, T, K)))
    r["topk"][..., 0] = f(np.broadcast_to(np.arange(K), (L, T, K)))
    r["expert"][..., 0], r["dst_rank"][..., 0], r["slot"][..., 0] = f(expert), f(dst), f(slot)
    for j, (reg, mult, nb) in ((1, (0, HIDDEN, HIDDEN * 2)), (2, (1, 8, 32))):
        r["engine"][..., j], r["peer"][..., j], r["region"][..., j] = f(engine), f(dst), reg
        r["offset"][..., j], r["nbytes"][..., j] = f(key) * mult, nb
    r["value"][..., 2] = np.broadcast_to(lvec + 1, (L, T * K))
    r["site"][..., 0], r["site"][..., 1], r["site"][..., 2] = 2, 3, 4
    r["epoch"][..., 2] = np.broadcast_to(lvec + 1, (L, T * K))
    blocks.append({"kind": kind3.reshape(L, -1), **{c: v.reshape(L, -1) for c, v in r.items()}})
    block(Kind.PIPE_SYNC, 1, pipe_op=PipeOp.SET_FLAG, event=PipeEvent.MTE3_S, site=5)
    block(Kind.PIPE_SYNC, 1, pipe_op=PipeOp.WAIT_FLAG, event=PipeEvent.MTE3_S, site=5)
    block(Kind.QUIET, 1, engine=Engine.ALL, site=6)
    # Counts to the peers this core serves: count + signal per (peer, local expert).
    peers = np.arange(core, P, CORES)
    pe = np.array([(p, e) for p in peers for e in range(E_L)])
    cnt = rng.integers(0, 40, (L, len(pe)))
    block(Kind.COUNT, len(pe), peer=pe[:, 0], local_expert=pe[:, 1], value=cnt, capacity=CAPACITY, site=7)
    block(Kind.SIGNAL, len(pe), engine=Engine.MTE, peer=pe[:, 0], region=2,
          offset=(pe[:, 1] * P + rank) * 8, op=Op.ADD, value=1, site=8)
    block(Kind.QUIET, 1, engine=Engine.MTE, site=6)
    block(Kind.BARRIER_BEGIN, 1, scope=Scope.ALL, site=9)
    block(Kind.BARRIER_END, 1, scope=Scope.ALL, site=9)
    # Receive: wait for each sender's count flag, deliver, reset it.
    srcs = np.arange(core, P, CORES)
    se = np.array([(s, e) for s in srcs for e in range(E_L)])
    m = len(se)
    off = (se[:, 1] * P + se[:, 0]) * 8
    got = rng.integers(0, 40, (L, m))
    wb = {"kind": Kind.WAIT_BEGIN, "region": 2, "offset": off, "cmp": Cmp.GE, "value": 1, "words": 1,
          "site": 10, "epoch": lvec + 1}
    we = {"kind": Kind.WAIT_END, "region": 2, "offset": off, "observed": 1, "outcome": Outcome.OK, "site": 11}
    dv = {"kind": Kind.DELIVER, "local_expert": se[:, 1], "src_rank": se[:, 0], "requested": got,
          "delivered": np.minimum(got, CAPACITY), "capacity": CAPACITY, "site": 12}
    wr = {"kind": Kind.WRITE, "region": 2, "offset": off, "nbytes": 32, "value": 0, "site": 13}
    inter = {}
    for c in set(wb) | set(we) | set(dv) | set(wr):
        a = np.full((L, m, 4), COLUMN[c].numpy_null, np.int64)
        for j, src in enumerate((wb, we, dv, wr)):
            if c in src:
                a[..., j] = np.broadcast_to(np.asarray(src[c], np.int64), (L, m))
        inter[c] = a.reshape(L, m * 4)
    blocks.append(inter)
    block(Kind.KERNEL_END, 1, name=0, site=14, epoch=lvec + 1)

    cols = set().union(*blocks)
    out = {}
    for c in cols:
        null = -1 if c == "name" else COLUMN[c].numpy_null
        parts = [b[c] if c in b else np.full(b["kind"].shape, null, np.int64) for b in blocks]
        out[c] = np.concatenate(parts, axis=1).reshape(-1)
    n = len(out["kind"])
    out["launch"] = np.repeat(np.arange(L), n // L)
    out["ts"] = np.cumsum(rng.integers(20, 400, n)) + rng.integers(0, 1 << 30)
    out["seq"] = np.arange(n)
    out["rank"] = np.full(n, rank)
    out["core"] = np.full(n, core)
    names = out.pop("name")
    out = {c: v.astype(COLUMN[c].type.to_pandas_dtype()) for c, v in out.items()}
    out["name"] = np.where(names == 0, "classic_dispatch", None).astype(object)
    return out


def per_launch_core() -> int:
    rng = np.random.default_rng(0)
    return len(_blocks(rng, 0, 0, 1)["kind"])


def build(events: int) -> Path:
    launches = -(-events // (P * CORES * per_launch_core()))
    d = CACHE / f"classic_{P}x{CORES}_L{launches}"
    if (d / "manifest.json").exists() and len(list(d.glob("*.mtr"))) == P:
        return d
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    m = manifest()
    print(f"building {d} ({launches} launches per core) ...", file=sys.stderr)
    for rank in range(P):
        rng = np.random.default_rng(rank)
        parts = [_blocks(rng, rank, c, launches) for c in range(CORES)]
        ev = {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}
        write_ring_file(d / f"rank{rank:02d}.mtr", ev, m)
    m.dump(d / "manifest.json")
    return d


def _ingest(src: Path, out: Path):
    from ingest.run import ingest

    return ingest([src], out, force=True)


def _du(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _machine() -> str:
    mem = ""
    try:
        kb = int(next(line for line in open("/proc/meminfo") if line.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.0f} GiB memory"
    except (OSError, StopIteration, ValueError):
        pass
    cpu = platform.processor() or platform.machine()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()} cores ({cpu}){mem}, Python {platform.python_version()}"


def _cpu_split(src: Path, out: Path) -> dict[str, float]:
    """One extra run with per-phase CPU time (thread time, summed over threads)."""
    from _timing import StepTimer

    import ingest.rings as rings
    import ingest.writer as dataset  # the writer holds write_events and DatasetWriter

    timer = StepTimer("decode", "parquet", "order")
    timer.wrap(rings, "read_ring_file", "decode")
    timer.wrap(dataset, "write_events", "parquet")
    timer.wrap(dataset.DatasetWriter, "_order_and_check", "order")
    try:
        shutil.rmtree(out, ignore_errors=True)
        c, w = time.process_time(), time.perf_counter()
        _ingest(src, out)
        timer.acc["total cpu"] = time.process_time() - c
        timer.acc["wall"] = time.perf_counter() - w
    finally:
        timer.restore()
    return timer.acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-results", action="store_true", help="do not rewrite bench/RESULTS.md")
    args = ap.parse_args()
    src = build(args.events)
    load0 = os.getloadavg()[0]
    dump_bytes = sum(p.stat().st_size for p in src.glob("*.mtr"))
    out = ROOT / "bench" / "out" / "ingest"
    times = []
    for i in range(args.repeat):
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        rep = _ingest(src, out)
        times.append(time.perf_counter() - t)
        print(f"run {i + 1}: {times[-1]:.2f} s", file=sys.stderr)
    rows = rep.rows_out
    disk = _du(out / "events")
    med, lo, hi = statistics.median(times), min(times), max(times)
    line = (f"{rows:,} events ({dump_bytes / 2**20:.0f} MiB of .mtr, {P} files) in {med:.2f} s "
            f"(min {lo:.2f}, max {hi:.2f}, {len(times)} runs): {rows / med / 1e6:.2f} M events/s "
            f"(best {rows / lo / 1e6:.2f}); {disk / rows:.2f} bytes/event on disk ({disk / 2**20:.0f} MiB)")
    print(line)
    split = _cpu_split(src, out)
    us = {k: v / rows * 1e6 for k, v in split.items()}
    ncpu = os.cpu_count() or 1
    where = (f"CPU per event (one profiled run, thread time summed over threads): decode "
             f"{us['decode']:.3f} us, parquet encode {us['parquet']:.3f} us, order/seq check {us['order']:.3f} us, "
             f"all {us['total cpu']:.3f} us; that run took {split['wall']:.2f} s wall. With {ncpu} idle cores "
             f"that CPU time bounds ingest at about {ncpu / us['total cpu']:.1f} M events/s (an estimate, "
             f"not a measurement)")
    print(where)
    load = (load0, os.getloadavg()[0])
    if not args.no_results:
        write_results(line, rows, med, disk, where, load)


NOTES = """\
How it runs: `read_ring_file` maps the dump and copies each record slot out in
cache-sized blocks, then builds every contract column with a few vectorized
passes (kinds as bit masks, presence bits, one check per rule); the dataset
writer encodes each rank's parquet file in a worker thread as soon as its
source is added, so the next file decodes while the last one compresses.

Where the time goes: the parquet encoder. pyarrow spends about 0.35 us of CPU
per row (about 9 ns per column per row, 38 mostly-null contract columns: the
definition levels are computed and RLE-encoded for every column of every
row), against about 0.15-0.2 us to decode and check a record. The writer
options barely matter (dictionary / plain / delta encodings, batch and page
sizes, statistics: all within 10%, measured). Codecs, measured again for
issue 19 (one rank's 625,920 rows, best of 3, one thread): lz4 (used) 347
ns/event and 2.84 bytes/event, no compression 349 ns and 6.52 bytes, snappy
356 ns, zstd-1 367 ns and 2.69 bytes: the codec is not the cost, so lz4
stays. DuckDB's COPY TO parquet was 2.5x slower. Ranks already encode in
parallel (a worker thread each, up to 4, started as soon as a rank's dump is
decoded), so on two cores the ceiling is about 2 cores / (0.35 + 0.2) us =
3.6 M events/s with nothing else running; 5 M events/s on 2 cores needs
about 0.4 us of CPU per event in all, less than the encoder alone spends.
What would close the gap: fewer physical columns (kind-specific fields
sharing columns, a layout change that every reader of the dataset would
follow: bench/dense_bench.py measured the ring's 19 dense slots at 0.25 us
per event to encode against 0.50 for the contract columns, which would
bring the ceiling to about 4.4 M events/s, still short); a writer that
encodes the columns of one row group in parallel (Arrow C++ has one;
pyarrow does not expose it for writing); or more cores (ranks encode
independently). Disk size is well under budget: sorted (core, seq) order,
delta-encoded seq/ts and plain + lz4 elsewhere (no dictionaries since the
eighth session: ~8% faster to encode, ~7% to read, 0.5 more bytes per event).

Observed while building this (2-core machine shared with five other
engineers' test runs): the least loaded run (load average 2.3) ingested the
10.0 M events in 3.15 s, 3.18 M events/s, at 0.53 us of CPU per event
(decode 0.14, parquet 0.37; zstd-1 pages then); runs at load 4-7 measured
0.6-1.5 M events/s and up to 0.76 us of CPU per event for the same code, so
the figures above say more about the neighbours than about ingest."""


def write_results(line: str, rows: int, med: float, disk: int, where: str, load: tuple[float, float]) -> None:
    ok_speed = rows / med >= 5e6
    ok_size = disk / rows <= 12
    body = [BEGIN, "## Ingest", "",
            f"`uv run python bench/ingest_bench.py` on {_machine()}; the machine was shared with other "
            f"work while measured (1-minute load average {load[0]:.1f} before, {load[1]:.1f} after, on "
            f"{os.cpu_count()} cores), so wall times are noisy and pessimistic.", "",
            f"- {line}",
            f"- {where}",
            f"- targets: >= 5 M events/s {'met' if ok_speed else 'NOT met'}; "
            f"<= 12 bytes/event {'met' if ok_size else 'NOT met'}",
            "", NOTES, END]
    write_section("\n".join(body), BEGIN, END)


if __name__ == "__main__":
    main()
