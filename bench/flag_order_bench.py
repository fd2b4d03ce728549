"""Flag-sync order benchmark: `moetrace diagnose` of DeepEP's barrier of atomics as ranks grow.

The corpus generator (tests/corpus/gen, written from the contract, not from our
simulator) builds `unusual_atomic_barrier_block_16` at other sizes: N ranks x 1
core, one launch of the all-gather over barrier_block (+1024 / -1024 amos,
``le 0`` waits), rank 9 slow. Events grow with N^2 (every rank signals every
rank). The race rules ask the flag-sync order (``rules/analysis/_flag_edges``)
whether each get is ordered after the write it reads; this bench times the
whole diagnose and MT601's check (MOETRACE_PROFILE), interleaved with the same
runs of each --against source tree (another checkout, first on sys.path), so
both see the same machine load. Every run must print the same JSON report.

    uv run python bench/flag_order_bench.py [--ranks 8 16 32] [--repeat 1] [--against DIR ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "corpus"))


def build(ranks: int, out: Path) -> int:
    """The barrier-of-atomics trace at ``ranks`` ranks under ``out``; its number of events."""
    from gen._trace import write_jsonl
    from gen.atomic_barrier import AtomicBarrier
    from gen.cases_unusual import SKEWED_CLOCKS

    slow = 9 % ranks
    trace = AtomicBarrier(ranks, 1, 1, clocks=SKEWED_CLOCKS, stall={(0, slow, 0, 0): 80, (0, slow, 0, 1): 80}).run()
    out.mkdir(parents=True, exist_ok=True)
    write_jsonl(trace, out, None)
    with open(out / "events.jsonl") as f:
        return sum(1 for _ in f)


def run(tree: Path | None, trace: Path, report: Path) -> tuple[float, float]:
    """(wall seconds, MT601's check seconds) of one diagnose with ``tree`` first on sys.path."""
    env = dict(os.environ, MOETRACE_PROFILE="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", "from moetrace._cli import main; main()", "diagnose", str(trace),
                           "--format", "json",
                           "-o", str(report)], env=env, capture_output=True, text=True,
                          cwd=report.parent)  # not the checkout: `-c` puts the cwd first on sys.path
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"diagnose failed ({done.returncode}): {done.stderr[-2000:]}")
    mt601 = sum(float(line.split()[2]) for line in done.stderr.splitlines()
                if line.startswith("moetrace profile:") and "MT601 check" in line)
    return wall, mt601


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, nargs="+", default=[8, 16, 32])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--against", type=Path, nargs="*", default=[])
    args = ap.parse_args()
    trees: list[Path | None] = [*args.against, None]
    print("| ranks | events | tree | diagnose wall (s) | MT601 check (s) |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for ranks in args.ranks:
            trace = Path(tmp) / f"barrier_{ranks}"
            events = build(ranks, trace)
            reports: dict[str, str] = {}
            times: dict[str, list[tuple[float, float]]] = {}
            for _ in range(args.repeat):
                for tree in trees:
                    name = "this tree" if tree is None else str(tree)
                    report = Path(tmp) / "report.json"
                    times.setdefault(name, []).append(run(tree, trace, report))
                    reports[name] = report.read_text()
            if len(set(reports.values())) != 1:
                raise SystemExit(f"{ranks} ranks: the trees' reports differ")
            for name, got in times.items():
                walls = ", ".join(f"{w:.1f}" for w, _ in got)
                checks = ", ".join(f"{c:.1f}" for _, c in got)
                print(f"| {ranks} | {events:,} | {name} | {walls} | {checks} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
