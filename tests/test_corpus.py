"""The corpus (tests/corpus/README.md): traces not written by our simulator, each with its expected roots.

Each trace directory holds raw input (JSON lines or ring dumps) and expect.json; diagnose must
report exactly the expected error/warning root causes, by (code, rank[, core]), and each expected
root as ONE root-cause class (analyzer.classes, what the text report and SARIF show): its other
places are places of that class or symptoms, never a second root class of the same defect. A
failure here is a wrong diagnosis on a trace that follows the contract: fix the rules, never the
expectation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import _golden
from _stored_reports import group, report_of
from conftest import run_cli

CORPUS = Path(__file__).resolve().parent / "corpus"
TRACES = sorted(p.name for p in CORPUS.iterdir() if (p / "expect.json").is_file())
GATING = ("error", "warning")


def _expect(name: str) -> dict:
    return json.loads((CORPUS / name / "expect.json").read_text())


def _matches(item: dict, root: tuple) -> bool:
    code, rank, core = root
    codes = item["code"] if isinstance(item["code"], list) else [item["code"]]
    return (code in codes and item["rank"] in (None, rank)
            and (item["core"] is None or item["core"] == core))


def mismatch(expect: dict, got: set[tuple]) -> list[str]:
    """What differs between the expected roots and the (code, rank, core) roots reported; [] when equal."""
    problems = []
    for item in expect["roots"]:
        if not item.get("optional") and not any(_matches(item, g) for g in got):
            problems.append(f"missing root {item['code']} at rank {item['rank']} core {item['core']}")
    for g in sorted(got, key=str):
        if not any(_matches(item, g) for item in expect["roots"]):
            problems.append(f"unexpected root {g[0]} at rank {g[1]} core {g[2]}")
    return problems


def test_corpus_is_big_enough_and_consistent():
    assert len(TRACES) >= 60
    readme = (CORPUS / "README.md").read_text()
    for name in TRACES:
        assert f"`{name}`" in readme, f"{name} is not described in tests/corpus/README.md"
        exp = _expect(name)
        assert exp["clean"] == (not exp["roots"]), name
        assert exp["note"], name


def class_mismatch(expect: dict, classes: list[set[tuple]]) -> list[str]:
    """Expected roots reported as more than one root class: [] when each is one class.

    ``classes``: per error/warning root class, the (code, rank, core) of its gating members.
    """
    problems = []
    for item in expect["roots"]:
        fits = [c for c in classes if any(_matches(item, g) for g in c)]
        if not item.get("optional") and len(fits) > 1:
            shown = ", ".join(sorted({f"{g[0]}" for c in fits for g in c}))
            problems.append(f"root {item['code']} at rank {item['rank']} core {item['core']} is "
                            f"{len(fits)} root classes ({shown}): one defect, one class")
    return problems


def root_classes(report) -> list[set[tuple]]:
    by_id = {f.id: f for f in report.findings}
    out = []
    for c in report.classes:
        places = {(f.code, f.location.rank, f.location.core) for f in (by_id[m] for m in c.members)
                  if f.is_root and f.severity in GATING}
        if places:
            out.append(places)
    return out


@pytest.mark.parametrize("name", [pytest.param(n, marks=group(CORPUS / n)) for n in TRACES])
def test_diagnosis_names_the_expected_roots(name):
    report = report_of(CORPUS / name)  # diagnose(CORPUS / name), shared with test_report_all_formats
    _golden.check(f"corpus-{name}", report)
    got = {(f.code, f.location.rank, f.location.core) for f in report.roots if f.severity in GATING}
    problems = mismatch(_expect(name), got) + class_mismatch(_expect(name), root_classes(report))
    assert not problems, f"{name}: " + "; ".join(problems)


@pytest.mark.parametrize("name", ["classic_invalid_expert_9", "udma_counts_clean"])
def test_cli_ingest_then_diagnose_json(name, tmp_path):
    ds = tmp_path / "ds"
    ing = run_cli("ingest", CORPUS / name, "-o", ds, "--no-progress")
    assert ing.code == 0, ing.stderr
    out = run_cli("diagnose", ds, "--format", "json", "--no-progress")
    assert out.code in (0, 1), out.stderr
    doc = json.loads(out.stdout)
    got = {(f["code"], f["location"]["rank"], f["location"]["core"]) for f in doc["findings"]
           if f["root_cause"] and f["severity"] in GATING}
    problems = mismatch(_expect(name), got)
    assert not problems, f"{name}: " + "; ".join(problems)
    assert out.code == (1 if _expect(name)["roots"] else 0)


def test_regenerating_gives_the_same_bytes(tmp_path):
    sys.path.insert(0, str(CORPUS))
    try:
        from gen import make
    finally:
        sys.path.remove(str(CORPUS))
    assert sorted(make.CASES) == TRACES
    for name in TRACES:
        fresh = make.build(name, tmp_path)
        committed = CORPUS / name
        assert sorted(p.name for p in fresh.iterdir()) == sorted(p.name for p in committed.iterdir()), name
        for f in fresh.iterdir():
            assert f.read_bytes() == (committed / f.name).read_bytes(), f"{name}/{f.name} differs from its script"


def test_mismatch_compares_exactly():
    exp = {"roots": [{"code": ["MT202", "MT201"], "rank": 1, "core": None},
                     {"code": "MT204", "rank": None, "core": None, "optional": True}]}
    assert mismatch(exp, {("MT201", 1, 0)}) == []
    assert mismatch(exp, {("MT201", 1, 0), ("MT204", 3, 0)}) == []
    assert mismatch(exp, {("MT204", 3, 0)}) == ["missing root ['MT202', 'MT201'] at rank 1 core None"]
    assert mismatch(exp, {("MT201", 1, 0), ("MT502", 3, 1)}) == ["unexpected root MT502 at rank 3 core 1"]
    assert mismatch({"roots": []}, set()) == []


def test_class_mismatch_counts_root_classes_per_expected_root():
    exp = {"roots": [{"code": ["MT202", "MT201"], "rank": 1, "core": None},
                     {"code": "MT204", "rank": None, "core": None, "optional": True}]}
    assert class_mismatch(exp, [{("MT202", 1, 0), ("MT202", 1, 1)}]) == []
    assert class_mismatch(exp, [{("MT204", 0, 0)}, {("MT204", 2, 0)}, {("MT202", 1, 0)}]) == []
    assert class_mismatch(exp, [{("MT202", 1, 0)}, {("MT201", 1, 1)}]) == [
        "root ['MT202', 'MT201'] at rank 1 core None is 2 root classes (MT201, MT202): one defect, one class"]
