"""The engine: hits to findings, cause links, root causes, ordering, gaps."""

from __future__ import annotations

from dataclasses import replace

import pytest

from _diag_helpers import RULES, BadRoute, Boom, PlainWrite, StuckWait, make_dataset, write_trace, events
from _drafts import csr

from analyzer._cause_graph import break_cycles, explained
from analyzer.config import Config, parse_config
from analyzer.engine import RuleError, diagnose
from rules.base import Family, Rule, Severity


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("engine"))


def test_root_cause_first_with_its_symptoms(ds):
    rep = diagnose(ds, rules=RULES)
    codes = [f.code for f in rep.findings]
    assert codes == ["MT598", "MT498", "MT198", "MT198", "MT198", "MT198"]
    assert [f.id for f in rep.findings] == [f"F{i}" for i in range(1, 7)]
    root = rep.findings[0]
    assert root.is_root and root.caused_by == ()
    waits = [f for f in rep.findings if f.code == "MT198"]
    assert all(w.caused_by == (root.id,) and not w.is_root for w in waits)
    assert set(root.explains) == {w.id for w in waits}
    assert rep.findings[1].is_root and rep.findings[1].explains == ()
    assert [w.location.rank for w in waits] == [0, 1, 2, 3]
    c = rep.counts()
    assert c["root_causes"] == 2 and c["symptoms"] == 4
    assert c["by_family"] == {"hang": 4, "invalid-expert-id": 1, "missing-drain": 1}
    assert c["by_severity"] == {"error": 5, "warning": 1, "note": 0}
    assert [r.code for r in rep.rules] == ["MT198", "MT498", "MT598"]


def test_location_evidence_and_source_line(ds):
    rep = diagnose(ds, rules=RULES)
    w = next(f for f in rep.findings if f.code == "MT198" and f.location.rank == 2)
    loc = w.location
    assert (loc.rank, loc.core, loc.launch, loc.region, loc.offset, loc.site) == (2, 0, 0, "status", 3, 2)
    assert loc.source == "kernels/combine.cc:120" and loc.file == "kernels/combine.cc" and loc.line == 120
    (ev,) = w.evidence
    assert (ev.role, ev.rank, ev.core, ev.kind) == ("stuck wait", 2, 0, "wait_begin")
    assert ev.values["cmp"] == "eq" and ev.values["value"] == 1 and ev.values["region"] == "status"
    assert ev.source == "kernels/combine.cc:120"
    assert w.family == "hang" and w.name == "test-stuck-wait" and w.confidence == "certain"


def test_cause_not_selected_leaves_root_with_note(ds):
    rep = diagnose(ds, Config(ignore=("MT598",)), rules=RULES)
    waits = [f for f in rep.findings if f.code == "MT198"]
    assert len(waits) == 4 and all(w.is_root for w in waits)
    assert all(w.extra["causes_not_reported"] == ["MT598 [0, 0, 1]"] for w in waits)
    assert "MT598" not in [r.code for r in rep.rules]


def test_severity_precedence_config_over_hit_over_default(ds):
    class Loud(PlainWrite):
        def check(self, trace, ctx):
            for h in super().check(trace, ctx):
                yield replace(h, severity=Severity.ERROR)

    rep = diagnose(ds, rules=[Loud])
    assert rep.findings[0].severity == "error"  # the hit's own level beats the rule default
    rep = diagnose(ds, parse_config({"severity": {"MT498": "note"}}), rules=[Loud])
    assert rep.findings[0].severity == "note"  # the config beats both
    assert rep.exit_code("error") == 0 and rep.exit_code("note") == 1 and rep.exit_code("never") == 0


def test_options_reach_the_rule(ds):
    rep = diagnose(ds, parse_config({"options": {"MT198": {"confidence": "inferred"}}}), rules=RULES)
    assert {f.confidence for f in rep.findings if f.code == "MT198"} == {"inferred"}


def test_fingerprints_stable_and_distinct(tmp_path, ds):
    a = diagnose(ds, rules=RULES)
    shifted = make_dataset(tmp_path, "shifted", ts_shift=1000)  # timestamps only: same defects
    b = diagnose(shifted, Config(select=("MT198", "MT598")), rules=RULES)
    fa = {f.fingerprint for f in a.findings if f.code != "MT498"}
    assert fa == {f.fingerprint for f in b.findings}
    # Events earlier on a core shift every later seq; a CI baseline must still match.
    moved = make_dataset(tmp_path, "moved", seq_shift=7)
    c = diagnose(moved, Config(select=("MT198", "MT598")), rules=RULES)
    assert fa == {f.fingerprint for f in c.findings}
    assert len({f.fingerprint for f in a.findings}) == len(a.findings)


def test_raw_inputs_are_ingested_on_the_fly(tmp_path, ds, monkeypatch):
    import tempfile

    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    raw = write_trace(tmp_path / "raw", events())
    a = diagnose([raw], rules=RULES)
    b = diagnose(ds, rules=RULES)
    assert [f.to_json() | {"extra": None} for f in a.findings] == [f.to_json() | {"extra": None} for f in b.findings]
    assert a.trace.inputs == (str(raw),)
    assert list((tmp_path / "tmp").iterdir()) == []  # the temporary dataset is gone


def test_bad_input_is_a_trace_error(tmp_path):
    from ingest.errors import TraceError

    with pytest.raises(TraceError, match="no such file"):
        diagnose(tmp_path / "absent", rules=RULES)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "manifest.json").write_text("{not json")
    (bad / "events.jsonl").write_text("")
    with pytest.raises(TraceError):
        diagnose(bad, rules=RULES)


def test_rule_crash_propagates_with_original(ds):
    with pytest.raises(RuleError, match="MT599") as info:
        diagnose(ds, rules=[Boom])
    assert isinstance(info.value.__cause__, ValueError)


def test_a_finding_placed_at_a_non_integer_rank_is_its_rule_s_bug(ds):
    """The report orders and groups findings by their integer place: a rule that names a rank that
    is no integer fails as that rule's error, not later in the link."""

    class Odd(Boom):
        def check(self, trace, ctx):
            yield self.hit("somewhere", rows=(("event", 0),), location={"rank": "three"})

    with pytest.raises(RuleError, match="MT599") as info:
        diagnose(ds, rules=[Odd])
    assert "rank 'three', which is not an integer" in str(info.value.__cause__)


def test_gaps_are_reported(tmp_path):
    ds = make_dataset(tmp_path, lost={(2, 0): 7})
    rep = diagnose(ds, rules=RULES)
    assert rep.trace.partial and rep.trace.lost == ((2, 0, 7),)
    assert any("7 events lost" in g and "rank 2 core 0" in g for g in rep.trace.gap_lines())
    complete = diagnose(make_dataset(tmp_path, "full"), rules=RULES)
    assert not complete.trace.partial and complete.trace.gap_lines() == []


def test_a_finding_resting_where_events_were_lost_is_partial_trace(tmp_path):
    """The engine, not the rule, makes a finding partial-trace where the trace lost events at a place
    its hit ``rests_on`` (ring wrap on that core, or any core of a rank named whole); elsewhere the
    rule's confidence stands, and the gap policy (a note) is not applied: the evidence is there."""

    class Resting(PlainWrite):
        def check(self, trace, ctx):
            for h in super().check(trace, ctx):
                rank, core = h.key[0], h.key[1]
                yield replace(h, rests_on=((rank, core),) if rank != 1 else ((rank, None),))

    import json

    from _diag_helpers import MANIFEST

    from ingest.run import ingest

    evs = [{"rank": r, "core": c, "seq": s, "ts": 10 * s, "launch": 0, "kind": kind, **kw}
           for r in range(4) for c in range(2) for s, (kind, kw) in enumerate((
               ("kernel_begin", {"name": "combine"}), ("write", {"region": "payload", "offset": 2 * c, "nbytes": 4,
                                                                 "value": 7}), ("kernel_end", {"name": "combine"})))]
    ingest([write_trace(tmp_path / "raw", evs, {**MANIFEST, "cores": 2})], tmp_path / "ds")
    doc = json.loads((tmp_path / "ds" / "ingest.json").read_text())
    for c in doc["cores"]:  # the JSONL reader never loses events: state the gaps as a ring dump would
        c["lost"] = {(2, 0): 7, (1, 1): 3}.get((c["rank"], c["core"]), 0)
    (tmp_path / "ds" / "ingest.json").write_text(json.dumps(doc))
    rep = diagnose(tmp_path / "ds", rules=[Resting])
    by_place = {(f.location.rank, f.location.core): f for f in rep.findings}
    assert len(by_place) == 8 and all(f.severity == "warning" for f in by_place.values())
    for (rank, core), f in by_place.items():
        assert (f.confidence == "partial-trace") == ((rank, core) == (2, 0) or rank == 1), (rank, core)
    assert any(f.confidence == "certain" for f in by_place.values())


def test_missing_rank_is_a_gap(tmp_path):
    evs = [e for e in events() if e["rank"] != 3]
    from ingest.run import ingest

    ingest([write_trace(tmp_path / "raw", evs)], tmp_path / "ds")
    rep = diagnose(tmp_path / "ds", rules=RULES)
    assert rep.trace.ranks_missing == (3,)
    assert rep.trace.gap_lines() == ["no events from rank 3 (dump missing or rank died)"]


def _pair_rule(code: str, other: str, family=Family.HANG):
    """A rule whose single hit (on the first wait of rank 0) names ``other``'s hit as its cause."""

    class R(Rule):
        name = f"test-{code.lower()}"
        severity = Severity.ERROR
        summary = "cycle"

        def check(self, trace, ctx):
            yield self.hit(f"{self.code} waits for {other}", rows=(("w", 3),), key=("k",),
                           caused_by=((other, ("k",)),))

    R.code, R.family = code, family
    return R


def test_deadlock_cycle_gets_one_root(ds):
    rep = diagnose(ds, rules=[_pair_rule("MT101", "MT102"), _pair_rule("MT102", "MT101")])
    a, b = rep.findings
    assert a.code == "MT101" and a.is_root and a.extra["cycle"] == ["F1", "F2"]
    assert b.caused_by == ("F1",) and a.explains == ("F2",)


def test_chain_counts_transitively(ds):
    class Mid(StuckWait):  # a symptom that is itself the cause of another
        code = "MT197"

        def check(self, trace, ctx):
            for h in super().check(trace, ctx):
                yield replace(h, code="MT197", caused_by=(("MT198", h.key),))

    rep = diagnose(ds, rules=[BadRoute, StuckWait, Mid])
    root = rep.findings[0]
    assert root.code == "MT598" and len(root.explains) == 8
    assert [f.code for f in rep.findings[1:5]] == ["MT198"] * 4  # the direct symptoms before their own


def test_graph_helpers():
    from rules.analysis.graph import strongly_connected

    edges = [[1], [2], [0], [0], []]
    comps = sorted(sorted(c) for c in strongly_connected(edges))
    assert comps == [[0, 1, 2], [3], [4]]
    cut_starts, cut_targets, cycles = break_cycles(*csr(edges), [2, 1, 0, 3, 4])
    assert cycles == {2: [0, 1, 2]}
    assert cut_targets[cut_starts[2]:cut_starts[3]].tolist() == [] and cut_targets[cut_starts[0]:cut_starts[1]].tolist() == [1]
    starts, nodes, depths = explained(cut_starts, cut_targets)
    assert list(zip(nodes[starts[2]:starts[3]], depths[starts[2]:starts[3]])) == [(1, 1), (0, 2), (3, 3)]
    assert starts[4] == starts[5]
    long_chain = [[i + 1] for i in range(5000)] + [[]]  # no recursion limit
    assert len(strongly_connected(long_chain)) == 5001
