"""docs/instrumenting-deepep.md's worked example diagnoses as the page says: one root, MT107 at
the receiver that kept the head, both stuck waits its symptoms."""

from __future__ import annotations

import re

from conftest import ROOT
from analyzer.engine import diagnose

DOC = ROOT / "docs" / "instrumenting-deepep.md"


def test_worked_example_has_one_mt107_root(tmp_path):
    text = DOC.read_text()
    example = text[text.index("## Worked example"):]
    manifest = re.search(r"```json\n(.*?)```", example, re.S).group(1)
    events = re.search(r"```jsonl\n(.*?)```", example, re.S).group(1)
    (tmp_path / "manifest.json").write_text(manifest)
    (tmp_path / "events.jsonl").write_text(events)
    report = diagnose(tmp_path)
    roots = [(f.code, f.location.rank, f.location.core) for f in report.findings
             if f.is_root and f.severity in ("error", "warning")]
    assert roots == [("MT107", 0, 1)]
    symptoms = sorted((f.code, f.location.rank) for f in report.findings if not f.is_root)
    assert symptoms == [("MT101", 0), ("MT101", 1)]
    assert "channel 0's queue" in next(f.message for f in report.findings if f.code == "MT107")
