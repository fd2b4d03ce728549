"""Every rule fixture: fire_* must give hits of its rule, quiet_* none.

Discovered from tests/fixtures/rules/<CODE>/<fire|quiet>_<what>/; a fire
fixture's expect.json may pin the exact count. Each fixture is ingested
through the real ingest entry point and checked by its rule alone.

A fixture may hold ``lost.json`` (``{"lost": [[rank, core, events], ...],
"ranks_missing": [...]}``), a stand-in for a ring wrap or a missing dump that
JSONL cannot express: it is written into the dataset's ingest.json. A quiet
fixture with a gap must raise nothing certain: a hit is allowed only where it
names the gap its conclusion may lie in (``Hit.gap``: the engine's root decision,
``analyzer.causes``, makes every such hit a partial-trace note).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rules import registry
from rules.runner import check_one
from rules.trace import TraceView

FIXTURES = Path(__file__).parent / "fixtures" / "rules"


def _cases():
    for d in sorted(FIXTURES.glob("*/*")):
        if d.is_dir() and d.name.startswith(("fire_", "quiet_")):
            yield pytest.param(d, id=f"{d.parent.name}/{d.name}")


def _ingest(src: Path, out: Path) -> None:
    from ingest.run import ingest

    ingest([src], out)
    gap = src / "lost.json"
    if gap.exists():
        g = json.loads(gap.read_text())
        lost = {(r, c): k for r, c, k in g.get("lost", ())}
        rep_path = out / "ingest.json"
        rep = json.loads(rep_path.read_text())
        for c in rep["cores"]:
            c["lost"] = lost.get((c["rank"], c["core"]), 0)
        rep["ranks_missing"] = sorted(set(rep.get("ranks_missing", [])) | set(g.get("ranks_missing", ())))
        rep_path.write_text(json.dumps(rep))


@pytest.mark.parametrize("fixture", list(_cases()))
def test_rule_fixture(fixture: Path, tmp_path: Path):
    code = fixture.parent.name
    rules = registry()
    assert code in rules, f"fixture directory {code} names no registered rule"
    ds = tmp_path / "ds"
    _ingest(fixture, ds)
    trace = TraceView.open(ds)
    hits = [h for h in check_one(rules[code], trace) if h.code == code]
    shown = "\n".join(h.message for h in hits)
    if fixture.name.startswith("quiet_") and (fixture / "lost.json").exists():
        loud = [h for h in hits if not h.gap]
        assert loud == [], f"{code} must not conclude from a gap on {fixture.name}, got:\n{shown}"
        return
    if fixture.name.startswith("quiet_"):
        assert hits == [], f"{code} must stay quiet on {fixture.name}, got:\n{shown}"
        return
    expect = fixture / "expect.json"
    if expect.exists():
        want = json.loads(expect.read_text())
        if "count" in want:
            assert len(hits) == want["count"], f"{code} on {fixture.name}: {len(hits)} hits:\n{shown}"
    assert hits, f"{code} must fire on {fixture.name}"
    n = trace.n
    for h in hits:
        assert h.rows and all(0 <= r < n for _, r in h.rows), h
        first = h.rows[0][1]
        if len(h.key) == 3:
            want_key = (int(trace["rank"][first]), int(trace["core"][first]), int(trace["seq"][first]))
            assert tuple(h.key) == want_key, f"hit key {h.key} is not its first row's {want_key}"
