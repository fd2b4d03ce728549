"""Scale benchmark: diagnose wall time and peak memory, local (--jobs N) and on a local Ray cluster,
and the per-window cost that projects a run to 10^10 events on N nodes.

    uv run python bench/scale_bench.py synthetic --events 2000000 [--jobs 1,2] [--ray] [--windows]
    uv run python bench/scale_bench.py classic --events 10000000 ...
    uv run python bench/scale_bench.py synthetic --events 2000000 --code DIR   # another checkout's code

``synthetic`` is bench/ingest_bench.py's trace (follows no protocol: every
ready flag left set, counts off; hundreds of thousands of findings);
``classic`` / ``reduce_scatter`` are bench/_traces.py's simulator traces with
faults.  Each diagnose runs in a fresh process (peak RSS of that process; for
Ray, of the driver only: its workers are Ray's).  ``--windows`` times every
window alone in this process (``analyzer.window_run.window_job``) and the merge
(``analyzer.causes.link`` over all their findings).  Prints markdown lines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def dataset(kind: str, events: int) -> Path:
    if kind == "synthetic":
        import ingest_bench

        from ingest.run import ingest

        src = ingest_bench.build(events)
        out = src.with_name(src.name + "_dataset")
        if not (out / "manifest.json").exists():
            ingest([src], out, force=True)
        return out
    import _traces

    return _traces.build(kind, events) / "dataset"


_RAY_DRIVER = """
import os, sys
from analyzer.ray_engine import RUNTIME_ENV, import_ray
ray = import_ray()
ray.init(num_cpus={cpus}, include_dashboard=False, object_store_memory=200 * 2**20, _temp_dir={tmp!r},
         _node_ip_address="127.0.0.1", runtime_env=RUNTIME_ENV, log_to_driver=False, configure_logging=False)
import time
from analyzer.cli import main
sys.argv = ["moetrace", *sys.argv[1:]]
t = time.perf_counter()
try:
    main()
except SystemExit:
    pass
print(f"diagnose_s {{time.perf_counter() - t:.2f}}", file=sys.stderr)
"""


def diagnose_child(ds: Path, out: Path, code: Path, extra: list[str], ray_cpus: int = 0) -> dict:
    """One diagnose in a fresh process: wall s (for Ray: after the cluster is up), its CPU s (user +
    system; for Ray the driver's only), peak RSS, findings."""
    args = ["diagnose", str(ds), "--format", "json", "-o", str(out), "--no-progress", *extra]
    env = {**os.environ, "PYTHONPATH": str(code)}
    tmp = None
    if ray_cpus:
        tmp = tempfile.mkdtemp(prefix="mt-ray-", dir="/tmp")
        cmd = [sys.executable, "-c", _RAY_DRIVER.format(cpus=ray_cpus, tmp=tmp), *args]
    else:
        cmd = [sys.executable, "-c", "import sys; from analyzer.cli import main; sys.argv[0] = 'moetrace'; main()",
               *args]
    t = time.perf_counter()
    # cwd: `python -c` puts the current directory before PYTHONPATH, so run in the code's checkout.
    p = subprocess.Popen(cmd, env=env, cwd=code, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read()
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
        wall = float(next(x.split()[1] for x in err.splitlines() if x.startswith("diagnose_s")))
    code_ = os.waitstatus_to_exitcode(status)
    if code_ not in (0, 1):
        raise SystemExit(f"diagnose failed ({code_}): {err[-2000:]}")
    summary = json.loads(out.read_text())["summary"]
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss * 1024,
            "findings": summary["findings"], "listed": summary.get("listed", summary["findings"])}


def windows(ds: Path) -> dict:
    """Every window alone, in this process, then the merge of all their findings."""
    from analyzer.causes import link
    from analyzer.config import Config
    from analyzer.window_run import window_job
    from analyzer.windows import plan
    from ingest.dataset import Dataset
    from rules import registry

    d = Dataset(ds)
    plan_ = plan(d.blocks, Config().window_events, d.num_rows())
    codes = [r.code for r in Config().select_rules(list(registry().values()))]
    window_job(str(ds), plan_[0], Config(), codes)  # numba's on-disk cache, the page cache
    secs, events, drafts = [], [], []
    for w in plan_:
        t = time.perf_counter()
        drafts += window_job(str(ds), w, Config(), codes)
        secs.append(time.perf_counter() - t)
        events.append(w.events)
    t = time.perf_counter()
    link(drafts)
    return {"windows": len(plan_), "secs": secs, "events": events, "merge": time.perf_counter() - t,
            "findings": len(drafts)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=("synthetic", "classic", "reduce_scatter"))
    ap.add_argument("--events", type=int, default=2_000_000)
    ap.add_argument("--jobs", default="1", help="comma-separated --jobs values to run ('' for none)")
    ap.add_argument("--ray", type=int, default=0, metavar="CPUS", help="also on a local Ray cluster of CPUS")
    ap.add_argument("--windows", action="store_true", help="time each window and the merge")
    ap.add_argument("--code", type=Path, default=ROOT, help="checkout whose moetrace to run (before/after)")
    args = ap.parse_args()
    ds = dataset(args.kind, args.events)
    from ingest.dataset import Dataset

    n = Dataset(ds).num_rows()
    load = os.getloadavg()[0]
    out = Path(tempfile.mkdtemp(prefix="mt-scale-")) / "report.json"
    print(f"{args.kind} {n:,} events, code {args.code}, load {load:.1f} before", flush=True)
    runs = [(f"--jobs {j}", ["--jobs", j], 0) for j in args.jobs.split(",") if j]
    if args.ray:
        runs.append((f"--engine ray ({args.ray} CPUs)", ["--engine", "ray"], args.ray))
    for name, extra, cpus in runs:
        r = diagnose_child(ds, out, args.code, extra, cpus)
        print(f"| {name} | {r['wall']:.1f} s | {r['cpu']:.1f} s | {r['rss'] / 2**30:.2f} GiB ({r['rss'] / n:.0f} B/event) | "
              f"{r['findings']:,} findings ({r['listed']:,} listed) |", flush=True)
    if args.windows:
        w = windows(ds)
        s = w["secs"]
        print(f"windows: {w['windows']}, {sum(w['events']) / len(s):,.0f} events read each, "
              f"{min(s):.1f}-{max(s):.1f} s each (mean {sum(s) / len(s):.1f}), "
              f"{sum(s) / sum(w['events']) * 1e6:.2f} us/event read; merge of {w['findings']:,} findings "
              f"{w['merge']:.2f} s", flush=True)
    print(f"load {os.getloadavg()[0]:.1f} after")


if __name__ == "__main__":
    main()
