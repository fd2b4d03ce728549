"""Configuration: files, search, selection specificity, severity and options, errors."""

from __future__ import annotations

import pytest

from _diag_helpers import RULES, BadRoute, PlainWrite, StuckWait
from analyzer.config import Config, ConfigError, find_config, load_config, parse_config


def _codes(cfg: Config) -> list[str]:
    return [r.code for r in cfg.select_rules(RULES)]


def test_defaults_select_everything():
    assert _codes(Config()) == ["MT198", "MT498", "MT598"]
    assert Config().fail_on == "error"


def test_select_by_code_prefix_and_family():
    assert _codes(parse_config({"select": ["MT1"]})) == ["MT198"]
    assert _codes(parse_config({"select": ["hang", "MT598"]})) == ["MT198", "MT598"]
    assert _codes(parse_config({"select": "MT4,MT5"})) == ["MT498", "MT598"]
    assert _codes(parse_config({"select": ["mt198"]})) == ["MT198"]  # case as people type it


def test_most_specific_selector_wins():
    assert _codes(parse_config({"ignore": ["MT1"]})) == ["MT498", "MT598"]
    # An exact code in select beats the broader prefix in ignore, and the reverse.
    assert _codes(parse_config({"select": ["MT198"], "ignore": ["MT1"]})) == ["MT198"]
    assert _codes(parse_config({"select": ["MT1", "MT4"], "ignore": ["MT198"]})) == ["MT498"]
    assert _codes(parse_config({"select": ["MT5"], "ignore": ["MT5"]})) == []  # a tie: ignore wins


def test_command_line_overrides():
    cfg = parse_config({"select": ["MT1"], "ignore": ["MT498"], "fail-on": "warning"})
    cli = cfg.with_overrides(select=["MT4,MT5"], ignore=["MT598"], fail_on="never")
    assert cli.select == ("MT4", "MT5") and cli.ignore == ("MT498", "MT598") and cli.fail_on == "never"
    assert _codes(cli) == []
    assert cfg.with_overrides().fail_on == "warning"


def test_severity_overrides_most_specific():
    cfg = parse_config({"severity": {"MT": "note", "MT198": "warning", "hang": "error"}})
    assert cfg.severity_for(StuckWait) == "warning"
    assert cfg.severity_for(PlainWrite) == "note"
    assert Config().severity_for(BadRoute) is None


def test_options_merge_with_rule_defaults():
    cfg = parse_config({"options": {"MT198": {"confidence": "inferred"}}})
    cfg.select_rules(RULES)
    assert cfg.options_for(StuckWait) == {"confidence": "inferred"}
    assert Config().options_for(StuckWait) == {"confidence": "certain"}


@pytest.mark.parametrize("table, key, text", [
    ({"selct": ["MT1"]}, "tool.moetrace.selct", "unknown key"),
    ({"select": ["XY1"]}, "tool.moetrace.select", "not a rule code"),
    ({"select": [3]}, "tool.moetrace.select", "not a rule code"),
    ({"fail-on": "fatal"}, "tool.moetrace.fail-on", "'fatal' is not one of"),
    ({"severity": {"MT198": "loud"}}, "tool.moetrace.severity.MT198", "is not one of"),
    ({"severity": ["MT198"]}, "tool.moetrace.severity", "must be a table"),
    ({"options": {"MT198": 3}}, "tool.moetrace.options.MT198", "must be a table"),
])
def test_parse_errors_name_file_and_key(table, key, text):
    with pytest.raises(ConfigError) as e:
        parse_config(table, "pyproject.toml", "tool.moetrace.")
    assert e.value.key == key and text in str(e.value)
    assert str(e.value).startswith(f"pyproject.toml: {key}: ")


@pytest.mark.parametrize("table, key, text", [
    ({"select": ["MT197"]}, "select", "unknown rule code 'MT197'"),
    ({"options": {"MT197": {}}}, "options.MT197", "unknown rule code"),
    ({"options": {"MT198": {"nope": 1}}}, "options.MT198.nope", "takes: confidence"),
    ({"options": {"MT198": {"confidence": 3}}}, "options.MT198.confidence", "expected str"),
])
def test_registry_errors_name_the_key(table, key, text):
    with pytest.raises(ConfigError) as e:
        parse_config(table, "moetrace.toml").select_rules(RULES)
    assert e.value.key == key and text in str(e.value) and e.value.path == "moetrace.toml"


def test_unknown_code_from_command_line_names_the_flag():
    with pytest.raises(ConfigError, match=r"^command line: --select: unknown rule code 'MT197'$"):
        Config().with_overrides(select=["MT197"]).select_rules(RULES)


def test_pyproject_and_moetrace_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.moetrace]\nselect = ["MT1"]\n')
    assert load_config(tmp_path / "pyproject.toml").select == ("MT1",)
    (tmp_path / "moetrace.toml").write_text('ignore = ["MT5"]\n[severity]\nMT198 = "note"\n')
    cfg = load_config(tmp_path / "moetrace.toml")
    assert cfg.ignore == ("MT5",) and cfg.severity == {"MT198": "note"}
    assert cfg.path == tmp_path / "moetrace.toml"


def test_search_upward_prefers_moetrace_toml_and_skips_foreign_pyproject(tmp_path):
    top, mid, leaf = tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"
    leaf.mkdir(parents=True)
    (top / "pyproject.toml").write_text('[tool.moetrace]\nfail-on = "warning"\n')
    (mid / "pyproject.toml").write_text('[project]\nname = "other"\n')  # no [tool.moetrace]: keep looking
    assert find_config(leaf) == top / "pyproject.toml"
    assert load_config(search_from=[leaf]).fail_on == "warning"
    (top / "moetrace.toml").write_text('fail-on = "note"\n')
    assert find_config(leaf) == top / "moetrace.toml"
    (leaf / "trace.mtr").write_text("")
    assert find_config(leaf / "trace.mtr") == top / "moetrace.toml"  # a file input searches from its dir


def test_no_config_found_gives_defaults(tmp_path):
    assert find_config(tmp_path / "nowhere") is None
    assert load_config(search_from=[tmp_path / "nowhere"]) == Config()
    assert load_config(search_from=[]) == Config()


def test_file_errors(tmp_path):
    bad = tmp_path / "moetrace.toml"
    bad.write_text('fail-on = "error"\nselect = ]\n')
    with pytest.raises(ConfigError, match=r"moetrace.toml: line 2, column \d+: invalid TOML: \w"):
        load_config(bad)
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "absent.toml")
    pp = tmp_path / "pyproject.toml"
    pp.write_text('[tool.moetrace]\nselect = "MT1"\nbogus = 1\n')
    with pytest.raises(ConfigError) as e:
        load_config(pp)
    assert str(e.value) == f"{pp}: tool.moetrace.bogus: unknown key (expected one of select, ignore, severity, options, fail-on, window-events, jobs, max-findings)"
