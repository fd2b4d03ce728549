"""The golden findings (tests/_golden.py) cover every reference trace, and nothing else is stored.

The comparisons themselves run where each trace is diagnosed already (tests/test_corpus.py,
tests/test_oshmem.py, tests/test_accuracy.py); this file makes sure none of them can be skipped
silently (a trace with no golden file fails there) and that no stale file outlives its trace.
"""

from __future__ import annotations

import json

import _golden
import test_accuracy
import test_corpus
import test_oshmem


def expected_names() -> set[str]:
    return ({f"corpus-{name}" for name in test_corpus.TRACES}
            | {f"oshmem-{s}" for s in test_oshmem.SCENARIOS}
            | {f"accuracy-{case.id}" for case in test_accuracy.GOLDEN_CASES})


def test_every_reference_trace_has_golden_findings_and_no_file_is_stale():
    stored = {p.name.removesuffix(".jsonl") for p in _golden.GOLDEN.glob("*.jsonl")}
    want = expected_names()
    assert not want - stored, f"no golden findings for {sorted(want - stored)[:5]} (see tests/_golden.py)"
    assert not stored - want, f"golden files with no trace: {sorted(stored - want)[:5]}"


def test_golden_files_are_reports_with_findings_somewhere():
    """A comparison of empty files could not fail: the stored reports hold real findings."""
    findings = 0
    for path in _golden.GOLDEN.glob("*.jsonl"):
        docs = [json.loads(line) for line in path.read_text().splitlines()]
        assert "summary" in docs[0] and "trace" in docs[0], path.name
        assert all(set(d) in ({"class"}, {"finding"}) for d in docs[1:]), path.name
        findings += sum("finding" in d for d in docs[1:])
    assert findings > 100


def test_check_fails_on_one_changed_value(tmp_path, monkeypatch):
    from analyzer.engine import diagnose

    report = diagnose(test_corpus.CORPUS / "classic_invalid_expert_9")
    monkeypatch.setattr(_golden, "GOLDEN", tmp_path)
    monkeypatch.setattr(_golden, "WRITE", True)
    _golden.check("x", report)
    monkeypatch.setattr(_golden, "WRITE", False)
    _golden.check("x", report)  # the same report: equal
    stored = _golden.path_of("x")
    stored.write_text(stored.read_text().replace('"expert": 9', '"expert": 10', 1))
    try:
        _golden.check("x", report)
    except AssertionError as e:
        assert "differ" in str(e) and '"expert": 9' in str(e)
    else:
        raise AssertionError("a changed value went unnoticed")
