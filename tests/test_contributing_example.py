"""CONTRIBUTING.md's example of a rule that reads the wait-for graph: the block as written, run.

The guide claims such a rule is one module (plus its page and fixtures): this test takes the
python block from the guide, makes it a module of the ``rules`` package, and diagnoses a corpus
trace with it beside every registered rule, through the engine (stages, guard, citation order).
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

from analyzer.engine import diagnose
from rules import registry

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "corpus"
SECTIONS = '"""Example.\n\n    What it does\n        x\n\n    Why it matters\n        x\n\n    Example\n        x\n\n    Evidence\n        x\n    """'


def _example_rule():
    text = (ROOT / "CONTRIBUTING.md").read_text()
    block = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    source = "\n".join(line[2:] if line.startswith("  ") else line for line in block.splitlines())
    source = source.replace('"""...the four sections..."""', SECTIONS)
    module = types.ModuleType("rules.mt109_contributing_example")
    module.__package__ = "rules"
    sys.modules[module.__name__] = module
    try:
        exec(compile(source, "CONTRIBUTING.md", "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    (rule,) = [v for v in module.__dict__.values() if isinstance(v, type) and getattr(v, "code", "") == "MT109"]
    return rule


def _diagnose(name: str, rule):
    if not (CORPUS / name).is_dir():
        pytest.skip(f"corpus trace {name} not present")
    return diagnose(CORPUS / name, rules=[*registry().values(), rule])


def test_the_guides_rule_fires_as_a_symptom_of_the_stuck_wait():
    rule = _example_rule()
    report = _diagnose("classic_rank_dump_missing", rule)
    mine = [f for f in report.findings if f.code == "MT109"]
    assert mine, [f.code for f in report.findings]
    waits = {f.id: f for f in report.findings if f.code == "MT101"}
    for f in mine:
        assert not f.is_root and set(f.caused_by) <= set(waits), f
        assert "stopped or left no dump" in f.message


def test_the_guides_rule_stays_quiet_on_a_clean_trace():
    report = _diagnose("classic_clean_bare", _example_rule())
    assert not [f for f in report.findings if f.code == "MT109"]
