"""Every registered rule is documented, well-formed, and has fire and quiet fixtures."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from rules import Family, Rule, Severity, registry
from rules.base import DOC_SECTIONS

FIXTURES = Path(__file__).parent / "fixtures" / "rules"
FAMILY_DIGIT = {Family.HANG: "1", Family.STALE_FLAG: "2", Family.CAPACITY_TRUNCATION: "3",
                Family.MISSING_DRAIN: "4", Family.INVALID_EXPERT_ID: "5", Family.DATA_RACE: "6",
                Family.ENGINE_LIMIT: "7"}
RULES = registry()


def test_registry_is_not_empty():
    assert RULES, "no rules discovered under rules/mt*.py"


@pytest.mark.parametrize("code", list(RULES))
def test_rule_metadata(code):
    rule = RULES[code]
    assert rule.code == code
    assert re.fullmatch(r"MT[1-7]\d\d", code), code
    assert isinstance(rule.family, Family)
    assert code[2] == FAMILY_DIGIT[rule.family], f"{code} is outside the {rule.family.value} range"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name), f"{code} name {rule.name!r} is not kebab-case"
    assert isinstance(rule.severity, Severity)
    assert isinstance(rule.summary, str) and rule.summary.strip() and "\n" not in rule.summary
    module = inspect.getmodule(rule)
    short = module.__name__.rsplit(".", 1)[-1]
    assert re.fullmatch(rf"mt{code[2:]}_[a-z0-9_]+", short), f"{code} lives in module {short}"
    assert callable(getattr(rule, "check", None)) and rule.check is not Rule.check


@pytest.mark.parametrize("code", list(RULES))
def test_rule_docstring_sections(code):
    sections = RULES[code].doc_sections()
    for name in DOC_SECTIONS:
        assert sections.get(name, "").strip(), f"{code}: docstring section {name!r} is missing or empty"


@pytest.mark.parametrize("code", list(RULES))
def test_one_rule_per_module(code):
    module = inspect.getmodule(RULES[code])
    own = [o for o in vars(module).values()
           if isinstance(o, type) and issubclass(o, Rule) and o is not Rule and o.__module__ == module.__name__]
    assert len(own) == 1, f"{module.__name__} defines {len(own)} rules"


@pytest.mark.parametrize("code", list(RULES))
def test_rule_has_fire_and_quiet_fixtures(code):
    d = FIXTURES / code
    kinds = {p.name.split("_", 1)[0] for p in d.glob("*_*") if p.is_dir()} if d.is_dir() else set()
    assert "fire" in kinds, f"{code} has no fire_* fixture under {d}"
    assert "quiet" in kinds, f"{code} has no quiet_* fixture under {d}"
    for p in d.glob("*_*"):
        assert (p / "manifest.json").is_file() and any(p.glob("*.jsonl*")), f"{p} is not a trace"


def test_fixture_directories_name_rules():
    stray = [p.name for p in FIXTURES.iterdir() if p.is_dir() and p.name not in RULES] if FIXTURES.is_dir() else []
    assert not stray, f"fixture directories for unknown rules: {stray}"


@pytest.mark.parametrize("code", list(RULES))
def test_rule_dependencies_are_declared_and_exist(code):
    """What a rule requires is a shared analysis, what it cites a rule, what it rests on a property."""
    from ingest.manifest import ANNOTATIONS
    from rules.analysis import Stage

    rule = RULES[code]
    assert all(isinstance(s, Stage) for s in rule.requires), (code, rule.requires)
    assert set(rule.cites) <= set(RULES), (code, set(rule.cites) - set(RULES))
    assert set(rule.infers_from) <= {*ANNOTATIONS, "params"}, code
    assert set(rule.shared_options) <= set(rule.options), code
