"""JSON-lines ingest benchmark: the fast path (a compiled scanner that parses and checks each line) and the careful one.

Takes the classic-dispatch-like trace of bench/ingest_bench.py (16 ranks x 8
cores), writes it once as JSON lines the way a kernel would (one file per
rank, each event only its kind's fields, names for enums and regions, null
for an absent optional field; cached under bench/cache/), then times
``ingest.run.ingest`` on it end to end, a fresh process per run (best and
median of --repeat), interleaved with the same runs of each --against source
tree (another checkout, e.g. `git archive main | tar -x -C /tmp/main`), so
both see the same load; then in-process runs of each tree with CPU time split by step
(thread time summed over threads, best of --repeat), and, on the first file alone, the fast
reader and the careful line-by-line one it falls back to. Rewrites the
JSON-lines section of bench/RESULTS.md.

    uv run python bench/jsonl_bench.py [--events 2000000] [--repeat 3] [--against DIR ...] [--no-results]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ingest.contract import ENVELOPE, FIELDS, json_name, kind_columns  # noqa: E402
from ingest_bench import CACHE, _machine, build  # noqa: E402
from _results import write_section  # noqa: E402

BEGIN, END = "<!-- jsonl:begin -->", "<!-- jsonl:end -->"


def build_jsonl(events: int) -> Path:
    """The ring trace of ingest_bench as JSON lines, one file per rank (cached)."""
    import polars as pl

    from ingest.dataset import Dataset
    from ingest.run import ingest
    from rules.views import connect

    rings = build(events)
    d = CACHE / f"{rings.name}_jsonl"
    if (d / "manifest.json").exists():
        return d
    shutil.rmtree(d, ignore_errors=True)
    ds = CACHE / f"{rings.name}_ds"
    ingest([rings], ds, force=True)
    d.mkdir(parents=True)
    con = connect(Dataset(ds))
    for rank in range(Dataset(ds).manifest.ranks):
        df = pl.from_arrow(con.execute(f"select * from events where rank = {rank} order by core, seq").to_arrow_table())
        lines = np.empty(df.height, dtype=object)
        idx = np.arange(df.height)
        for kind in FIELDS:
            rows = (df["kind"] == kind.wire).to_numpy()
            if not rows.any():
                continue
            cols = [c for c in ENVELOPE] + [c for c in kind_columns(kind)]
            sub = df.filter(pl.Series(rows)).select(
                [pl.col("op").alias(json_name(kind, c)) if c == "pipe_op" else pl.col(c) for c in cols])
            # Only the fields an event carries: nulls of optional fields are dropped per column set.
            present = [c for c in sub.columns if sub[c].null_count() < sub.height]
            enc = sub.select(pl.struct(present).struct.json_encode().alias("j"))["j"].to_numpy()
            lines[idx[rows]] = enc
        (d / f"rank{rank:02d}.jsonl").write_text("\n".join(lines.tolist()) + "\n")
    con.close()
    shutil.copy(rings / "manifest.json", d / "manifest.json")
    shutil.rmtree(ds, ignore_errors=True)
    return d


# One end-to-end ingest in a fresh process: rows, wall s, CPU s (all threads).
RUN = """
import shutil, sys, time
from ingest.run import ingest
shutil.rmtree(sys.argv[2], ignore_errors=True)
t, c = time.perf_counter(), time.process_time()
rep = ingest([sys.argv[1]], sys.argv[2], force=True)
print(rep.rows_out, time.perf_counter() - t, time.process_time() - c)
"""


def _run(tree: Path, src: Path, out: Path) -> tuple[int, float, float]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    r = subprocess.run([sys.executable, "-c", RUN, str(src), str(out)], cwd=tree, env=env,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{tree}: ingest failed: {r.stderr.strip()[-600:]}")
    rows, wall, cpu = r.stdout.split()
    return int(rows), float(wall), float(cpu)


# CPU per event by step in one process, thread time summed over threads, best of argv[3] ingests after a
# warm one: it wraps whichever steps the tree has (main: _parse then validate; since the checks moved into
# the scan: _parse, which scans and checks, then _table), so every tree is timed by this same code.
SPLIT = """
import json, sys, time
sys.path.insert(0, sys.argv[4])  # this bench's folder: the StepTimer, whichever tree is measured
from _timing import StepTimer
import ingest.jsonl_fast as fast
import ingest.writer as writer
from ingest.run import ingest
timer = StepTimer()
acc = timer.acc
steps = {"_parse": "parse", "validate": "checks", "_table": "columns"}
for name, key in steps.items():
    if hasattr(fast, name):
        timer.wrap(fast, name, key)
timer.wrap(writer, "write_events", "parquet encode")
ingest([sys.argv[1]], sys.argv[2], force=True)  # compiles or loads the kernels: not what is measured
best = {}
for _ in range(int(sys.argv[3])):
    acc.clear()
    c = time.process_time()
    rows = ingest([sys.argv[1]], sys.argv[2], force=True).rows_out
    acc["all"] = time.process_time() - c
    for k, v in acc.items():
        best[k] = min(best.get(k, float("inf")), v / rows * 1e6)
print(json.dumps({"checks fused": not hasattr(fast, "validate"), **best}))
"""


def _cpu_split(tree: Path, src: Path, out: Path, repeat: int) -> dict:
    """CPU us per event by step for ``tree`` (best of ``repeat`` in-process ingests)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    r = subprocess.run([sys.executable, "-c", SPLIT, str(src), str(out), str(repeat), str(Path(__file__).parent)],
                       cwd=tree, env=env,
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"{tree}: split failed: {r.stderr.strip()[-600:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _split_text(s: dict) -> str:
    parse = "parse and checks (one compiled pass)" if s["checks fused"] else "parse"
    parts = [f"{parse} {s['parse']:.3f} us"]
    parts += [f"{k} {s[k]:.3f} us" for k in ("checks", "columns") if k in s]
    parts += [f"parquet encode {s['parquet encode']:.3f} us",
              f"all {s['all']:.3f} us ({1 / s['all']:.2f} M events/s of one core)"]
    return ", ".join(parts)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--against", type=Path, action="append", default=[],
                    help="another moetrace source tree to time in the same run")
    ap.add_argument("--no-results", action="store_true")
    args = ap.parse_args()
    from ingest.jsonl import read_jsonl
    from ingest.manifest import Manifest

    src = build_jsonl(args.events)
    files = sorted(src.glob("*.jsonl"))
    size = sum(p.stat().st_size for p in files)
    out = CACHE / "jsonl_bench_ds"
    trees = [ROOT, *[p.resolve() for p in args.against]]
    for tree in trees:  # compile each tree's kernels and bytecode first
        _run(tree, src, out)
    load0 = os.getloadavg()[0]
    runs: dict[Path, list[tuple[int, float, float]]] = {t: [] for t in trees}
    for i in range(args.repeat):
        for tree in trees:
            runs[tree].append(_run(tree, src, out))
        print(f"round {i + 1}/{args.repeat}", file=sys.stderr)
    rows = runs[ROOT][0][0]
    times = [w for _, w, _ in runs[ROOT]]
    cpu = [c for *_, c in runs[ROOT]]
    splits = {t: _cpu_split(t, src, out, args.repeat) for t in trees}
    m = Manifest.load(src / "manifest.json")
    # Thread time (this process reads on one thread): what one core would take, whatever the load.
    t = time.thread_time()
    careful_rows = read_jsonl(files[0], m, fast=False).table.num_rows
    careful = time.thread_time() - t
    fast = float("inf")
    for _ in range(3):
        t = time.thread_time()
        fast_rows = read_jsonl(files[0], m).table.num_rows
        fast = min(fast, time.thread_time() - t)
    load1 = os.getloadavg()[0]
    shutil.rmtree(out, ignore_errors=True)
    med = statistics.median(times)
    lines = [
        BEGIN, "## JSON-lines ingest", "",
        f"`uv run python bench/jsonl_bench.py --events {args.events} --repeat {args.repeat}"
        + "".join(f" --against {p}" for p in args.against) + f"` on {_machine()}; "
        f"1-minute load average {load0:.1f} before, {load1:.1f} after (the machine was shared: noisy, pessimistic).",
        "",
        f"- ingest of {rows:,} events ({size / 2**20:,.0f} MiB of JSON lines, {len(files)} files, "
        f"{size / rows:.0f} bytes/event) in {med:.2f} s (best {min(times):.2f}, {len(times)} runs, a process "
        f"each): {rows / med / 1e6:.2f} M events/s end to end (best {rows / min(times) / 1e6:.2f}), fast path, "
        f"dataset written; CPU (all threads) {min(cpu) / rows * 1e6:.2f} us/event at best, so about "
        f"{rows / min(cpu) / 1e6:.2f} M events/s on one core to itself (an estimate from CPU time)",
        *[f"- {t}, same runs: median {statistics.median([w for _, w, _ in runs[t]]):.2f} s (best "
          f"{min(w for _, w, _ in runs[t]):.2f}), CPU {min(c for *_, c in runs[t]) / rows * 1e6:.2f} us/event at best; "
          f"this tree / that: {med / statistics.median([w for _, w, _ in runs[t]]):.2f}x the wall time, "
          f"{min(cpu) / min(c for *_, c in runs[t]):.2f}x the CPU" for t in trees[1:]],
        f"- CPU per event by step (in-process runs, thread time, best of {args.repeat} each; all: process time): "
        + "; ".join(f"{'this tree' if t == ROOT else t}: {_split_text(splits[t])}" for t in trees),
        f"- one file ({fast_rows:,} events), thread time: fast path {fast_rows / fast / 1e6:.2f} M events/s of CPU read "
        f"and checked (best of 3), careful line-by-line path {careful_rows / careful / 1e6:.2f} M events/s (what a file "
        f"the fast path is not "
        f"sure of costs)", END]
    block = "\n".join(lines)
    print(block)
    if not args.no_results:
        write_section(block, BEGIN, END, before="<!-- sim:begin -->")


if __name__ == "__main__":
    main()
