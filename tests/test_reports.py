"""Reporters: SARIF validates against the official schema, JSON keeps its schema, JUnit parses, text groups."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from _diag_helpers import RULES, make_dataset
from analyzer.config import Config
from analyzer.engine import diagnose
from analyzer.report import render
from analyzer.report._fmt import compress_ranks

SARIF_SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())
FINDING_KEYS = {"id", "code", "family", "name", "severity", "confidence", "message", "location", "evidence",
                "caused_by", "root_cause", "explains", "fingerprint", "extra"}
LOCATION_KEYS = {"rank", "core", "launch", "region", "offset", "site", "source"}
EVIDENCE_KEYS = {"role", "rank", "core", "seq", "kind", "values", "source"}


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    return diagnose(make_dataset(tmp_path_factory.mktemp("rep")), rules=RULES)


@pytest.fixture(scope="module")
def partial_report(tmp_path_factory):
    return diagnose(make_dataset(tmp_path_factory.mktemp("part"), lost={(1, 0): 3}), rules=RULES)


def _validate_sarif(doc):
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(doc)


@pytest.mark.parametrize("which", ["report", "partial_report"])
def test_sarif_validates(which, request):
    doc = json.loads(render(request.getfixturevalue(which), "sarif"))
    _validate_sarif(doc)
    assert doc["version"] == "2.1.0"


def test_sarif_rules_and_locations(report, partial_report):
    doc = json.loads(render(report, "sarif"))
    run = doc["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["MT198", "MT498", "MT598"]
    wait_rule = rules[0]
    assert wait_rule["name"] == "test-stuck-wait" and wait_rule["shortDescription"]["text"] == "Wait that never ended"
    assert wait_rule["defaultConfiguration"]["level"] == "error" and wait_rule["properties"]["family"] == "hang"
    assert wait_rule["fullDescription"]["text"].startswith("Every wait_begin is stuck")
    assert "## Why it matters" in wait_rule["help"]["markdown"]
    results = run["results"]
    assert len(results) == 6
    for res, f in zip(results, report.findings):
        assert res["ruleId"] == f.code and rules[res["ruleIndex"]]["id"] == f.code
        assert res["level"] == f.severity and res["properties"]["findingId"] == f.id
        assert res["properties"]["causedBy"] == list(f.caused_by)
        assert res["partialFingerprints"]["moetraceFinding/v1"] == f.fingerprint
        logical = res["locations"][0]["logicalLocations"][0]
        assert logical["name"] == f"rank {f.location.rank} core {f.location.core}"
    wait = next(r for r in results if r["ruleId"] == "MT198")
    phys = wait["locations"][0]["physicalLocation"]
    assert phys == {"artifactLocation": {"uri": "kernels/combine.cc"}, "region": {"startLine": 120}}
    assert wait["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 120
    write = next(r for r in results if r["ruleId"] == "MT498")
    assert "physicalLocation" not in write["locations"][0]  # no site: the device place only
    notes = json.loads(render(partial_report, "sarif"))["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert any("3 events lost" in n["message"]["text"] for n in notes)


def test_sarif_schema_catches_a_broken_document(report):
    doc = json.loads(render(report, "sarif"))
    doc["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        _validate_sarif(doc)


def test_json_schema_shape(report, partial_report):
    doc = json.loads(render(report, "json"))
    assert set(doc) == {"version", "tool", "trace", "rules", "summary", "findings"}
    assert doc["version"] == 1 and doc["tool"]["name"] == "moetrace"
    assert set(doc["trace"]) == {"inputs", "protocol", "ranks", "cores", "events", "partial",
                                 "ranks_missing", "lost", "gaps"}
    assert doc["summary"]["exit_code"] == 1 and doc["summary"]["failing"] == 5
    assert doc["summary"]["by_severity"] == {"error": 5, "warning": 1, "note": 0}
    for f in doc["findings"]:
        assert set(f) == FINDING_KEYS and set(f["location"]) == LOCATION_KEYS
        assert all(set(e) == EVIDENCE_KEYS for e in f["evidence"])
        assert f["severity"] in ("error", "warning", "note")
        assert f["confidence"] in ("certain", "inferred", "partial-trace")
        assert f["root_cause"] == (f["caused_by"] == [])
    root = doc["findings"][0]
    assert root["explains"] == ["F3", "F4", "F5", "F6"]
    assert root["location"]["source"] == "kernels/dispatch.cc:88"
    assert doc["findings"][2]["extra"]["class"] == [2, "status", "eq", 1]
    part = json.loads(render(partial_report, "json"))
    assert part["trace"]["partial"] and part["trace"]["lost"] == [{"rank": 1, "core": 0, "events": 3}]
    assert json.loads(render(report, "json", fail_on="never"))["summary"]["exit_code"] == 0


def test_junit_testcase_per_rule(report):
    root = ET.fromstring(render(report, "junit"))
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    assert [c.get("name") for c in cases] == ["MT198 test-stuck-wait", "MT498 test-plain-write",
                                             "MT598 test-bad-route"]
    failed = {c.get("name").split()[0]: c.find("failure") for c in cases}
    assert failed["MT198"] is not None and failed["MT198"].text.count("\n") == 4
    assert failed["MT598"] is not None and "root cause" in failed["MT598"].text
    assert failed["MT498"] is None  # a warning under fail-on error: listed, not failed
    assert "plain write" in cases[1].find("system-out").text
    assert suite.get("tests") == "3" and suite.get("failures") == "2"
    quiet = ET.fromstring(render(report, "junit", fail_on="never")).find("testsuite")
    assert quiet.get("failures") == "0" and not quiet.findall("testcase/failure")
    loud = ET.fromstring(render(report, "junit", fail_on="warning")).find("testsuite")
    assert loud.get("failures") == "3"


def test_junit_rule_without_findings_passes(tmp_path):
    rep = diagnose(make_dataset(tmp_path, waits=False, with_write=False, bad_expert=1), rules=RULES)
    assert rep.findings == ()
    cases = ET.fromstring(render(rep, "junit")).find("testsuite").findall("testcase")
    assert len(cases) == 3 and all(c.find("failure") is None for c in cases)


def test_text_groups_symptoms_under_root_cause(report):
    text = render(report, "text")
    assert "\033[" not in text  # no colour unless asked
    roots_at = text.index("ROOT CAUSES (1)")
    other_at = text.index("OTHER FINDINGS (1)")
    assert roots_at < text.index("F1 error MT598") < text.index("explains 4 symptoms") < other_at
    assert text.index("F2 warning MT498") > other_at
    group = re.search(r"4 x MT198 test-stuck-wait on ranks 0-3: wait at site 2 \(kernels/combine.cc:120\) "
                      r"on status until eq 1", text)
    assert group, text
    assert "at rank 0 core 0, launch 0, site 1 (kernels/dispatch.cc:88)" in text
    assert "invalid route: route rank 0 core 0 seq 1" in text
    assert "complete trace" in text
    assert text.rstrip().splitlines()[-1].startswith(
        "summary: 6 findings (5 errors, 1 warning): 1 root cause explaining 4 symptoms, 1 other;")
    assert "\033[31;1merror" in render(report, "text", color=True)


def test_text_states_the_gap(partial_report):
    text = render(partial_report, "text")
    assert "PARTIAL TRACE" in text and "3 events lost to ring wrap or a cut start (rank 1 core 0: 3)" in text
    assert "partial trace; fail-on error" in text


def test_text_clean_and_unresolved_cause(tmp_path):
    ds = make_dataset(tmp_path)
    clean = diagnose(ds, Config(select=("MT5",)), rules=RULES)
    assert clean.findings and render(clean, "text").count("ROOT CAUSES (1)") == 1
    lone = diagnose(ds, Config(select=("MT1",)), rules=RULES)
    text = render(lone, "text")
    assert "ROOT CAUSES (4)" in text and "its named cause was not reported" in text
    nothing = diagnose(make_dataset(tmp_path, "ok", waits=False, with_write=False, bad_expert=1), rules=RULES)
    assert "summary: clean" in render(nothing, "text")


def test_compress_ranks():
    assert compress_ranks([5, 0, 1, 2, 3, 7, 8, 3]) == "0-3,5,7-8"
    assert compress_ranks([]) == "" and compress_ranks([4]) == "4"
