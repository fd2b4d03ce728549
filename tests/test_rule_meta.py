"""Every registered rule is documented, well-formed, and has fire and quiet fixtures."""

from __future__ import annotations

import inspect
import re
from collections import Counter

import pytest

from _rule_cases import (CASE_FIELDS, FIXTURE_FILES, FIXTURES, HIT_FIELDS, MANIFESTS, cases, fixture_dirs,
                         manifest_of, rule_codes)
from rules import Family, Rule, Severity, registry
from rules.base import DOC_SECTIONS

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
    assert (FIXTURES / code / "cases.toml").is_file(), f"{code} has no cases file"
    kinds = {name.split("_", 1)[0] for name in cases(code)}
    assert "fire" in kinds, f"{code} has no fire_* case"
    assert "quiet" in kinds, f"{code} has no quiet_* case"


@pytest.mark.parametrize("code", rule_codes())
def test_cases_file_and_fixture_directories_agree(code):
    """Each case names a fixture directory, each directory has its case, in the rule's one cases file."""
    named = set(cases(code))
    on_disk = {p.name for p in fixture_dirs(code)}
    assert not named - on_disk, f"{code}/cases.toml names no such fixture directory: {sorted(named - on_disk)}"
    assert not on_disk - named, f"{code}/cases.toml lacks fixture directories: {sorted(on_disk - named)}"
    for name in sorted(named):
        case, d, where = cases(code)[name], FIXTURES / code / name, f"{code}/{name}"
        assert re.fullmatch(r"(fire|quiet)_[a-z0-9_]+", name), where
        assert set(case) <= CASE_FIELDS, f"{where}: unknown fields {set(case) - CASE_FIELDS}"
        for i, hit in enumerate(case.get("hits", ())):
            assert set(hit) <= HIT_FIELDS, f"{where} hit {i}: unknown fields {set(hit) - HIT_FIELDS}"
        assert len(case.get("hits", ())) <= case.get("count", 0), f"{where}: more hits stated than counted"
        if name.startswith("fire_"):
            assert case.get("count", 0) >= 1, f"{where}: a fire case states its count"
            assert case.get("hits"), f"{where}: a fire case states its first hit"
        if code in RULES:
            assert not set(case.get("options", {})) - set(RULES[code].options), f"{where}: unknown option"
        shared, own = "manifest" in case, (d / "manifest.json").is_file()
        assert shared != own, f"{where}: needs either a shared manifest in its case or its own manifest.json"
        assert manifest_of(d).is_file(), f"{where}: no manifest {manifest_of(d)}"
        files = {p.name for p in d.iterdir()}
        assert any(f.endswith(".jsonl") for f in files), f"{where} holds no events"
        assert all(f.endswith(".jsonl") or f in FIXTURE_FILES for f in files), f"{where}: stray files {files}"


def test_shared_manifests_are_shared():
    """A shared manifest serves two fixtures or more (one fixture's layout stays in its directory)."""
    uses = Counter(cases(code)[name].get("manifest") for code in rule_codes() for name in cases(code))
    for path in sorted(MANIFESTS.glob("*")):
        assert path.suffix == ".json" and uses[path.stem] >= 2, f"{path.name} is used {uses[path.stem]} times"


def test_fixture_directories_name_rules():
    stray = [code for code in rule_codes() if code not in RULES]
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
