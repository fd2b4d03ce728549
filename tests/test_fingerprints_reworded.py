"""Rewording a message changes no fingerprint and no defect class (issue 22).

A CI baseline matches findings by their SARIF fingerprints; a rule's message
is for people and is reworded as the tool improves. Every hit of every rule
is reworded here (other words, other numbers, other list lengths) on corpus
traces that exercise the hang graph, stale flags, count mismatches, barriers
and a partial trace; the classes, their fingerprints and the SARIF results'
fingerprints must stay what they were.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from analyzer.engine import diagnose
from analyzer.report import render
from rules.hit_columns import HitColumns

CORPUS = Path(__file__).resolve().parent / "corpus"
TRACES = ["classic_count_not_reset", "classic_cut_before_round_two_wait", "classic_barrier_all_cores_off_by_one",
          "classic_invalid_expert_9"]


def _reworded(message: str) -> str:
    """Other words, other numbers, a list of places of another length: all a message may change."""
    return "Reworded 42: " + message.replace("rank", "PE").replace(",", ", 7, 8,") + " (see 3 more, 4 of 9)"


def _identity(report) -> dict:
    doc = json.loads(render(report, "sarif"))
    results = [(r["ruleId"], r["partialFingerprints"]) for r in doc["runs"][0]["results"]]
    classes = [(c.id, c.code, c.fingerprint, c.members) for c in report.classes]
    findings = [(f.id, f.fingerprint, f.defect_class) for f in report.findings]
    return {"sarif": results, "classes": classes, "findings": findings}


@pytest.mark.parametrize("name", TRACES)
def test_rewording_every_message_keeps_every_fingerprint(name, monkeypatch):
    import rules.runner as runner

    before = diagnose(CORPUS / name)
    assert before.classes, f"{name}: no findings to compare"
    check = runner.check

    def reworded(rule, trace, options=None):  # a batch of hits renders its messages in other words
        return [dataclasses.replace(h, render=lambda f, render=h.render: _reworded(render(f)))
                if isinstance(h, HitColumns) else dataclasses.replace(h, message=_reworded(h.message))
                for h in check(rule, trace, options)]

    monkeypatch.setattr(runner, "check", reworded)
    after = diagnose(CORPUS / name)
    assert all(f.message.startswith("Reworded 42: ") for f in after.findings)
    assert _identity(after) == _identity(before)
