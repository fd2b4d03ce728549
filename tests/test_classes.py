"""Defect classes: one defect at many places is one class, one text block, one SARIF result, one fingerprint."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from _diag_helpers import RULES, make_dataset
from _sarif_check import check_sarif
from analyzer.classes import message_shape
from analyzer.config import Config
from analyzer.engine import diagnose
from analyzer.report import render, sarif
from analyzer.report._sarif_paths import Paths
from conftest import run_cli


@pytest.fixture
def test_rules(monkeypatch, tmp_path):
    """The CLI sees only the test rules, and no config of this repository."""
    import rules as rules_pkg

    from _diag_helpers import registry_of

    monkeypatch.setattr(rules_pkg, "registry", lambda: registry_of(*RULES))
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("cls"))


def test_message_shape_abstracts_numbers_and_place_lists():
    assert message_shape("rank 3 core 1 waits on ready[8]") == message_shape("rank 5 core 0 waits on ready[16]")
    assert message_shape("current value -1") == message_shape("current value 7")
    one = "rank 5 dead; 1 stuck waits expect it (rank 1 core 0)"
    many = "rank 0 dead; 63 stuck waits expect it (rank 1 core 0, rank 2 core 0, rank 3 core 1 ...)"
    assert message_shape(one) == message_shape(many)
    assert message_shape("wait on count[0] eq 1") != message_shape("wait on ready[0] eq 1")


def test_findings_get_their_class(ds):
    rep = diagnose(ds, rules=RULES)
    assert [f.defect_class for f in rep.findings] == ["C1", "C2", "C3", "C3", "C3", "C3"]
    waits = rep.class_of(rep.findings[2])
    assert (waits.code, waits.site, waits.region, waits.root, waits.size) == ("MT198", 2, "status", False, 4)
    assert waits.caused_by == ("C1",) and rep.classes[0].explains == ("C3",)


@pytest.mark.parametrize("select", [None, ("MT4",), ("MT1",), ("MT5",), ("MT1", "MT4")])
def test_text_and_json_agree_on_root_causes(ds, select):
    """A lone warning with no cause is a root cause in JSON; the text used to call it 'other' and count 0 roots."""
    rep = diagnose(ds, Config(select=select) if select else None, rules=RULES)
    doc = json.loads(render(rep, "json"))
    text = render(rep, "text")
    json_roots = [f["id"] for f in doc["findings"] if f["root_cause"]]
    assert doc["summary"]["root_causes"] == len(json_roots) > 0
    summary = text.rstrip().splitlines()[-1]
    n = len(json_roots)
    assert re.search(rf": {n} root causes? \(", summary), summary
    assert f"ROOT CAUSES ({n} in " in text
    block = text[text.index("ROOT CAUSES"):]
    printed = set(re.findall(r"^(F\d+) (?:error|warning|note) ", block, re.M))
    like_it = {i for line in re.findall(r"more places? like it: ids: (.*)$", block, re.M) for i in line.split(", ")}
    assert printed | like_it == set(json_roots)


def test_max_findings_caps_and_counts_the_rest(ds):
    rep = diagnose(ds, Config(select=("MT1", "MT4", "MT5")), rules=RULES)
    full = render(rep, "text")
    capped = render(rep, "text", max_findings=1)
    assert full.count("\n  C") == 3 and capped.count("\n  C") == 1
    assert "... and 2 more classes (5 findings) not printed (--max-findings 1" in capped
    assert "... and 1 more class (1 finding) not printed (--max-findings 1" in capped
    assert "F2 warning MT498" in full and "F2 warning MT498" not in capped


def test_max_findings_on_the_command_line(ds, test_rules):
    r = run_cli("diagnose", ds, "--max-findings", "1")
    assert r.code == 1 and "not printed (--max-findings 1" in r.stdout
    r = run_cli("diagnose", ds, "--max-findings", "0")
    assert r.code == 2 and "--max-findings" in r.stderr and "Traceback" not in r.stderr


def _simulate(tmp: Path, ranks: int, rank: int) -> Path:
    out = tmp / f"r{ranks}-{rank}"
    r = run_cli("simulate", "--protocol", "classic", "--ranks", ranks, "--cores", 1, "--tokens", 2, "--topk", 1,
                "--fault", "rank-stop", "--at", f"rank={rank}", "-o", out)
    assert r.code == 0, r.stderr
    return out / "dataset"


@pytest.fixture(scope="module")
def hang64_dataset(tmp_path_factory):
    return _simulate(tmp_path_factory.mktemp("h64"), 64, 0)


@pytest.fixture(scope="module")
def hang64(hang64_dataset):
    return diagnose(hang64_dataset)


def test_64_rank_hang_is_one_sarif_result_with_63_related_locations(hang64, tmp_path):
    assert len(hang64.findings) == 64 and len(hang64.classes) == 2
    text = render(hang64, "sarif")
    doc = check_sarif(text)
    (result,) = doc["runs"][0]["results"]
    assert result["ruleId"] == "MT103" and len(result["relatedLocations"]) == 63
    ranks = sorted(int(r["logicalLocations"][0]["name"].split()[1]) for r in result["relatedLocations"])
    assert ranks == list(range(1, 64))
    assert "explains 63 symptoms: 63 x MT101 stuck-wait on ranks 1-63" in result["message"]["text"]
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "kernels/classic.py"
    # The text report: one line per class, the 63 waits compressed to one range.
    out = render(hang64, "text")
    assert "C2 error MT101 stuck-wait, symptom of C1: 63 findings on ranks 1-63" in out


def test_fingerprints_hold_when_a_flaky_hang_stops_another_rank(tmp_path):
    fps = []
    for rank in (0, 5):
        rep = diagnose(_simulate(tmp_path, 8, rank))
        res = json.loads(render(rep, "sarif"))["runs"][0]["results"]
        fps.append([(r["ruleId"], r["partialFingerprints"]) for r in res])
        assert res[0]["locations"][0]["logicalLocations"][0]["name"].startswith(f"rank {rank}")
    assert fps[0] == fps[1] and len(fps[0]) == 1


def test_sarif_caps_results_and_says_how_many(ds, monkeypatch):
    rep = diagnose(ds, rules=RULES)
    monkeypatch.setattr(sarif, "MAX_RESULTS", 1)
    doc = sarif.to_sarif(rep)
    run = doc["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["MT598"] and run["properties"]["resultsOmitted"] == 1
    note = run["invocations"][0]["toolExecutionNotifications"][-1]["message"]["text"]
    assert note.startswith("1 result of 2 left out") and "5 of 6 findings" in note
    monkeypatch.setattr(sarif, "MAX_RESULTS", 5000)
    size = len(json.dumps(sarif.to_sarif(rep), indent=2))
    tight = sarif.to_sarif(rep, max_gzip_bytes=size // 20)
    assert len(tight["runs"][0]["results"]) < 2 and tight["runs"][0]["properties"]["resultsOmitted"] >= 1
    monkeypatch.setattr(sarif, "MAX_LOCATIONS", 3)
    (first, _) = sarif.to_sarif(rep)["runs"][0]["results"]
    assert len(first["relatedLocations"]) == 2 and first["properties"]["relatedLocationsOmitted"] == 2


def test_source_root_maps_manifest_paths(ds, tmp_path, test_rules):
    rep = diagnose(ds, rules=RULES)
    doc = json.loads(render(rep, "sarif", source_root="csrc"))
    art = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert art == {"uri": "csrc/kernels/dispatch.cc", "uriBaseId": "SRCROOT"}
    paths = Paths([], root=tmp_path)
    inside = paths.physical(f"{tmp_path}/src/k.cc:7")
    assert inside == {"artifactLocation": {"uri": "src/k.cc", "uriBaseId": "SRCROOT"}, "region": {"startLine": 7}}
    outside = paths.physical("/elsewhere/k.cc:9")["artifactLocation"]
    assert outside == {"uri": "file:///elsewhere/k.cc"}
    assert paths.physical("k.cc")["region"] == {"startLine": 1}  # a site without a line: line 1
    r = run_cli("diagnose", ds, "-f", "sarif", "--source-root", "csrc", "--select", "MT5")
    assert "csrc/kernels/dispatch.cc" in r.stdout


def test_text_caps_the_symptom_classes_under_a_root():
    from _drafts import draft, report

    from analyzer.engine import Report, TraceInfo

    root = draft("MT501", 1, 0, message="rank 1 stuck")
    symptoms = [draft(f"MT1{i:02d}", i, 0, message=f"rank {i} stuck", causes=[("MT501", (1, 0, 0))])
                for i in range(2, 27)]
    found, classes, index = report([root, *symptoms])
    text = render(Report(found, TraceInfo(inputs=("x",)), classes=classes, class_index=index), "text")
    assert text.count("\n    - 1 x MT1") == 20
    assert "    - ... and 5 more symptoms in 5 more classes: C22, C23, C24, C25, C26" in text


def test_numbers_as_hash_is_the_number_regex():
    import random

    from analyzer.classes import _NUMBER, _numbers_as_hash

    rng = random.Random(3)
    alphabet = "0123456789--ab #,.\u0663\u00b2"
    for _ in range(20000):
        m = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 24)))
        assert _numbers_as_hash(m) == _NUMBER.sub("#", m), m


def _classes(*drafts):
    from _drafts import report

    return report(list(drafts))[1]


def _draft(message: str, defect: str = "", rank: int = 0):
    from _drafts import draft

    return draft("MT106", rank, 0, message=message, defect=defect, region="cnt")


def test_a_named_defect_is_one_class_whatever_its_messages_say():
    """Two wordings of one defect (a raw 0 and a raw 5) are one class, and rewording either
    changes neither the class nor its fingerprint; two defects a rule names are two classes; a rule
    that names none has one defect at a place, however its messages differ."""
    zero, five = "stored 0 raw: a != 0 poll never ends", "stored 5 raw: it decodes as -6 rows"
    named = _classes(_draft(zero, "count-stored-raw"), _draft(five, "count-stored-raw", 1))
    assert len(named) == 1 and named[0].members == ("F1", "F2")
    reworded = _classes(_draft("the count 0 went out unencoded", "count-stored-raw"),
                        _draft(five, "count-stored-raw", 1))
    assert reworded[0].fingerprint == named[0].fingerprint
    two = _classes(_draft(zero, "count-stored-raw"), _draft(zero, "count-not-reset", 1))
    assert len(two) == 2 and two[0].fingerprint != two[1].fingerprint
    unnamed = _classes(_draft(zero), _draft(five, rank=1))
    assert len(unnamed) == 1 and unnamed[0].members == ("F1", "F2")


def test_a_capped_report_lists_a_sample_and_counts_every_finding(hang64, hang64_dataset, tmp_path):
    """--max-findings: each class lists its first N findings; counts, verdict, exit code and every
    format still speak of all 64 (issue 19: findings as a sample until a report prints them)."""
    from dataclasses import replace

    capped = diagnose(hang64_dataset, replace(Config(), max_findings=5))
    assert capped.findings == tuple(f for f in hang64.findings if f.id in {f.id for f in capped.findings})
    assert len(capped.findings) == 1 + 5 and [c.size for c in capped.classes] == [1, 63]
    assert capped.counts() == {**hang64.counts(), "listed": 6} and capped.exit_code() == hang64.exit_code() == 1
    assert not capped.complete and hang64.complete
    assert capped.class_of_id("F64").id == "C2"  # a finding the report does not list still has its class
    doc = json.loads(render(capped, "json"))
    waits = doc["classes"][1]
    assert waits["count"] == 63 and len(waits["findings"]) == 5 and doc["summary"]["findings"] == 64
    assert doc["summary"]["listed"] == 6 and doc["summary"]["max_findings"] == 5 and doc["summary"]["failing"] == 64
    assert len(doc["findings"][0]["explains"]) == 63  # the root still names every symptom it explains
    text = render(capped, "text")
    assert "C2 error MT101 stuck-wait, symptom of C1: 63 findings on ranks 1-63" in text
    assert "explains 63 symptoms:" in text and "(58 not listed" not in text
    assert "64 findings in 2 classes" in text and "(6 listed, at most 5 a class)" in text
    sarif_doc = check_sarif(render(capped, "sarif"))
    (result,) = sarif_doc["runs"][0]["results"]
    assert "explains 63 symptoms: 63 x MT101 stuck-wait" in result["message"]["text"]
    assert len(result["relatedLocations"]) == 5
    assert "<failure" in render(capped, "junit") and "58 more of this class not listed" in render(capped, "junit")
    assert "All findings (64)" in render(capped, "html")


def test_max_findings_reaches_every_format_from_the_command_line(hang64, tmp_path):
    ds = _simulate(tmp_path, 16, 0)
    r = run_cli("diagnose", ds, "--format", "json", "--max-findings", "3")
    assert r.code == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["summary"]["findings"] == 16 and doc["summary"]["listed"] == 4
    assert [c["count"] for c in doc["classes"]] == [1, 15] and len(doc["classes"][1]["findings"]) == 3
    (tmp_path / "pyproject.toml").write_text("[tool.moetrace]\nmax-findings = 2\n")
    r = run_cli("diagnose", ds, "--format", "sarif", "--config", tmp_path / "pyproject.toml")
    assert r.code == 1 and len(json.loads(r.stdout)["runs"][0]["results"][0]["relatedLocations"]) == 2
