"""Every rule fixture against its case: fire_* gives the hits its case states, quiet_* none.

The fixtures and their cases files are described in ``tests/_rule_cases.py``.
Each fixture is ingested through the real ingest entry point (its events
beside its manifest in a fresh input directory) and checked by its rule
alone; a fire fixture of a rule that cites others is checked again with them
(``rules.runner.run``), where the causes its hits name must resolve to hits
of that run.

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
from typing import Any, Mapping

import pytest
from _rule_cases import all_fixtures, case_of, fixture_input

from rules import registry
from rules.analysis import Options, closure
from rules.analysis.stages import CITES as STAGE_CITES
from rules.base import Hit, Rule
from rules.base import expand
from rules.runner import check_one, run
from rules.trace import TraceView


def _cases():
    for d in all_fixtures():
        yield pytest.param(d, id=f"{d.parent.name}/{d.name}")


def _ingest(fixture: Path, tmp_path: Path) -> Path:
    from ingest.run import ingest

    out = tmp_path / "ds"
    ingest([fixture_input(fixture, tmp_path / "input")], out)
    gap = fixture / "lost.json"
    if gap.exists():
        g = json.loads(gap.read_text())
        lost = {(r, c): k for r, c, k in g.get("lost", ())}
        rep_path = out / "ingest.json"
        rep = json.loads(rep_path.read_text())
        for c in rep["cores"]:
            c["lost"] = lost.get((c["rank"], c["core"]), 0)
        rep["ranks_missing"] = sorted(set(rep.get("ranks_missing", [])) | set(g.get("ranks_missing", ())))
        rep_path.write_text(json.dumps(rep))
    return out


def _open(ds: Path, rule: type[Rule], options: Mapping[str, Any]) -> TraceView:
    trace = TraceView.open(ds)
    # What the runner does for the shared analyses, so a case's option reaches them under check_one too.
    trace.options = Options.from_rules([rule], lambda r: options)
    return trace


def _cited(rule: type[Rule]) -> list[str]:
    """The other rules whose hits the rule's may name: its cites, and those of the stages it requires."""
    codes = [*rule.cites, *(c for s in closure(rule.requires) for c in STAGE_CITES.get(s, ()))]
    return [c for c in dict.fromkeys(codes) if c != rule.code]


def _codes(hit: Hit) -> list[str]:
    return list(dict.fromkeys(c for c, _ in hit.caused_by))


def _plain(value: Any) -> Any:
    """Tuples as lists, as TOML reads them."""
    return json.loads(json.dumps(value))


def _assert_hit(h: Hit, want: Mapping[str, Any], where: str) -> None:
    """The fields a case states for one hit (caused_by is the cited run's: ``_assert_causes``)."""
    got = {"key": _plain(h.key), "confidence": h.confidence.value, "roles": [role for role, _ in h.rows],
           "severity": h.severity and h.severity.value, "blocks": _plain(h.blocks),
           "stalls": _plain(h.stalls), "defect": h.defect}
    for field in ("key", "confidence", "roles", "blocks", "stalls", "defect"):
        if field in want:
            assert got[field] == want[field], f"{where}: {field} {got[field]!r}, case says {want[field]!r}"
    assert got["severity"] == want.get("severity"), f"{where}: severity {got['severity']!r}"
    assert want.get("message", "") in h.message, f"{where}: message lacks {want['message']!r}:\n{h.message}"
    if "gap" in want:
        assert h.gap and want["gap"] in h.gap, f"{where}: gap {h.gap!r} lacks {want['gap']!r}"
    else:
        assert h.gap is None, f"{where}: names a gap the case does not: {h.gap!r}"
    # Alone the rule sees no cited rule's hits: it can name those causes or fewer, never others.
    assert set(_codes(h)) <= set(want.get("caused_by", ())), f"{where}: caused_by {h.caused_by}"


def _assert_causes(rule: type[Rule], ds: Path, options: Mapping[str, Any], alone: list[Hit],
                   wants: list[Mapping[str, Any]], name: str) -> None:
    """The rule run with the rules it cites: the same hits, each cause stated and a hit of that run."""
    rules = registry()
    cited = _cited(rule)
    if not cited:  # nothing to resolve against: the causes are what the rule gave alone
        together = {rule.code: alone}
    else:
        ran = run(TraceView.open(ds), [rule, *(rules[c] for c in cited)],
                  options_for=lambda r: options if r is rule else dict(r.options))
        together = {code: expand(found) for code, found in ran.items()}
    hits = together[rule.code]
    assert [h.key for h in hits] == [h.key for h in alone], f"{rule.code}/{name}: other hits with its cited rules"
    for i, (h, want) in enumerate(zip(hits, wants)):
        assert _codes(h) == want.get("caused_by", []), f"{rule.code}/{name} hit {i}: caused_by {h.caused_by}"
    for h in hits:
        for code, key in h.caused_by:
            assert key in {c.key for c in together.get(code, ())}, \
                f"{rule.code}/{name}: cause {code} {key} is no hit of the run with {cited}"


@pytest.mark.parametrize("fixture", list(_cases()))
def test_rule_fixture(fixture: Path, tmp_path: Path):
    code, name, case = fixture.parent.name, fixture.name, case_of(fixture)
    rules = registry()
    assert code in rules, f"fixture directory {code} names no registered rule"
    rule = rules[code]
    options = {**rule.options, **case.get("options", {})}
    ds = _ingest(fixture, tmp_path)
    trace = _open(ds, rule, options)
    hits = [h for h in check_one(rule, trace, options) if h.code == code]
    shown = "\n".join(h.message for h in hits)
    if name.startswith("quiet_") and not (fixture / "lost.json").exists():
        assert hits == [], f"{code} must stay quiet on {name}, got:\n{shown}"
    elif name.startswith("quiet_"):
        loud = [h for h in hits if not h.gap]
        assert loud == [], f"{code} must not conclude from a gap on {name}, got:\n{shown}"
    else:
        assert hits, f"{code} must fire on {name}"
    assert len(hits) == case.get("count", 0), f"{code} on {name}: {len(hits)} hits:\n{shown}"
    wants = case.get("hits", [])
    for i, (h, want) in enumerate(zip(hits, wants)):
        _assert_hit(h, want, f"{code}/{name} hit {i}")
    n = trace.n
    for h in hits:
        assert h.rows and all(0 <= r < n for _, r in h.rows), h
        first = h.rows[0][1]
        if len(h.key) == 3:
            want_key = (int(trace["rank"][first]), int(trace["core"][first]), int(trace["seq"][first]))
            assert tuple(h.key) == want_key, f"hit key {h.key} is not its first row's {want_key}"
    if name.startswith("fire_"):
        _assert_causes(rule, ds, options, hits, wants, name)
