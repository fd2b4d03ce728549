"""Diagnose fuzz: small valid-but-weird traces through `moetrace diagnose` in every format.

Each trace (tests/fuzz/weird.py: 64 ranks x 1 event with huge values,
shuffled ts, launch gaps, random 3 ranks x 3 cores; JSON lines or one ring
dump) is diagnosed in a subprocess with NUMBA_BOUNDSCHECK=1 in text, json,
sarif and junit and with --window-events 1. A run must exit 0 or 1 (findings);
a signal (SIGSEGV), an internal error (a rule raised), a traceback or a run
past --timeout seconds is a crash. Each crash is shrunk (events dropped while
the same crash remains) and saved under --crashes for a regression test.

    uv run python bench/diagnose_fuzz.py [--traces 100] [--seed 1] [--timeout 30] [--results]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from fuzz import gen, weird  # noqa: E402
from fuzz.diagnose_run import RUNS, diagnose, shrink  # noqa: E402
from _results import write_section  # noqa: E402

BEGIN, END = "<!-- diagnose-fuzz:begin -->", "<!-- diagnose-fuzz:end -->"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds a diagnose run may take")
    ap.add_argument("--shrink-budget", type=int, default=30)
    ap.add_argument("--minutes", type=float, default=None, help="stop after this long whatever --traces says")
    ap.add_argument("--crashes", type=Path, default=ROOT / "bench" / "cache" / "diagnose-crashes")
    ap.add_argument("--results", action="store_true", help="write the totals into bench/RESULTS.md")
    args = ap.parse_args()
    args.crashes.mkdir(parents=True, exist_ok=True)
    work = args.crashes / "work"
    crashes: collections.Counter = collections.Counter()
    shapes: collections.Counter = collections.Counter()
    found = []
    start = time.monotonic()
    done = 0
    for i in range(args.traces):
        if args.minutes and time.monotonic() - start > args.minutes * 60:
            break
        done += 1
        c = gen.Chooser(random.Random(f"diag:{args.seed}:{i}"))
        shape = weird.SHAPES[i % len(weird.SHAPES)]
        ring = c.chance(40)
        doc, evs = weird.trace(c, shape, ring)
        shapes[f"{shape}{' (ring)' if ring else ''}"] += 1
        crash = diagnose(weird.write(work, doc, evs, ring), args.timeout)
        if crash is None:
            continue
        crashes[crash] += 1
        if crashes[crash] <= 1:  # one shrunk input per class; the rest are counted
            keep = args.crashes / f"{crash}-{args.seed}-{i}"
            small = shrink(keep, doc, evs, ring, crash, args.timeout, args.shrink_budget)
            found.append({"crash": crash, "shape": shape, "ring": ring, "events": len(small), "dir": str(keep)})
            print(f"trace {i} ({shape}): {crash}, shrunk to {len(small)} events in {keep}", file=sys.stderr)
    wall = time.monotonic() - start
    totals = {"traces": done, "runs": done * len(RUNS), "seed": args.seed,
              "wall_s": round(wall, 1), "shapes": dict(shapes), "crashes": dict(crashes), "found": found}
    print(json.dumps(totals))
    if args.results:
        lines = [BEGIN, "## Diagnose fuzz", "",
                 f"`uv run python bench/diagnose_fuzz.py --seed {args.seed}`: "
                 f"{done} valid-but-weird traces ({', '.join(f'{k} {v}' for k, v in shapes.items())}), "
                 f"each diagnosed in text, json, sarif, junit and with --window-events 1 "
                 f"({totals['runs']} runs) in a subprocess with NUMBA_BOUNDSCHECK=1, {args.timeout:.0f} s per run, "
                 f"in {wall:,.0f} s.", "",
                 "- crashes by class: " + (", ".join(f"{k} {v}" for k, v in crashes.items()) or "none"),
                 *[f"- {f['crash']}: {f['shape']}{' ring' if f['ring'] else ''}, shrunk to {f['events']} events"
                   for f in found], END]
        write_section("\n".join(lines), BEGIN, END)
    return 1 if crashes else 0


if __name__ == "__main__":
    sys.exit(main())
