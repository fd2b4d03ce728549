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
                "caused_by", "root_cause", "explains", "class", "fingerprint", "extra"}
CLASS_KEYS = {"id", "code", "name", "family", "severity", "root_cause", "site", "region", "source", "shape", "defect", "count",
              "findings", "ranks", "cores", "launches", "explains", "caused_by", "fingerprint"}
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
    assert wait_rule["helpUri"].endswith("docs/rules/MT198.md")
    results = run["results"]
    # One result per root-cause class: the bad route (its 4 stuck waits are related locations), the write.
    assert [r["ruleId"] for r in results] == ["MT598", "MT498"]
    route, write = results
    roots = [c for c in report.classes if c.root]
    for res, c in zip(results, roots):
        assert rules[res["ruleIndex"]]["id"] == c.code and res["level"] == c.severity
        assert res["partialFingerprints"] == {"moetraceClass/v2": c.fingerprint}
        assert res["properties"]["classId"] == c.id and res["properties"]["findingIds"] == list(c.members)
    assert route["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "kernels/dispatch.cc", "uriBaseId": "SRCROOT"}, "region": {"startLine": 88}}
    assert route["locations"][0]["logicalLocations"][0]["name"] == "rank 0 core 0"
    related = route["relatedLocations"]
    assert [r["logicalLocations"][0]["name"] for r in related] == [f"rank {r} core 0" for r in range(4)]
    assert {r["physicalLocation"]["region"]["startLine"] for r in related} == {120}
    assert [r["id"] for r in related] == [1, 2, 3, 4] and "symptom F3 MT198" in related[0]["message"]["text"]
    assert "explains 4 symptoms: 4 x MT198 test-stuck-wait on ranks 0-3" in route["message"]["text"]
    # No site: the trace given on the command line, line 1 (a dataset: its manifest).
    phys = write["locations"][0]["physicalLocation"]
    assert phys["region"] == {"startLine": 1}
    assert phys["artifactLocation"]["uri"].endswith("/ds/manifest.json")
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"] == Path.cwd().as_uri() + "/"
    notes = json.loads(render(partial_report, "sarif"))["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert any("3 events lost" in n["message"]["text"] for n in notes)


def test_sarif_schema_catches_a_broken_document(report):
    doc = json.loads(render(report, "sarif"))
    doc["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        _validate_sarif(doc)


def test_json_schema_shape(report, partial_report):
    doc = json.loads(render(report, "json"))
    assert set(doc) == {"version", "tool", "trace", "rules", "summary", "classes", "findings"}
    assert doc["version"] == 2 and doc["tool"]["name"] == "moetrace"
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
    assert [c["id"] for c in doc["classes"]] == ["C1", "C2", "C3"] and all(set(c) == CLASS_KEYS for c in doc["classes"])
    waits = doc["classes"][2]
    assert waits["code"] == "MT198" and waits["findings"] == ["F3", "F4", "F5", "F6"] and waits["ranks"] == [0, 1, 2, 3]
    assert waits["caused_by"] == ["C1"] and doc["classes"][0]["explains"] == ["C3"] and not waits["root_cause"]
    assert [f["class"] for f in doc["findings"]] == ["C1", "C2", "C3", "C3", "C3", "C3"]
    assert doc["summary"]["classes"] == 3 and doc["summary"]["root_classes"] == 2
    part = json.loads(render(partial_report, "json"))
    assert part["trace"]["partial"] and part["trace"]["lost"] == [{"rank": 1, "core": 0, "events": 3}]
    assert json.loads(render(report, "json", fail_on="never"))["summary"]["exit_code"] == 0


def test_junit_testcase_per_class(report):
    root = ET.fromstring(render(report, "junit"))
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    # A testcase per class (the route, the write, the 4 waits), then the rules that found nothing: none here.
    assert [c.get("classname") for c in cases] == ["moetrace.invalid-expert-id.MT598", "moetrace.missing-drain.MT498",
                                                   "moetrace.hang.MT198"]
    route, write, waits = cases
    assert (route.get("file"), route.get("line")) == ("kernels/dispatch.cc", "88")
    assert (waits.get("file"), waits.get("line")) == ("kernels/combine.cc", "120")
    assert write.get("file").endswith("/ds/manifest.json") and write.get("line") == "1"
    assert not write.get("file").startswith("file:")  # a path, as JUnit readers expect
    assert waits.find("failure").text.count("\n") == 4 and "root cause" in route.find("failure").text
    assert write.find("failure") is None and "plain write" in write.find("system-out").text
    assert suite.get("tests") == "3" and suite.get("failures") == "2"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", suite.get("timestamp"))
    assert float(suite.get("time")) == pytest.approx(report.seconds, abs=1e-3) and report.seconds > 0
    rule_time = dict(report.rule_seconds)
    assert float(waits.get("time")) == pytest.approx(rule_time["MT198"], abs=1e-3) and rule_time["MT198"] > 0
    quiet = ET.fromstring(render(report, "junit", fail_on="never")).find("testsuite")
    assert quiet.get("failures") == "0" and not quiet.findall("testcase/failure")
    loud = ET.fromstring(render(report, "junit", fail_on="warning")).find("testsuite")
    assert loud.get("failures") == "3"


def test_junit_rule_without_findings_passes(tmp_path):
    rep = diagnose(make_dataset(tmp_path, waits=False, with_write=False, bad_expert=1), rules=RULES)
    assert rep.findings == ()
    cases = ET.fromstring(render(rep, "junit")).find("testsuite").findall("testcase")
    assert len(cases) == 3 and all(c.find("failure") is None for c in cases)
    assert [c.get("name") for c in cases][0] == "MT198 test-stuck-wait: no findings"
    assert all(c.get("line") == "1" and c.get("file") for c in cases)


def test_text_groups_symptoms_under_root_cause(report):
    text = render(report, "text")
    assert "\033[" not in text  # no colour unless asked
    classes_at = text.index("DEFECT CLASSES (3): 2 root-cause classes, 1 of symptoms")
    assert "C3 error MT198 test-stuck-wait, symptom of C1: 4 findings on ranks 0-3 (core 0, launch 0) at site 2 " \
           "(kernels/combine.cc:120), region status" in text
    roots_at = text.index("ROOT CAUSES (2 in 2 classes)")
    assert classes_at < roots_at < text.index("F1 error MT598") < text.index("explains 4 symptoms") \
        < text.index("F2 warning MT498")
    group = re.search(r"4 x MT198 test-stuck-wait on ranks 0-3 \(C3\): wait at site 2 \(kernels/combine.cc:120\) "
                      r"on status until eq 1", text)
    assert group, text
    assert "at rank 0 core 0, launch 0, site 1 (kernels/dispatch.cc:88)" in text
    assert "invalid route: route rank 0 core 0 seq 1" in text
    assert "complete trace" in text
    assert text.rstrip().splitlines()[-1].startswith(
        "summary: 6 findings in 3 classes (5 errors, 1 warning): 2 root causes (2 classes) explaining 4 symptoms;")
    assert "\033[31;1merror" in render(report, "text", color=True)


def test_text_states_the_gap(partial_report):
    text = render(partial_report, "text")
    assert "PARTIAL TRACE" in text and "3 events lost to ring wrap or a cut start (rank 1 core 0: 3)" in text
    assert "partial trace; fail-on error" in text


def test_text_clean_and_unresolved_cause(tmp_path):
    ds = make_dataset(tmp_path)
    clean = diagnose(ds, Config(select=("MT5",)), rules=RULES)
    assert clean.findings and render(clean, "text").count("ROOT CAUSES (1 in 1 class)") == 1
    lone = diagnose(ds, Config(select=("MT1",)), rules=RULES)
    text = render(lone, "text")
    # Four waits whose cause was not selected: four roots, one class, printed once with the other places by id.
    assert "ROOT CAUSES (4 in 1 class)" in text and "its named cause was not reported" in text
    assert "C1: 4 x MT198 test-stuck-wait on ranks 0-3" in text and "and 3 more places like it: ids: F2, F3, F4" in text
    nothing = diagnose(make_dataset(tmp_path, "ok", waits=False, with_write=False, bad_expert=1), rules=RULES)
    assert "summary: clean" in render(nothing, "text")


def test_compress_ranks():
    assert compress_ranks([5, 0, 1, 2, 3, 7, 8, 3]) == "0-3,5,7-8"
    assert compress_ranks([]) == "" and compress_ranks([4]) == "4"


def test_github_checks_catch_what_code_scanning_rejects(report):
    from _sarif_check import github_problems

    good = json.loads(render(report, "sarif"))
    assert list(github_problems(good, 1000)) == []

    def broken(edit):
        doc = json.loads(json.dumps(good))
        edit(doc["runs"][0])
        return list(github_problems(doc, 1000))

    assert broken(lambda run: run["results"][1]["locations"][0].pop("physicalLocation"))
    assert broken(lambda run: run["results"][0]["relatedLocations"][0].pop("physicalLocation"))
    assert broken(lambda run: run["results"][0]["locations"][0]["physicalLocation"]["region"].update(startLine=0))
    assert broken(lambda run: run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
                  .update(uriBaseId="NOPE"))
    assert broken(lambda run: run["results"][0].pop("partialFingerprints"))
    assert broken(lambda run: run["results"][0].update(locations=[]))
    assert broken(lambda run: run["results"].extend([run["results"][0]] * 25_000))
    assert broken(lambda run: run["tool"]["driver"]["rules"][0].pop("helpUri"))
    assert list(github_problems(good, 11 * 2**20))  # over 10 MB gzipped
