"""Query output benchmark: ``moetrace query DS "select * from events" --format F`` on a ~300 k event trace.

Builds once (bench/cache/query-300k) a classic trace of 8 ranks x 8 cores
(560 tokens, 2 rounds: 307,584 events) with the simulator, then runs the
command in a fresh process per run, stdout to a file (``--stdout``, the form
every version of the command has) or ``-o FILE``, and prints the median wall
time, the child's peak RSS (from wait4) and the bytes written.

    uv run python bench/query_bench.py [--repeat 3] [--formats csv,json,parquet] [--stdout]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / "cache" / "query-300k"
SQL = "select * from events"


def trace() -> Path:
    ds = CACHE / "dataset"
    if not ds.exists():
        subprocess.run([sys.executable, "-m", "analyzer.cli", "simulate", "--protocol", "classic", "--ranks", "8",
                        "--cores", "8", "--tokens", "560", "--rounds", "2", "-o", str(CACHE)], check=True, cwd=ROOT,
                       stdout=subprocess.DEVNULL)
    return ds


def run_once(ds: Path, fmt: str, to_stdout: bool, out: Path) -> tuple[float, int, int]:
    cmd = [sys.executable, "-m", "analyzer.cli", "query", str(ds), SQL, "--format", fmt]
    t0 = time.perf_counter()
    if to_stdout:
        with open(out, "wb") as fh:
            proc = subprocess.Popen(cmd, stdout=fh, cwd=ROOT)
            _, status, usage = os.wait4(proc.pid, 0)
    else:
        proc = subprocess.Popen(cmd + ["-o", str(out)], cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}")
    return wall, usage.ru_maxrss * 1024, out.stat().st_size


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--formats", default="csv,json,parquet")
    ap.add_argument("--stdout", action="store_true", help="write to stdout (redirected to a file), not -o")
    args = ap.parse_args()
    ds = trace()
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in args.formats.split(","):
            runs = [run_once(ds, fmt, args.stdout, Path(tmp) / f"out.{fmt}") for _ in range(args.repeat)]
            walls = [r[0] for r in runs]
            print(f"{fmt:8s} {'stdout' if args.stdout else '-o':6s} median {statistics.median(walls):6.2f} s "
                  f"(min {min(walls):.2f}, max {max(walls):.2f}, {len(runs)} runs), peak RSS "
                  f"{max(r[1] for r in runs) / 2**20:6.0f} MiB, {runs[-1][2]:,} bytes", flush=True)


if __name__ == "__main__":
    main()
