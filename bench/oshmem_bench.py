"""The OpenSHMEM runtime section of bench/RESULTS.md: every scenario of
examples/oshmem/ run for real (run.sh, 4 PEs), what the runtime did, and what
moetrace said about the dumps.

    uv run python bench/oshmem_bench.py [--stored] [--no-results]

--stored diagnoses tests/data/oshmem/ instead of running (no Open MPI needed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from _results import write_section  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
DATA = ROOT / "tests" / "data" / "oshmem"
RUN = ROOT / "examples" / "oshmem" / "run.sh"
BEGIN, END = "<!-- oshmem:begin -->", "<!-- oshmem:end -->"
RANKS = 4


def runtime_did(trace: Path) -> str:
    """What the PEs' markers say: completed, wrong output, hang, died (a PE left none)."""
    st = [(trace / f"rank{r}.status").read_text().strip() if (trace / f"rank{r}.status").exists() else None
          for r in range(RANKS)]
    died = [r for r, s in enumerate(st) if s is None]
    parts = [f"died (rank {', '.join(map(str, died))})"] if died else []
    if "hang" in st:
        parts.append("hang")
    wrong = [f"rank {r}: {s.split()[-1]} rows" for r, s in enumerate(st) if s and s.startswith("wrong")]
    if wrong:
        parts.append("wrong output (" + "; ".join(wrong) + ")")
    return ", ".join(parts) or "completed"


def said(trace: Path) -> tuple[str, bool, int, int]:
    """moetrace's roots at error/warning, whether they are exactly the expected root, events in / lost."""
    from analyzer.engine import diagnose
    from ingest.run import ingest

    exp = json.loads((trace / "expect.json").read_text())["root"] if (trace / "expect.json").exists() else None
    with tempfile.TemporaryDirectory() as tmp:
        rep = ingest([trace], Path(tmp) / "ds")
        findings = diagnose(Path(tmp) / "ds").findings
    reported = [f for f in findings if f.severity in ("error", "warning")]
    roots = [f for f in reported if f.is_root]

    def place(f):
        return f"{f.code} r{f.location.rank}" + ("" if f.location.core is None else f"c{f.location.core}")

    def ok(f):
        return exp is not None and f.code == exp["code"] and f.location.rank == exp["rank"] \
            and (exp["core"] is None or f.location.core == exp["core"])

    count = Counter(place(f) for f in roots)
    text = ", ".join(f"{k}" + (f" x{n}" if n > 1 else "") for k, n in count.items()) or "no root"
    symptoms = len(reported) - len(roots)
    if symptoms:
        text += f" (+{symptoms} symptom{'s' if symptoms > 1 else ''})"
    right = (not reported) if exp is None else (any(ok(f) for f in roots) and all(ok(f) for f in roots))
    return text, right, rep.events_in, rep.lost


# The optional region annotations a user need not write (the tests' traces have none): added here
# only to tell the gaps of inference from a bare manifest apart from other defects of the rules.
ANNOTATIONS = {
    "payload": {"slot_words": 4, "index": "dispatch"}, "assist": {"slot_words": 8, "index": "dispatch"},
    "ready": {"reset": 0, "slot_words": 8, "index": "dispatch"},
    "count": {"reset": -1, "slot_words": 8, "index": "segment"},
    "combine_data": {"slot_words": 4, "index": "token_topk"},
    "combine_status": {"reset": 0, "slot_words": 8, "index": "token_topk"},
    "gen": {"monotonic": True, "index": "rank"}, "total": {"reset": 0}, "done": {"reset": 0, "index": "rank"}}


def annotated(trace: Path, into: Path) -> Path:
    """A copy of the trace whose manifest carries ANNOTATIONS."""
    shutil.copytree(trace, into)
    doc = json.loads((into / "manifest.json").read_text())
    for r in doc["regions"]:
        r.update(ANNOTATIONS[r["name"]])
    (into / "manifest.json").write_text(json.dumps(doc))
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stored", action="store_true", help="diagnose tests/data/oshmem/ instead of running")
    ap.add_argument("--no-results", action="store_true", help="do not rewrite bench/RESULTS.md")
    args = ap.parse_args()
    scenarios = sorted(p.name for p in DATA.iterdir() if (p / "expect.json").is_file())
    live = not args.stored and shutil.which("oshrun") is not None
    rows, total = [], 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for s in scenarios:
            trace, wall = DATA / s, None
            if live:
                trace = Path(tmp) / s
                t0 = time.perf_counter()
                subprocess.run([str(RUN), s, str(trace)], check=True, capture_output=True, timeout=120)
                wall = time.perf_counter() - t0
                total += wall
                shutil.copy(DATA / s / "expect.json", trace / "expect.json")
            exp = json.loads((DATA / s / "expect.json").read_text())
            root = exp["root"]
            want = "none" if root is None else \
                f"{root['code']} r{root['rank']}" + ("" if root["core"] is None else f"c{root['core']}")
            text, right, n_in, lost = said(trace)
            text_a, right_a, _, _ = said(annotated(trace, Path(tmp) / f"{s}-annotated"))
            rows.append(f"| {s} | {runtime_did(trace)} | {'' if wall is None else f'{wall:.1f}'} | {n_in:,}"
                        f"{f' ({lost:,} lost)' if lost else ''} | {want} | {text} | {'yes' if right else 'NO'} "
                        f"| {text_a} | {'yes' if right_a else 'NO'} |")
            print(rows[-1], file=sys.stderr)
    src = "run live (examples/oshmem/run.sh, 4 PEs, 2 cores each, watchdog 3 s)" if live else \
        "the stored dumps of tests/data/oshmem/"
    body = "\n".join([
        BEGIN, "## OpenSHMEM runtime", "",
        f"`uv run python bench/oshmem_bench.py{' --stored' if not live else ''}`, {time.strftime('%Y-%m-%d')}: "
        f"the classic dispatch/combine of examples/oshmem/ on Open MPI's OpenSHMEM over UCX, {src}"
        + (f", {total:.0f} s for all." if live else ".") + " *Runtime* is what the PEs' markers said; *moetrace* is "
        "every root cause at error or warning diagnosed from the binary dumps and the bare manifest "
        "(symptoms counted); *right* is whether that is exactly the injected root. *annotated*: the same dumps "
        "with the optional region annotations (reset, monotonic, slot_words, index) added to the manifest, "
        "to tell what a bare manifest hides from what the rules get wrong anyway.", "",
        "| scenario | runtime | wall s | events | injected root | moetrace | right | moetrace, annotated | right |",
        "|---|---|---|---|---|---|---|---|---|", *rows, END])
    print(body)
    if not args.no_results:
        write_section(body, BEGIN, END)


if __name__ == "__main__":
    main()
