"""Ingest fuzz campaign: N generated and mutated traces in-process, outcomes counted by class.

Every input is a trace directory (manifest.json + one events file: JSON lines
plain / gzip / zstd, or a binary ring dump) from tests/fuzz (generation from
the contract plus byte-level mutation). Each goes through the readers
(tests/fuzz/oracle.readers: manifest, fast and careful JSON paths agreeing,
ring decoding, accepted values inside their columns' ranges); every
``--ingest-every``-th also through the CLI ingest and a full read-back, with
``moetrace query "select * from events"`` (oracle.ingest_and_read_back).
A violated promise is a bug of some class; its input is saved under
``--crashes`` for a regression test.

    uv run python bench/fuzz_campaign.py [--inputs 1000000] [--seed 1] [--ingest-every 50]
        [--minutes M] [--results]   # --results writes the totals into bench/RESULTS.md
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fuzz import gen, oracle  # noqa: E402
from fuzz.cases import make_case, write_case  # noqa: E402
from _results import write_section  # noqa: E402

BEGIN, END = "<!-- fuzz:begin -->", "<!-- fuzz:end -->"


def run(inputs: int, seed: int, ingest_every: int, minutes: float | None, crashes: Path, log_every: int) -> dict:
    counts: collections.Counter = collections.Counter()
    bugs: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    shm = Path("/dev/shm")  # millions of small files: a memory file system where there is one
    work = Path(tempfile.mkdtemp(prefix="moetrace-fuzz-", dir=shm if shm.is_dir() else None))
    start = time.monotonic()
    deadline = start + minutes * 60 if minutes else None
    done = 0
    try:
        for i in range(inputs):
            if deadline and time.monotonic() > deadline:
                break
            c = gen.Chooser(random.Random(f"{seed}:{i}"))
            files = make_case(c)
            kinds[next(n for n in files if n != "manifest.json").partition(".")[2] if len(files) > 1
                  else "manifest only"] += 1
            d = write_case(work / "t", files)
            try:
                counts["readers " + oracle.readers(d)] += 1
                if ingest_every and i % ingest_every == 0:
                    out = work / "ds"
                    if out.exists():
                        shutil.rmtree(out)
                    counts["ingest " + oracle.ingest_and_read_back(d, out)] += 1
            except oracle.Bug as e:
                bugs[e.cls] += 1
                keep = crashes / f"{e.cls}-{seed}-{i}"
                if bugs[e.cls] <= 20:
                    shutil.copytree(d, keep, dirs_exist_ok=True)
                    (keep / "bug.txt").write_text(str(e) + "\n")
            done += 1
            if log_every and done % log_every == 0:
                rate = done / (time.monotonic() - start)
                print(f"{done:,} inputs, {rate:,.0f}/s, bugs {dict(bugs)}", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    wall = time.monotonic() - start
    return {"inputs": done, "seed": seed, "ingest_every": ingest_every, "wall_s": round(wall, 1),
            "rate": round(done / wall, 1) if wall else 0.0, "outcomes": dict(sorted(counts.items())),
            "formats": dict(sorted(kinds.items())), "bugs": dict(sorted(bugs.items()))}


def write_results(totals: list[dict]) -> None:
    inputs = sum(t["inputs"] for t in totals)
    bugs: collections.Counter = collections.Counter()
    outcomes: collections.Counter = collections.Counter()
    formats: collections.Counter = collections.Counter()
    for t in totals:
        bugs.update(t["bugs"])
        outcomes.update(t["outcomes"])
        formats.update(t["formats"])
    wall = sum(t["wall_s"] for t in totals)
    lines = [BEGIN, "## Ingest fuzz campaign", "",
             f"`uv run python bench/fuzz_campaign.py` (tests/fuzz generators: contract-driven generation plus "
             f"byte mutation), {len(totals)} run(s) (seeds {', '.join(str(t['seed']) for t in totals)}; "
             f"every {', '.join(str(t['ingest_every']) for t in totals)}-th input also ingested and read back), "
             f"each one process on the shared 2-core machine.", "",
             f"- inputs: {inputs:,} in {wall:,.0f} s ({inputs / wall:,.0f} inputs/s)" if wall else "- inputs: 0",
             "- by format: " + ", ".join(f"{k} {v:,}" for k, v in formats.items()),
             "- outcomes: " + ", ".join(f"{k} {v:,}" for k, v in outcomes.items()),
             "- bugs by class: " + (", ".join(f"{k} {v:,}" for k, v in bugs.items()) if bugs else "none (all zero)"),
             "", "Every input goes through the readers (manifest; fast and careful JSON-lines paths must give "
             "the same rows or the same located error; ring decoding; accepted values inside their columns' "
             "ranges, no null sentinel); every `ingest_every`-th through the CLI ingest (exit 0, or 2 with one "
             "line and nothing written) and a full read-back (events_in = rows + lost, `moetrace query "
             "\"select * from events\"`).", END]
    write_section("\n".join(lines), BEGIN, END)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=1_000_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--ingest-every", type=int, default=50)
    ap.add_argument("--minutes", type=float, default=None, help="stop after this long whatever --inputs says")
    ap.add_argument("--crashes", type=Path, default=ROOT / "bench" / "cache" / "fuzz-crashes")
    ap.add_argument("--log-every", type=int, default=10_000)
    ap.add_argument("--json", type=Path, default=None, help="also write the totals here (appended as a line)")
    ap.add_argument("--results", nargs="*", type=Path, default=None,
                    help="write the totals of this run (and of the given --json files) into bench/RESULTS.md")
    args = ap.parse_args()
    args.crashes.mkdir(parents=True, exist_ok=True)
    totals = run(args.inputs, args.seed, args.ingest_every, args.minutes, args.crashes, args.log_every)
    print(json.dumps(totals))
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(totals) + "\n")
    if args.results is not None:
        # --inputs 0 --results FILE...: only gather the totals of earlier runs.
        runs = ([totals] if totals["inputs"] else []) + [json.loads(ln) for p in args.results
                                                          for ln in p.read_text().splitlines() if ln.strip()]
        write_results(runs)
    return 1 if totals["bugs"] else 0


if __name__ == "__main__":
    sys.exit(main())
