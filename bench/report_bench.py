"""Report benchmark: defect classes and the reporters on a noisy report, and the 64-rank hang's SARIF.

Part 1 builds a synthetic report of N findings (default 170,957, the root
count a noisy trace once printed) spread over 64 ranks x 4 cores and a few
hundred launches, in 3 defect classes, and times the link, the classes
and each reporter, with output sizes.  Part 2 simulates the classic 64-rank
rank-stop hang, diagnoses it and measures its SARIF.

    uv run python bench/report_bench.py [--findings 170957]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def synthetic(n: int):
    """N drafts (``analyzer.draft``) of 3 rules over 64 ranks x 4 cores, as the engine places hits."""
    from analyzer.draft import Draft
    from rules import registry
    from rules.base import Hit

    reg = registry()
    out = []
    for i in range(n):
        r, c, launch = i % 64, (i // 64) % 4, i // 256
        code = ("MT202", "MT401", "MT403")[i % 3]
        hit = Hit(code=code, key=(r, c, i),
                  message=f"rank {r} core {c} launch {launch}: ready[{i % 512}] read {i % 7} before reset")
        place = (r, c, launch, "ready", i % 512, 3 + i % 3, f"kernels/k.cc:{10 + i % 3}")
        out.append(Draft(hit, reg[code], "stale-flag", "error", place))
    return out


def part1(n: int) -> list[str]:
    from analyzer.causes import link
    from analyzer.classes import classify, sample
    from analyzer.engine import Report, TraceInfo
    from analyzer.report import render

    drafts = synthetic(n)
    t = time.perf_counter()
    linked = link(drafts)
    rows = [f"| link | {time.perf_counter() - t:.1f} s | {len(linked):,} findings | |"]
    t = time.perf_counter()
    classes = classify(linked)
    rows.append(f"| group into classes | {time.perf_counter() - t:.1f} s | {len(classes)} classes | |")
    t = time.perf_counter()
    listed, classes, index = sample(linked, None)
    rows.append(f"| build every finding (no --max-findings) | {time.perf_counter() - t:.1f} s | | |")
    rep = Report(listed, TraceInfo(inputs=("big.ds",), ranks=64, cores=4, events=10**8), classes=classes,
                 class_index=index)
    for fmt in ("text", "json", "sarif", "junit"):
        t = time.perf_counter()
        out = render(rep, fmt)
        dt = time.perf_counter() - t
        rows.append(f"| {fmt} | {dt:.1f} s | {len(out):,} bytes | {len(gzip.compress(out.encode())):,} bytes |")
    return rows


def part2() -> str:
    from analyzer.engine import diagnose
    from analyzer.report import render

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "h64"
        cmd = (f"{sys.executable} -m analyzer.cli simulate --protocol classic --ranks 64 --cores 1 --tokens 2 "
               f"--topk 1 --fault rank-stop --at rank=0 -o {out} > /dev/null")
        if os.system(cmd) != 0:
            raise SystemExit("simulate failed")
        rep = diagnose(out / "dataset")
        text = render(rep, "sarif")
    res = json.loads(text)["runs"][0]["results"]
    return (f"64-rank rank-stop hang: {len(rep.findings)} findings, {len(rep.classes)} classes -> "
            f"{len(res)} SARIF result(s), {len(res[0].get('relatedLocations', []))} related locations; "
            f"{len(text):,} bytes, {len(gzip.compress(text.encode())):,} gzipped")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--findings", type=int, default=170_957)
    args = ap.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"| step ({args.findings:,} findings) | wall | output | gzipped |")
    print("|---|---|---|---|")
    for row in part1(args.findings):
        print(row)
    print(part2())
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
