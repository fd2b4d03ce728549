"""Diagnose benchmark: moetrace diagnose against the read limit and a hand-written DuckDB baseline.

    uv run python bench/perf.py [--sizes 1M,10M,100M] [--protocols classic,reduce_scatter] [--reps 3]
                                [--reps-large 1]
                                [--no-results] [--json FILE]

Builds (once, cached under bench/cache/, see bench/_traces.py) simulator traces
of about each size, then on each, in one run, as the median (min, max) of
--reps repetitions, every measurement in a fresh process on warm page cache:
  diagnose   `moetrace diagnose DATASET --format json -o FILE`, process start to
             report written, with its peak RSS (os.wait4's rusage of that child);
  diagnose -j2  the same with --jobs 2 (two windows at once, a process each);
  limit      reading the columns the rules load (recorded from a diagnose of one
             piece) into memory with pyarrow (arrow tables, nulls as validity
             bitmaps: no conversion), timed inside the process; a rank file at
             a time, so that it fits at 100 M events, as the windows do;
  baseline   bench/baseline.sql in DuckDB: stuck waits + producers (anti-joins)
             and the missing-quiet window, until every result is fetched;
  ingest     ingest.run.ingest of the same events from the binary ring dumps.
Then the numba compile cost (a diagnose with a fresh NUMBA_CACHE_DIR, and a
second one that must write nothing to it) and `moetrace --help`. Ratios and
aims are printed and written to the Diagnose section of bench/RESULTS.md.
Machine noise: the box is shared, so read min as well as median.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import _traces  # noqa: E402
from _perf_report import write_section  # noqa: E402

PY = sys.executable
DIAG_OK = (0, 1)  # diagnose exits 1 on findings: that is the point of these traces
MOETRACE = [str(Path(PY).parent / "moetrace")] if (Path(PY).parent / "moetrace").exists() \
    else [PY, "-m", "analyzer.cli"]

# Child programs: each prints one JSON line {"s": seconds, ...} measured inside the process.
LIMIT = """
import json, sys, time
from pathlib import Path
t = time.perf_counter()
import pyarrow.parquet as pq
cols = json.loads(sys.argv[2])
n = nbytes = 0
for p in sorted(Path(sys.argv[1], "events").glob("rank=*/*.parquet")):
    tb = pq.read_table(p, columns=cols, partitioning=None)
    n += tb.num_rows; nbytes += tb.nbytes
    del tb
print(json.dumps({"s": time.perf_counter() - t, "rows": n, "nbytes": nbytes}))
"""
BASELINE = """
import json, sys, time
t = time.perf_counter()
import duckdb
from ingest.contract import Kind
fill = {k.name: int(k) for k in Kind}
fill["EVENTS"] = sys.argv[1] + "/events/rank=*/*.parquet"
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")  # it writes to stdout, where the result line goes
rows = []
for stmt in open(sys.argv[2]).read().format(**fill).split("\\n;\\n"):
    body = "\\n".join(l for l in stmt.splitlines() if not l.lstrip().startswith("--")).strip()
    if not body:
        continue
    cur = con.execute(body)
    if body.startswith(("WITH", "SELECT")):
        rows.append(len(cur.fetchall()))
print(json.dumps({"s": time.perf_counter() - t, "results": rows}))
"""
BUILD = """
import sys
sys.path.insert(0, "bench")
import _traces
rec = _traces.RECIPES[sys.argv[1]]
if len(sys.argv) > 2:
    _traces.build(sys.argv[1], int(sys.argv[2]))
else:  # the one piece the columns are recorded on
    _traces._piece(rec, rec.fault_seed, rec.faults)
"""
INGEST = """
import json, sys, time, shutil
t = time.perf_counter()
from ingest.run import ingest
rep = ingest([sys.argv[1]], sys.argv[2], force=True)
print(json.dumps({"s": time.perf_counter() - t, "rows": rep.rows_out}))
"""
COLUMNS = """
import json, sys
import ingest.dataset as D
seen = []
orig = D.Dataset.arrays
def arrays(self, columns, ranks=None, blocks=None, **kw):
    seen.extend(columns)
    return orig(self, columns, ranks, blocks, **kw)
D.Dataset.arrays = arrays
from analyzer.engine import diagnose
diagnose(sys.argv[1])
print(json.dumps({"columns": sorted(set(seen))}))
"""


def _tree_rss(root: int) -> int:
    """Resident bytes of a process and all its descendants now (0 if it is gone)."""
    parent, rss = {}, {}
    page = os.sysconf("SC_PAGE_SIZE")
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            parent[int(d)] = int(fields[1])
            rss[int(d)] = int(fields[21]) * page
        except (OSError, IndexError, ValueError):
            continue
    total = 0
    for pid in rss:
        q = pid
        while q > 1 and q != root:
            q = parent.get(q, 0)
        if q == root:
            total += rss[pid]
    return total


def child(argv: list[str], env: dict | None = None, ok=(0,)) -> tuple[float, int, dict]:
    """Run a child; (wall seconds from spawn to exit, its peak RSS in bytes, its JSON line or {}).

    The peak is the larger of the child's own rusage peak and the most its
    whole process tree held at once (sampled every 0.2 s: a window holds its
    memory for seconds), so worker processes count (diagnose --jobs).
    """
    import threading

    with tempfile.TemporaryFile("w+") as out:
        t = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, env=env, cwd=ROOT, text=True)
        tree, done = [0], threading.Event()

        def sample():
            while not done.wait(0.2):
                tree[0] = max(tree[0], _tree_rss(p.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        err = p.stderr.read()  # drained while it runs: a full pipe would stall the child
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t
        done.set()
        sampler.join()
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode not in ok:
            raise RuntimeError(f"{argv[:3]} exited {p.returncode}: {err[-2000:]}")
        out.seek(0)
        lines = out.read().strip().splitlines()
    info = next((json.loads(x) for x in reversed(lines) if x.startswith("{")), {})
    return wall, max(ru.ru_maxrss * 1024, tree[0]), info


def stats(xs: list[float]) -> dict:
    return {"med": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def rules_columns(protocol: str) -> list[str]:
    """The columns a diagnose loads, recorded once on one simulated piece (cached)."""
    f = _traces.CACHE / f"columns_v{_traces.VERSION}_{protocol}.json"
    if not f.exists():
        rec = _traces.RECIPES[protocol]
        child([PY, "-c", BUILD, protocol])  # simulated in a child (see bench_size), then cached
        ds = _traces._piece(rec, rec.fault_seed, rec.faults)
        _, _, info = child([PY, "-c", COLUMNS, str(ds)])
        f.write_text(json.dumps(info["columns"]) + "\n")
    return json.loads(f.read_text())


def mem_available() -> int:
    try:
        return int(next(x for x in open("/proc/meminfo") if x.startswith("MemAvailable")).split()[1]) * 1024
    except (OSError, StopIteration, ValueError):
        return 1 << 62


def bench_size(protocol: str, events: int, reps: int, cols: list[str], bpe: dict) -> dict:
    """One size; ``bpe``: peak bytes/event per measurement at the previous size, to skip what
    would not fit (the machine is shared: a measurement projected past 50% of the memory
    available now is not run, and the report says so)."""
    # Built in a child: Linux hands a process's peak RSS to the programs it starts (exec records the
    # replaced memory's high-water mark), so a parent that assembled 100 M events itself would lend
    # every measurement after it its own peak (3.5 GiB for each of diagnose, limit and baseline).
    child([PY, "-c", BUILD, protocol, str(events)])
    d = _traces.build(protocol, events)  # cached now
    ds, rings = d / "dataset", d / "rings"
    n = json.loads((ds / "ingest.json").read_text())["rows_out"]
    res = {"protocol": protocol, "events": n, "dataset": str(d.relative_to(ROOT)),
           "disk_bytes": sum(p.stat().st_size for p in (ds / "events").rglob("*.parquet")),
           "ring_bytes": sum(p.stat().st_size for p in rings.glob("*.mtr")),
           "recipe": json.loads((d / "recipe.json").read_text()), "skipped": {}}
    avail = mem_available()
    from analyzer.windows import WINDOW_EVENTS, plan
    from ingest.dataset import Dataset

    windows = plan(Dataset(ds).blocks, WINDOW_EVENTS, n)
    res["windows"] = [w.events for w in windows]
    for k, b in bpe.items():
        bounded = k == "limit" or (k.startswith("diagnose") and len(windows) > 1)  # memory follows a window
        if b * n > 0.5 * avail and not bounded:
            res["skipped"][k] = f"projected peak {b * n / 2**30:.1f} GiB ({b:.0f} bytes/event at the " \
                                f"previous size) > 50% of the {avail / 2**30:.1f} GiB available"
    run = [k for k in ("diagnose", "diagnose_j2", "limit", "baseline", "ingest") if k not in res["skipped"]]
    report = Path(tempfile.mkdtemp(prefix="moetrace-perf-")) / "report.json"
    diag = [*MOETRACE, "diagnose", str(ds), "--format", "json", "-o", str(report), "--no-progress"]
    large = events >= 50_000_000  # no warm-up, compile or profile runs: each costs minutes there
    if "diagnose" in run and not large:
        child(diag, ok=DIAG_OK)  # warm-up: page cache and numba's on-disk cache
    runs = {k: [] for k in run}
    rss = {k: [] for k in run}
    out_ds = Path(tempfile.mkdtemp(prefix="moetrace-perf-ingest-")) / "ds"
    for i in range(reps):
        # Interleaved, so drift in the machine's load spreads over all of them.
        if "diagnose" in run:
            w, m, _ = child(diag, ok=DIAG_OK)
            runs["diagnose"].append(w)
            rss["diagnose"].append(m)
        if "diagnose_j2" in run:
            w, m, _ = child(diag + ["--jobs", "2"], ok=DIAG_OK)
            runs["diagnose_j2"].append(w)
            rss["diagnose_j2"].append(m)
        if "limit" in run:
            w, m, info = child([PY, "-c", LIMIT, str(ds), json.dumps(cols)])
            runs["limit"].append(info["s"])
            runs.setdefault("limit_process", []).append(w)
            rss["limit"].append(m)
            res["limit_nbytes"] = info["nbytes"]
        if "baseline" in run:
            w, m, info = child([PY, "-c", BASELINE, str(ds), str(ROOT / "bench" / "baseline.sql")])
            runs["baseline"].append(info["s"])
            rss["baseline"].append(m)
            res["baseline_results"] = info["results"]
        if "ingest" in run:
            w, m, info = child([PY, "-c", INGEST, str(rings), str(out_ds)])
            runs["ingest"].append(info["s"])
            rss["ingest"].append(m)
        print(f"{protocol} {n:,} rep {i + 1}: " + ", ".join(f"{k} {v[-1]:.2f}s" for k, v in runs.items()),
              file=sys.stderr)
    res["time"] = {k: stats(v) for k, v in runs.items()}
    res["rss"] = {k: max(v) for k, v in rss.items()}
    if "diagnose" in run:
        doc = json.loads(report.read_text())
        res["summary"] = doc.get("summary", {})
        res["codes"] = sorted({f["code"] for f in doc.get("findings", [])})
        if not large:  # the smaller sizes measure these
            res["compile"] = compile_cost(diag)
            res["profile"] = profile_stages(diag)
    return res


def profile_stages(diag: list[str]) -> list[tuple[float, float, str]]:
    """(seconds, peak GiB so far, stage) of one diagnose under MOETRACE_PROFILE=1, slowest first."""
    env = {**os.environ, "MOETRACE_PROFILE": "1"}
    t = time.perf_counter()
    err = subprocess.run(diag, env=env, cwd=ROOT, capture_output=True, text=True).stderr
    total = time.perf_counter() - t
    summed: dict[str, list[float]] = {}  # a stage of every window summed: "MT201 check", not per window
    for line in err.splitlines():
        parts = line.split(None, 7)  # moetrace profile: S s peak G GiB STAGE
        if line.startswith("moetrace profile:") and len(parts) == 8:
            name = re.sub(r" \(\d+ hits\)$", "", parts[7])
            acc = summed.setdefault(name, [0.0, 0.0])
            acc[0] += float(parts[2])
            acc[1] = max(acc[1], float(parts[5]))
    stages = [(sec, gib, name) for name, (sec, gib) in summed.items()]
    rest = total - sum(x[0] for x in stages)
    stages.append((rest, stages[-1][1] if stages else 0.0, "outside the rules: start, imports, open, report"))
    return sorted(stages, reverse=True)


def compile_cost(diag: list[str]) -> dict:
    """First diagnose with an empty numba cache, then a second that must compile (write) nothing."""
    cache = Path(tempfile.mkdtemp(prefix="moetrace-numba-"))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    first, _, _ = child(diag, env, DIAG_OK)
    files = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
    second, _, _ = child(diag, env, DIAG_OK)
    after = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
    return {"first": first, "second": second, "cache_files": len(files),
            "written_by_second": sum(1 for p, t in after.items() if files.get(p) != t)}


def help_time(reps: int = 5) -> dict:
    return stats([child([*MOETRACE, "--help"])[0] for _ in range(reps)])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1M,10M,100M", help="comma-separated event counts (10M, 100M, 2.5M)")
    ap.add_argument("--protocols", default="classic,reduce_scatter",
                    help=f"comma-separated, of {', '.join(sorted(_traces.RECIPES))}")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--reps-large", type=int, default=1, help="repetitions at 50M events and more")
    ap.add_argument("--no-results", action="store_true", help="do not rewrite bench/RESULTS.md")
    ap.add_argument("--json", type=Path, help="also write all numbers here")
    args = ap.parse_args()
    sizes = [int(float(s.rstrip("Mm")) * 1_000_000) for s in args.sizes.split(",")]
    # Compiled bytecode, so interpreter start is what a normal install pays (PYTHONDONTWRITEBYTECODE
    # may be set in this environment, and then every run would recompile every module).
    subprocess.run([PY, "-m", "compileall", "-q", "analyzer", "rules", "ingest", "kernels"], cwd=ROOT, check=False)
    results = {"help": help_time(), "columns": {}, "sizes": [], "sizes_arg": args.sizes}
    for protocol in args.protocols.split(","):
        cols = results["columns"][protocol] = rules_columns(protocol)
        bpe: dict = {}
        for events in sizes:
            res = bench_size(protocol, events, args.reps if events < 50_000_000 else args.reps_large, cols, bpe)
            results["sizes"].append(res)
            bpe.update({k: v / res["events"] for k, v in res["rss"].items()})
            if args.json:
                args.json.write_text(json.dumps(results, indent=2) + "\n")
    from _perf_report import render

    text = render(results)
    print(text)
    if not args.no_results:
        write_section(text)


if __name__ == "__main__":
    main()
