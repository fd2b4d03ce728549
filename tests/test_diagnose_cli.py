"""``moetrace diagnose``, ``rules`` and ``explain`` through the real entry point: exit codes and outputs."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest
from _diag_helpers import RULES, Boom, events, make_dataset, registry_of, write_trace
from _rule_cases import FIXTURES, cases, fixture_input, rule_codes
from conftest import run_cli

import rules as rules_pkg


@pytest.fixture
def test_rules(monkeypatch, tmp_path):
    """The CLI sees only the test rules, and no config of this repository."""
    monkeypatch.setattr(rules_pkg, "registry", lambda: registry_of(*RULES))
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("cli"))


@pytest.fixture(scope="module")
def clean_ds(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("clean"), waits=False, with_write=False, bad_expert=1)


def test_exit_codes_and_fail_on(test_rules, ds, clean_ds):
    assert run_cli("diagnose", clean_ds).code == 0
    r = run_cli("diagnose", ds)
    assert r.code == 1 and "ROOT CAUSES" in r.stdout and r.stderr == ""
    assert run_cli("diagnose", ds, "--fail-on", "never").code == 0
    only_warning = ["diagnose", ds, "--select", "MT498"]
    assert run_cli(*only_warning).code == 0
    assert run_cli(*only_warning, "--fail-on", "warning").code == 1
    assert run_cli(*only_warning, "--fail-on", "note").code == 1


def test_select_and_ignore(test_rules, ds):
    r = run_cli("diagnose", ds, "--format", "json", "--select", "MT1,MT5", "--ignore", "MT598")
    doc = json.loads(r.stdout)
    assert [x["code"] for x in doc["rules"]] == ["MT198"]
    assert {f["code"] for f in doc["findings"]} == {"MT198"}
    r = run_cli("diagnose", ds, "-f", "json", "--select", "hang", "--select", "MT498")
    assert [x["code"] for x in json.loads(r.stdout)["rules"]] == ["MT198", "MT498"]


@pytest.mark.parametrize("fmt", ["json", "sarif", "junit"])
def test_machine_formats_on_stdout(test_rules, ds, fmt):
    r = run_cli("diagnose", ds, "--format", fmt)
    assert r.code == 1 and r.stderr == ""
    if fmt == "junit":
        assert ET.fromstring(r.stdout).tag == "testsuites"
    else:
        assert json.loads(r.stdout)["version"] in (2, "2.1.0")


def test_output_file(test_rules, ds, tmp_path):
    out = tmp_path / "report.sarif"
    r = run_cli("diagnose", ds, "-f", "sarif", "-o", out)
    assert r.code == 1 and r.stdout == ""
    assert json.loads(out.read_text())["runs"][0]["results"]
    r = run_cli("diagnose", ds, "-o", tmp_path / "missing-dir" / "x.txt")
    assert r.code == 2 and "cannot write report" in r.stderr


def test_raw_input_is_ingested(test_rules, tmp_path):
    raw = write_trace(tmp_path / "raw", events())
    r = run_cli("diagnose", raw, "-f", "json")
    assert r.code == 1 and len(json.loads(r.stdout)["findings"]) == 6


@pytest.mark.parametrize("args, text", [
    (["--format", "yaml"], "--format: 'yaml' is not one of"),
    (["--fail-on", "fatal"], "command line: --fail-on: 'fatal' is not one of"),
    (["--select", "XY"], "command line: --select: 'XY' is not a rule code"),
    (["--select", "MT197"], "command line: --select: unknown rule code 'MT197'"),
])
def test_usage_errors_exit_2(test_rules, ds, args, text):
    r = run_cli("diagnose", ds, *args)
    assert r.code == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and text in r.stderr


def test_unreadable_input_exit_2(test_rules, tmp_path):
    r = run_cli("diagnose", tmp_path / "absent")
    assert r.code == 2 and r.stderr.startswith("moetrace: error: ") and "absent" in r.stderr
    assert "Traceback" not in r.stderr and r.stderr.count("\n") == 1
    bad = write_trace(tmp_path / "bad", [{"rank": 0, "core": 0, "seq": 0, "kind": "nonsense"}])
    r = run_cli("diagnose", bad)
    assert r.code == 2 and "events.jsonl" in r.stderr and r.stderr.count("\n") == 1
    assert run_cli("diagnose").code == 2  # no input: a usage error


def test_config_file_is_found_and_used(test_rules, ds, tmp_path):
    (tmp_path / "moetrace.toml").write_text('ignore = ["MT598"]\nfail-on = "never"\n')
    r = run_cli("diagnose", ds, "-f", "json")  # found from the current directory
    doc = json.loads(r.stdout)
    assert r.code == 0 and doc["summary"]["fail_on"] == "never"
    assert "MT598" not in [x["code"] for x in doc["rules"]]
    assert run_cli("diagnose", ds, "--fail-on", "error").code == 1  # the flag beats the file
    other = tmp_path / "strict.toml"
    other.write_text('[severity]\nMT498 = "error"\n')
    r = run_cli("diagnose", ds, "--config", other, "--select", "MT498")
    assert r.code == 1 and "F1 error MT498" in r.stdout


@pytest.mark.parametrize("body, where", [
    ("select = [\n", "moetrace.toml: end of file: invalid TOML"),
    ('fail-on = "x"\nselect = ]\n', "moetrace.toml: line 2, column"),
    ('selectt = ["MT1"]\n', "moetrace.toml: selectt: unknown key"),
    ('[severity]\nMT198 = "loud"\n', "moetrace.toml: severity.MT198: 'loud' is not one of"),
    ('[options.MT198]\nnope = 1\n', "moetrace.toml: options.MT198.nope: unknown option"),
])
def test_config_errors_exit_2(test_rules, ds, tmp_path, body, where):
    (tmp_path / "moetrace.toml").write_text(body)
    r = run_cli("diagnose", ds)
    assert r.code == 2 and r.stdout == "" and r.stderr.count("\n") == 1
    assert where in r.stderr, r.stderr
    assert run_cli("diagnose", ds, "--config", tmp_path / "nope.toml").code == 2


def test_rule_crash_is_an_internal_error(monkeypatch, ds, tmp_path):
    monkeypatch.setattr(rules_pkg, "registry", lambda: registry_of(*RULES, Boom))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MOETRACE_CRASH_DIR", str(tmp_path))
    r = run_cli("diagnose", ds)
    assert r.code == 3 and "internal error: RuleError: rule MT599 raised ValueError: kaboom" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.splitlines()) == 1


def test_run_diagnose_for_other_commands(test_rules, ds):
    from analyzer.commands.diagnose import DiagnoseOptions, run_diagnose

    buf = io.StringIO()
    assert run_diagnose([ds], DiagnoseOptions("json"), buf) == 1
    assert json.loads(buf.getvalue())["summary"]["findings"] == 6
    buf = io.StringIO()
    assert run_diagnose([ds], DiagnoseOptions("text", fail_on="never"), buf) == 0 and "\033[" not in buf.getvalue()


def test_colour_only_on_a_terminal(test_rules, ds, monkeypatch):
    from analyzer.commands.diagnose import DiagnoseOptions, run_diagnose

    class Tty(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    tty = Tty()
    run_diagnose([ds], DiagnoseOptions("text"), tty)
    assert "\033[31;1merror" in tty.getvalue()
    tty = Tty()
    run_diagnose([ds], DiagnoseOptions("json"), tty)
    assert "\033[" not in tty.getvalue()  # machine formats never
    monkeypatch.setenv("NO_COLOR", "1")
    tty = Tty()
    run_diagnose([ds], DiagnoseOptions("text"), tty)
    assert "\033[" not in tty.getvalue()


def test_rules_and_explain(test_rules):
    r = run_cli("rules")
    assert r.code == 0
    lines = r.stdout.splitlines()
    assert lines[0].split() == ["CODE", "NAME", "FAMILY", "SEVERITY", "SUMMARY"]
    assert lines[1].split()[:4] == ["MT198", "test-stuck-wait", "hang", "error"]
    doc = json.loads(run_cli("rules", "--format", "json").stdout)
    assert [d["code"] for d in doc] == ["MT198", "MT498", "MT598"] and doc[0]["options"] == {"confidence": "certain"}
    r = run_cli("explain", "mt198")
    assert r.code == 0
    for part in ("MT198 test-stuck-wait", "family:           hang", "What it does", "Why it matters",
                 "Example", "Evidence", "[tool.moetrace.options.MT198]"):
        assert part in r.stdout
    r = run_cli("explain", "MT999")
    assert r.code == 2 and "unknown rule code 'MT999'" in r.stderr
    assert run_cli("rules", "--format", "xml").code == 2


def test_real_rules_on_their_fixtures(monkeypatch, tmp_path):
    """The registry's own rules through the CLI, on a rule author's fire/quiet fixtures."""
    monkeypatch.chdir(tmp_path)
    fires = sorted(FIXTURES.glob("*/fire_*"))
    if not fires:
        pytest.skip("no rule fixtures yet")
    for fire in fires[:2]:
        code = fire.parent.name
        trace = fixture_input(fire, tmp_path / "in" / code / fire.name)
        r = run_cli("diagnose", trace, "-f", "json", "--select", code, "--fail-on", "note")
        doc = json.loads(r.stdout)
        assert r.code == 1 and doc["findings"] and {f["code"] for f in doc["findings"]} == {code}, fire
    for quiet in sorted(FIXTURES.glob("*/quiet_*"))[:2]:
        trace = fixture_input(quiet, tmp_path / "in" / quiet.parent.name / quiet.name)
        r = run_cli("diagnose", trace, "-f", "json", "--select", quiet.parent.name, "--fail-on", "note")
        assert r.code == 0 and json.loads(r.stdout)["findings"] == [], quiet


def test_every_rule_fixture_renders_valid_reports(tmp_path):
    """All registered rules on one fire fixture per rule: every format renders, SARIF validates."""
    import jsonschema
    from test_reports import SARIF_SCHEMA

    from analyzer.engine import diagnose
    from analyzer.report import render

    validator = jsonschema.Draft4Validator(SARIF_SCHEMA)
    # Diagnosed with the default config: a case that sets rule options fires only with them.
    firsts = [next((FIXTURES / code / name for name in sorted(cases(code))
                    if name.startswith("fire_") and "options" not in cases(code)[name]), None)
              for code in rule_codes()]
    for fire in filter(None, firsts):
        rep = diagnose(fixture_input(fire, tmp_path / "in" / fire.parent.name / fire.name))
        assert fire.parent.name in {f.code for f in rep.findings}, fire
        validator.validate(json.loads(render(rep, "sarif")))
        assert json.loads(render(rep, "json"))["findings"]
        ET.fromstring(render(rep, "junit"))
        text = render(rep, "text")
        assert "DEFECT CLASSES" in text and "ROOT CAUSES" in text


def test_invalid_expert_id_is_the_root_of_the_combine_hang(tmp_path):
    """The demo's story on its fixture: the dropped route is the root cause, the combine wait its symptom."""
    fixture = FIXTURES / "MT101" / "fire_invalid_expert_combine"
    if not fixture.is_dir():
        pytest.skip("fixture not there yet")
    from analyzer.engine import diagnose

    rep = diagnose(fixture_input(fixture, tmp_path / "input"))
    root = rep.findings[0]
    assert root.code == "MT501" and root.is_root and root.family == "invalid-expert-id"
    waits = [f for f in rep.findings if f.code == "MT101"]
    assert waits and all(root.id in w.caused_by for w in waits)
    assert set(root.explains) >= {w.id for w in waits}
