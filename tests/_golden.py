"""Golden findings: the whole JSON report of every reference trace, kept in tests/golden/.

The speed and analysis-pipeline work must give exactly the findings the code gave before
(issue: "identical findings before and after, a diff of the JSON reports, in the suite").
The tests that already diagnose a reference trace (the corpus, the stored OpenSHMEM dumps, a
sample of the accuracy matrix) hand their report to ``check``; it compares the report's JSON,
less what legitimately differs between runs (the tool's version, the input paths), to the stored
file, and fails with the first lines that differ. So the comparison costs no extra diagnose.

A change meant to alter findings (a fix that removes a false root, a reworded message) rewrites
the files and says why in its commit:

    MOETRACE_GOLDEN=write uv run pytest tests/test_corpus.py tests/test_oshmem.py tests/test_accuracy.py

The stored form is one JSON document per line (the trace, the summary, then each class and each
finding), keys sorted, so a diff of a golden file reads finding by finding.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.engine import Report

GOLDEN = Path(__file__).resolve().parent / "golden"
WRITE = os.environ.get("MOETRACE_GOLDEN") == "write"


def lines(report: "Report") -> list[str]:
    """The report as stored: the parts of its JSON that do not depend on where or when it ran."""
    from analyzer.report.json import to_json

    doc = to_json(report)
    trace = {k: v for k, v in doc["trace"].items() if k != "inputs"}  # temporary paths
    head = {"version": doc["version"], "trace": trace, "rules": doc["rules"], "summary": doc["summary"]}
    out = [json.dumps(head, sort_keys=True)]
    out += [json.dumps({"class": c}, sort_keys=True) for c in doc["classes"]]
    out += [json.dumps({"finding": f}, sort_keys=True) for f in doc["findings"]]
    return out


def path_of(name: str) -> Path:
    return GOLDEN / f"{name}.jsonl"


def check(name: str, report: "Report") -> None:
    """Fail unless ``report`` gives exactly the stored findings of ``name`` (or write them)."""
    got = lines(report)
    path = path_of(name)
    if WRITE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text("\n".join(got) + "\n")
        return
    assert path.is_file(), f"no golden findings for {name}: {path} (MOETRACE_GOLDEN=write, see tests/_golden.py)"
    want = path.read_text().splitlines()
    if got != want:
        diff = list(difflib.unified_diff(want, got, "stored", "now", n=0, lineterm=""))
        shown = "\n".join(line[:400] for line in diff[:12])
        raise AssertionError(f"{name}: the findings differ from {path.name} ({len(diff)} diff lines; "
                             f"MOETRACE_GOLDEN=write if the change is meant):\n{shown}")
