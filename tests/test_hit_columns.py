"""Hits as columns (``rules.hit_columns``): read like hits, messages worded only for what a report lists."""

from __future__ import annotations

import dataclasses
import pickle
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

import rules.mt502_count_mismatch as mt502
from analyzer.config import Config
from analyzer.engine import diagnose
from rules.base import Confidence, Hit
from rules.base import expand
from rules.hit_columns import _DEFAULTS, ColumnHit, HitColumns, as_hit

CORPUS = Path(__file__).resolve().parent / "corpus"
MANY = CORPUS / "udma_roce_quiet_missing_everywhere"  # 64 count mismatches


class Fields(NamedTuple):
    launch: int
    side: str


def _batch(**over) -> HitColumns:
    base = dict(code="MT999", fields=Fields, render=_render, extra=_extra,
                columns={"launch": np.array([3, 4, 5]), "side": np.array([0, 1, 0], np.int8),
                         "confidence": np.array([0, 1, 0], np.int8), "gap": np.array([0, 0, 1], np.int8)},
                tables={"side": ("left", "right"), "confidence": tuple(Confidence), "gap": (None, "rank 2 lost 5 events")},
                constant={"defect": "both", "caused_by": (("MT202", (1, 2)),)},
                roles=("first", "second"), rows=np.array([[10, 11], [-1, 12], [13, -1]]),
                key=np.array([[0, 0, 1], [0, 1, 2], [1, 0, 3]]))
    base.update(over)
    return HitColumns(**base)


def _render(f) -> str:
    return f"launch {f.launch} on the {f.side}"


def _extra(f) -> dict:
    return {"launch": f.launch}


def test_a_member_reads_like_the_hit_it_stands_for():
    hits = expand([Hit(code="MT998", message="before"), _batch()])
    assert [type(h) for h in hits] == [Hit, ColumnHit, ColumnHit, ColumnHit]
    second = hits[2]
    assert as_hit(second) == Hit(code="MT999", message="launch 4 on the right", rows=(("second", 12),),
                                 key=(0, 1, 2), confidence=Confidence.INFERRED, caused_by=(("MT202", (1, 2)),),
                                 extra={"launch": 4}, defect="both")
    assert second.first_row == 12 and hits[3].first_row == 13 and hits[0].first_row is None
    assert hits[3].gap == "rank 2 lost 5 events" and hits[1].gap is None
    assert all(dict(h.location) == {} and h.blocks == () for h in hits[1:])
    # Every attribute a Hit has besides code, message, rows, key and extra is a slot of the member,
    # and its constructor sets them from _DEFAULTS' order (spelled out there, for speed).
    assert set(_DEFAULTS) == set(ColumnHit.__slots__) - {"batch", "i", "code", "first_row"}
    values = (7, *(f"value of {name}" for name in _DEFAULTS))
    member = ColumnHit(_batch(), 0, values)
    assert [member.first_row, *(getattr(member, name) for name in _DEFAULTS)] == list(values)


def test_a_batch_that_does_not_add_up_is_refused():
    with pytest.raises(ValueError, match="different lengths"):
        _batch(rows=np.array([[10, 11]]))
    with pytest.raises(ValueError, match="neither fields nor hit attributes"):
        _batch(columns={"launch": np.array([3, 4, 5]), "side": np.array([0, 1, 0]), "wrong": np.array([1, 2, 3])})


def test_members_cross_a_process_boundary_with_their_batch_pickled_once():
    hits = _batch().hits()
    back = pickle.loads(pickle.dumps(hits))
    assert all(b.batch is back[0].batch for b in back)
    assert [as_hit(b) for b in back] == [as_hit(h) for h in hits]
    one = len(pickle.dumps(hits[:1]))
    assert len(pickle.dumps(hits)) < one + 2 * 200  # each further member a reference, not a copy of the batch


def test_a_report_words_only_the_messages_it_lists(monkeypatch):
    worded: list = []
    render = mt502._message

    def counted(f):
        worded.append(f)
        return render(f)

    monkeypatch.setattr(mt502, "_message", counted)
    full = diagnose(MANY, Config(select=("MT502",), max_findings=None))
    assert full.counts()["findings"] > 30
    everything = len(worded)
    worded.clear()
    capped = diagnose(MANY, Config(select=("MT502",), max_findings=2))
    listed = len(capped.findings)
    assert capped.counts()["findings"] == full.counts()["findings"] > listed
    # The listed findings, and the first member of each class for its shape; ties in the report's
    # order compare messages too, but these findings differ in place.
    assert len(worded) <= listed + len(capped.classes) < everything
    assert [f.message for f in capped.findings] == [f.message for f in full.findings if f.id in {g.id for g in capped.findings}]


@pytest.mark.parametrize("name", ["udma_roce_quiet_missing_everywhere", "udma_count_not_reset", "classic_cut_prefix",
                                  "udma_cut_after_signal", "two_off_by_one_and_invalid_expert",
                                  "udma_rma_amo_same_core", "deepep_ring_tail_before_payload",
                                  "two_missing_drain_and_stale_count", "classic_count_not_reset",
                                  "classic_cut_before_round_two_wait", "udma_half_atomic_full",
                                  "udma_half_atomic_abort_bare", "two_early_get_and_unquieted_amo",
                                  "rs_cut_inside_atomic_window", "classic_invalid_expert_9_no_params",
                                  "udma_roce_amo_unquieted_two_peers", "udma_rma_amo_sibling_full",
                                  "two_stale_count_and_over_capacity", "deepep_ll_count_raw",
                                  "deepep_ll_parity_not_cleaned", "two_generation_eq_and_undrained_atomic",
                                  "generation_eq_passed", "rs_ring_wrap_lost_atomic_mode", "classic_rank_dump_missing",
                                  "classic_rank_stops_mid_kernel", "classic_barrier_core0_off_by_one",
                                  "handshake_wrong_slot", "classic_trap_after_timeout",
                                  "two_dead_rank_and_invalid_expert", "deepep_ring_head_kept",
                                  "deepep_ring_wrong_channel",
                                  # no corpus trace deadlocks: MT104's own fixture
                                  "rules/MT104/fire_two_cycle"])
def test_a_batch_reports_what_its_members_as_hits_report(name, monkeypatch, tmp_path):
    """The engine places, links, orders and classes a batch as columns (``analyzer.draft_table``):
    the report is the one its members give when each is handed on as a plain ``Hit`` (causes,
    gaps, partial-trace confidence, cuts, every finding listed)."""
    import rules.runner as runner
    from analyzer.report.json import to_json

    trace = CORPUS / name
    if name.startswith("rules/"):  # a rule fixture (tests/fixtures/rules/CODE/NAME), made a trace
        from _rule_cases import fixture_input

        trace = fixture_input(CORPUS.parent / "fixtures" / name, tmp_path / "trace")

    def report() -> dict:
        out = to_json(diagnose(trace, Config(max_findings=10**6)))
        out.pop("trace")
        return out

    columns = report()
    check = runner.check
    monkeypatch.setattr(runner, "check", lambda *a, **k: [as_hit(h) for h in expand(check(*a, **k))])
    hits = report()
    assert {"MT502", "MT401", "MT202", "MT703", "MT601", "MT501", "MT404", "MT603", "MT302", "MT106", "MT205",
            "MT402", "MT204", "MT203", "MT407", "MT101", "MT102", "MT103", "MT105", "MT107",
            "MT108"} & {f["code"] for f in columns["findings"]}
    assert columns == hits


def test_a_batch_whose_members_name_a_place_of_their_own_is_placed_one_by_one(monkeypatch):
    """A member's ``location`` (here a peer, kept in the extra) is placed as a ``Hit``'s would be."""
    import rules.runner as runner
    from analyzer.report.json import to_json

    def report(to_hits: bool) -> dict:
        check = runner.check

        def located(*a, **k):
            found = [dataclasses.replace(h, constant={**h.constant, "location": {"peer": 7}})
                     if isinstance(h, HitColumns) else h for h in check(*a, **k)]
            return [as_hit(h) for h in expand(found)] if to_hits else found

        with monkeypatch.context() as m:
            m.setattr(runner, "check", located)
            out = to_json(diagnose(MANY, Config(max_findings=10**6)))
        out.pop("trace")
        return out

    columns = report(False)
    assert columns == report(True)
    assert all(f["extra"]["peer"] == 7 for f in columns["findings"] if f["code"] == "MT502")
