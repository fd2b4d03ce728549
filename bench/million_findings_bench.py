"""A million findings: `moetrace diagnose` of a trace where every count disagrees with its delivery.

Issue 19 asks what a report of a million findings costs. The trace is written
from the contract here (not by our simulator): R ranks x 1 core, L launches;
in each launch every rank announces a count to every rank for each of its E
local experts, and every rank delivers from every rank one row more than it
was announced. Every (launch, sender, receiver, expert) is a count mismatch
(MT502): L x R x R x E findings, one defect class, from 2 x L x R x (R x E + 1)
events. Each run is timed as a whole process, with its peak RSS, its report's
size, and, for the text report written to a pipe, when its first line
arrived; runs of each --against source tree (another checkout, first on
sys.path) are interleaved with this tree's and must print the same report.

    uv run python bench/million_findings_bench.py [--ranks 16] [--experts 8] [--launches 489]
                                                   [--repeat 1] [--against DIR ...]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / "cache"


def build(ranks: int, experts: int, launches: int, out: Path) -> int:
    """The trace under ``out`` (manifest.json, events.jsonl); its number of events."""
    out.mkdir(parents=True, exist_ok=True)
    manifest = {"format": "moetrace-trace/1", "ranks": ranks, "cores": 1, "protocol": "million-findings",
                "params": {"num_experts": ranks * experts, "local_experts": experts, "expert_sentinel": -1},
                "regions": [{"name": "recv", "role": "payload", "elem_bytes": 4, "length": 1 << 20}]}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    events = 0
    with open(out / "events.jsonl", "w") as f:
        for rank in range(ranks):
            seq = 0
            for launch in range(launches):
                # What each event of the launch says besides its place: the kernel's start, the
                # counts it announces (expert + 1 rows), the deliveries it takes (one more), its end.
                bodies = ['"kind": "kernel_begin", "name": "dispatch"']
                bodies += [f'"kind": "count", "peer": {peer}, "local_expert": {expert}, "value": {expert + 1}, '
                           f'"capacity": 64' for peer in range(ranks) for expert in range(experts)]
                bodies += [f'"kind": "deliver", "local_expert": {expert}, "src_rank": {src}, '
                           f'"requested": {expert + 2}, "delivered": {expert + 2}, "capacity": 64'
                           for src in range(ranks) for expert in range(experts)]
                bodies.append('"kind": "kernel_end", "name": "dispatch"')  # every rank ends every launch
                f.writelines(f'{{"rank": {rank}, "core": 0, "seq": {seq + k}, "ts": {seq + k}, "launch": {launch}, '
                             f'{body}}}\n' for k, body in enumerate(bodies))
                seq += len(bodies)
                events += len(bodies)
    return events


def run(tree: Path | None, dataset: Path, fmt: str, report: Path) -> dict:
    """One diagnose as its own process: wall, first stdout line (text to a pipe), peak RSS, report bytes."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    cmd = [sys.executable, "-c", "from moetrace._cli import main; main()", "diagnose", str(dataset), "--format", fmt]
    start = time.perf_counter()
    first = None
    with open(report, "wb") as sink:
        # not the checkout as cwd: `-c` puts the cwd first on sys.path
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=report.parent)
        line = proc.stdout.readline()
        first = time.perf_counter() - start
        sink.write(line)
        sink.write(proc.stdout.read())
        err = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"diagnose failed ({code}): {err.decode()[-2000:]}")
    return {"wall": wall, "first_line": first, "rss_gib": usage.ru_maxrss / 2**20, "bytes": report.stat().st_size}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=16)
    ap.add_argument("--experts", type=int, default=8)
    ap.add_argument("--launches", type=int, default=489)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--formats", nargs="+", default=["text", "json", "sarif"])
    ap.add_argument("--against", nargs="*", default=[], type=Path)
    args = ap.parse_args()
    name = f"million_findings_{args.ranks}x{args.experts}_L{args.launches}"
    dataset = CACHE / f"{name}_dataset"
    if not dataset.exists():
        with tempfile.TemporaryDirectory() as tmp:
            events = build(args.ranks, args.experts, args.launches, Path(tmp) / "trace")
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", "from moetrace._cli import main; main()", "ingest",
                            str(Path(tmp) / "trace"), "-o", str(dataset)], check=True, cwd=ROOT)
            print(f"{events:,} events written and ingested in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    findings = args.launches * args.ranks * args.ranks * args.experts
    trees = [("this tree", None)] + [(str(t), t.resolve()) for t in args.against]
    with tempfile.TemporaryDirectory() as tmp:
        reports: dict[str, bytes] = {}
        for rep in range(args.repeat):
            for fmt in args.formats:
                for label, tree in trees:
                    out = Path(tmp) / f"{fmt}-{abs(hash(label))}.out"
                    m = run(tree, dataset, fmt, out)
                    body = out.read_bytes()
                    if fmt == "json":
                        doc = json.loads(body)
                        found = doc["summary"]["findings"]
                        if found != findings:
                            raise SystemExit(f"{label}: {found:,} findings, not the {findings:,} mismatches written")
                        doc["tool"] = doc["trace"]["inputs"] = None  # the version and the path may differ
                        body = json.dumps(doc).encode()
                    if fmt in reports and fmt == "json" and reports[fmt] != body:
                        raise SystemExit(f"{label}: the {fmt} report differs from the first tree's")
                    reports.setdefault(fmt, body)
                    print(f"| {label} | {fmt} | {findings:,} | {m['wall']:.1f} s | {m['first_line']:.1f} s | "
                          f"{m['rss_gib']:.2f} GiB | {m['bytes']:,} |", flush=True)


if __name__ == "__main__":
    main()
