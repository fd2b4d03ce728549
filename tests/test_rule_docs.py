"""docs/rules/ (the SARIF helpUri pages) matches the rules' docstrings; every rule has its page."""

from __future__ import annotations

import importlib.util

from conftest import ROOT


def _gen():
    spec = importlib.util.spec_from_file_location("gen_rule_docs", ROOT / "docs" / "gen_rule_docs.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def test_rule_docs_are_up_to_date():
    gen = _gen()
    assert gen.stale() == [], "run: uv run python docs/gen_rule_docs.py"


def test_every_rule_has_the_page_its_help_uri_names():
    from analyzer.report.sarif import help_uri
    from rules import registry

    for code, rule in registry().items():
        uri = help_uri(code)
        assert uri.endswith(f"rules/{code}.md")
        text = (ROOT / "docs" / "rules" / f"{code}.md").read_text()
        assert f"# {code} {rule.name}" in text and "## What it does" in text and "## Evidence" in text


def test_a_changed_docstring_makes_the_docs_stale(monkeypatch):
    gen = _gen()
    rule = next(iter(gen.registry().values()))
    monkeypatch.setattr(rule, "summary", rule.summary + " (changed)")
    assert gen.stale() == [f"{rule.code}.md", "README.md"]
