"""Accuracy of the diagnosis over the simulator's fault matrix.

Every protocol x every fault its kernel takes x seeds x routings (uniform,
skewed), plus clean runs, on a small shape (bench/_accuracy_lib.py says which,
and how a finding is matched to an injected fault). Prints recall and precision
per family, a confusion summary (fault -> families of the root causes reported),
every miss, every false positive of a clean run, and the root causes of faulty
runs that match no injected fault (they cost precision). Precision counts root-cause
classes (analyzer.classes), as the text report and SARIF do: one defect at many places is
one class, a true positive when one of its places matches the fault; the root findings
behind them are shown beside.

    uv run python bench/accuracy.py [--seeds 5] [--protocol P ...] [--json]

Exit status 1 when there is a miss of a manifested fault or a clean-run false
positive, so it can gate a job.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _accuracy_lib as lib  # noqa: E402


def score(results) -> dict:
    fam = defaultdict(Counter)  # family -> found / missed / found-latent / missed-latent / tp / roots / findings
    confusion = defaultdict(Counter)  # fault -> family of roots reported (runs), plus outcomes
    misses, fps, spurious = [], [], []
    for res in results:
        c = res.case
        unmatched = {f.id for f in res.spurious}
        # A root class is a true positive when one of its places is matched to an injected fault.
        classes: dict[str, list] = {}
        for r in res.roots:
            classes.setdefault(r.defect_class, []).append(r)
            fam[r.family]["findings"] += 1
        for members in classes.values():
            fam[members[0].family]["roots"] += 1
            fam[members[0].family]["tp"] += any(r.id not in unmatched for r in members)
        for sf in res.faults:
            fam[sf.family][sf.outcome] += 1
            confusion[sf.name][sf.outcome] += 1
            # A required latent hazard (the trace shows it whether or not it bit) is a miss too.
            if sf.outcome == "missed" or (sf.outcome == "missed-latent" and sf.required):
                misses.append(_row(res, sf.place, status=res.status, reported=_said(res)))
        if c.fault:
            for f in {r.family for r in res.roots}:
                confusion[c.fault]["root:" + f] += 1
        if res.false_positives:
            fps.append(_row(res, None, status=res.status, reported=[lib.describe(f) for f in res.reported]))
        if c.fault and res.spurious:
            spurious.append(_row(res, None, status=res.status, reported=_grouped(res.spurious)))
    families = {}
    for f, n in sorted(fam.items()):
        manifested = n["found"] + n["missed"]
        families[f] = {**{k: n[k] for k in ("found", "missed", "found-latent", "missed-latent", "tp", "roots",
                                            "findings")},
                       "recall": n["found"] / manifested if manifested else None,
                       "precision": n["tp"] / n["roots"] if n["roots"] else None}
    return {"shape": lib.SHAPE, "runs": len(results), "families": families,
            "confusion": {k: dict(sorted(v.items())) for k, v in sorted(confusion.items())},
            "misses": misses, "false_positives": fps, "unmatched_roots": spurious}


def _row(res, place, **kw) -> dict:
    c = res.case
    return {"protocol": c.protocol, "fault": c.fault, "seed": c.seed, "routing": c.routing,
            "place": place, **kw}


def _said(res) -> list[str]:
    """What was reported instead of the missed fault: the roots, else the symptoms."""
    return [lib.describe(f) for f in (res.roots or res.reported)] or ["(no error or warning finding)"]


def _grouped(findings) -> list[str]:
    """Unmatched roots, one line per root class with its count of places (MT401 fires per put)."""
    groups = Counter(f.defect_class for f in findings)
    first = {}
    for f in findings:
        first.setdefault(f.defect_class, f)
    return [f"{n}x {lib.describe(first[k])}" for k, n in groups.items()]


def _pct(x) -> str:
    return "   -  " if x is None else f"{100 * x:5.1f}%"


def text(s: dict, seconds: float) -> str:
    out = [f"accuracy matrix: {s['runs']} runs, shape {s['shape']}, {seconds:.0f} s", "",
           f"{'family':22} {'recall':>7} {'precision':>9}  found missed  latent(found/missed)  "
           f"root classes(tp/all)  root findings"]
    for f, n in s["families"].items():
        out.append(f"{f:22} {_pct(n['recall']):>7} {_pct(n['precision']):>9}  {n['found']:5} {n['missed']:6}"
                   f"  {n['found-latent']:9}/{n['missed-latent']:<11} {n['tp']:11}/{n['roots']:<8}  {n['findings']:13}")
    out += ["", "confusion (fault -> runs per outcome; root:FAMILY = runs whose roots include that family):"]
    for fault, c in s["confusion"].items():
        out.append(f"  {fault:22} " + ", ".join(f"{k} {v}" for k, v in c.items()))
    for title, rows in (("misses", s["misses"]), ("false positives (clean runs)", s["false_positives"]),
                        ("unmatched root causes in faulty runs", s["unmatched_roots"])):
        out += ["", f"{title}: {len(rows)}"]
        for r in rows:
            place = "" if r["place"] is None else f" at {r['place']}"
            out.append(f"  {r['protocol']} {r['fault'] or 'clean'} seed {r['seed']} {r['routing']}{place}"
                       f" [{r['status']}]")
            out += [f"      {line}" for line in r["reported"]]
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=lib.SEEDS)
    ap.add_argument("--protocol", action="append", help="only this protocol (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the scores as JSON")
    ap.add_argument("--mode", action="append", choices=lib.MODES,
                    help="manifest mode (repeatable; default: every mode), see _accuracy_lib.make_bare")
    ap.add_argument("--shape", default="", help="override the shape, e.g. ranks=8,cores=4,tokens=16,topk=4")
    a = ap.parse_args(argv)
    for item in filter(None, a.shape.split(",")):
        k, _, v = item.partition("=")
        if k not in lib.SHAPE:
            ap.error(f"--shape: unknown key {k!r}; expected one of {', '.join(lib.SHAPE)}")
        lib.SHAPE[k] = int(v)
    t0 = time.perf_counter()
    todo = lib.cases(a.protocol, a.seeds, modes=tuple(a.mode or lib.MODES), layouts=lib.LAYOUTS, routes=lib.ROUTES)
    results = []
    for i, case in enumerate(todo):
        if sys.stderr.isatty():
            print(f"\r{i + 1}/{len(todo)} {case.id:60}", end="", file=sys.stderr)
        results.append(lib.run_case(case))
    if sys.stderr.isatty():
        print(file=sys.stderr)
    seconds = time.perf_counter() - t0
    # One score per manifest mode: a mode's recall must not hide behind another's.
    variants = dict.fromkeys((c.mode, c.layout, c.routes) for c in todo)
    scores = {f"{m}, barriers recorded on {'every core' if lay == 'all' else 'core 0 + core barriers'}, "
              f"routes recorded {'beside each send' if rt == 'send' else 'where expert ids are read'}":
              score([r for r in results if (r.case.mode, r.case.layout, r.case.routes) == (m, lay, rt)])
              for m, lay, rt in variants}
    if a.json:
        print(json.dumps(scores, indent=2))
    else:
        print("\n\n".join(f"== manifest {m} ==\n" + text(s, seconds) for m, s in scores.items()))
    return 1 if any(s["misses"] or s["false_positives"] for s in scores.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
