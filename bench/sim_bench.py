"""Simulator throughput: simulated events per second, and one big classic round.

    uv run python bench/sim_bench.py [--big] [--no-write]

Writes the "Simulator" section of bench/RESULTS.md (between the sim markers),
leaving the rest of the file alone.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kernels.api import simulate  # noqa: E402
from kernels.base import Params  # noqa: E402
from _results import write_section  # noqa: E402

BEGIN, END = "<!-- sim:begin -->", "<!-- sim:end -->"


def measure(protocol: str, p: Params, write: bool) -> dict:
    out = Path(tempfile.mkdtemp(prefix="simbench-")) if write else None
    t0 = time.perf_counter()
    t = simulate(protocol, p, seed=0)
    sim = time.perf_counter() - t0
    row = {"protocol": protocol, "shape": f"{p.ranks}x{p.cores} B={p.tokens} K={p.topk} H={p.hidden} "
           f"E_l={p.local_experts}", "events": t.events, "sim_s": sim, "eps": t.events / sim,
           "status": t.status}
    if write:
        t0 = time.perf_counter()
        simulate(protocol, p, seed=0, out=out)
        row["write_s"] = time.perf_counter() - t0 - sim
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--big", action="store_true", help="also one round of 64 ranks x 4096 tokens x top-8")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    rows = [measure("classic", Params(ranks=16, cores=16, tokens=1024, topk=8, hidden=8, local_experts=4,
                                      capacity=256), not a.no_write),
            measure("reduce_scatter", Params(ranks=16, cores=8, tokens=256, hidden=64), False),
            measure("generation", Params(ranks=16, cores=1, tokens=512, topk=8, hidden=8, rounds=2), False)]
    if a.big:
        rows.append(measure("classic", Params(ranks=64, cores=64, tokens=4096, topk=8, hidden=4,
                                              local_experts=4, capacity=256), False))
    lines = ["## Simulator", "", "`uv run python bench/sim_bench.py --big` (one CPU core; simulation only, "
             "write_s = dataset writing on top).", "",
             "| protocol | shape | events | sim s | events/s | write s | outcome |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['protocol']} | {r['shape']} | {r['events']:,} | {r['sim_s']:.2f} | "
                     f"{r['eps'] / 1e6:.2f} M | {r.get('write_s', float('nan')):.2f} | {r['status']} |")
        print(f"{r['protocol']:15s} {r['shape']:40s} {r['events']:>12,} ev  {r['sim_s']:7.2f} s  "
              f"{r['eps'] / 1e6:6.2f} M ev/s  {r['status']}")
    write_section(BEGIN + "\n" + "\n".join(lines) + "\n" + END, BEGIN, END)


if __name__ == "__main__":
    main()
