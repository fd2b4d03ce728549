"""Missing-drain roots through the engine: a late put's MT202 is a symptom of the MT401 that names it."""

from __future__ import annotations

from pathlib import Path

from _rule_cases import FIXTURES, fixture_input
from analyzer.engine import diagnose


def _diagnose(fixture: str, tmp_path: Path):
    return diagnose(fixture_input(FIXTURES / fixture, tmp_path / "input"))


def test_late_put_flag_not_reset_cites_missing_drain(tmp_path):
    report = _diagnose("MT202/fire_late_put_missing_drain", tmp_path)
    by_code = {}
    for f in report.findings:
        by_code.setdefault(f.code, []).append(f)
    (f202,), (f401,) = by_code["MT202"], by_code["MT401"]
    assert f401.is_root and not f202.is_root
    assert f202.caused_by == (f401.id,), f202.extra.get("causes_not_reported")
    assert [f.code for f in report.roots] == ["MT401"]


def test_reset_missed_by_the_owner_stays_a_root(tmp_path):
    report = _diagnose("MT202/fire_slot_not_reset", tmp_path)
    (f202,) = [f for f in report.findings if f.code == "MT202"]
    assert f202.is_root


def test_one_missing_quiet_is_one_root(tmp_path):
    report = _diagnose("MT401/fire_one_drain_many_flags", tmp_path)
    roots = [f for f in report.roots if f.code == "MT401"]
    assert [f.extra["flag_writes"] for f in roots] == [3, 1]  # launch 0's loop of signals, launch 1
