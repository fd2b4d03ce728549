"""Root-cause chains of hangs: the fixtures pinning each link, and the simulator cases they came from."""

from __future__ import annotations

import sys
from pathlib import Path

from test_waitfor import FIX, hits, open_fixture

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import _accuracy_lib as lib  # noqa: E402


def by_key(hs):
    return {tuple(h.key): h for h in hs}


def test_wrong_peer_of_a_core_serving_two_peers(tmp_path):
    # Two owners get count[3] twice and two never: the mode of the copies (2) is no guide.
    t = open_fixture(FIX / "MT105/fire_wrong_peer_core_serves_two", tmp_path)
    assert set(by_key(hits(t, "MT105"))) == {(3, 0, 1), (3, 0, 3)}
    waits = by_key(hits(t, "MT101"))
    for k in ((0, 0, 1), (2, 0, 1)):
        assert set(waits[k].caused_by) == {("MT105", (3, 0, 1)), ("MT105", (3, 0, 3))}


def test_producer_stuck_after_an_old_value_is_followed(tmp_path):
    t = open_fixture(FIX / "MT101/fire_producer_stuck_after_old_value", tmp_path)
    waits = by_key(hits(t, "MT101"))
    assert waits[(1, 0, 1)].caused_by == (("MT101", (0, 0, 2)),)
    assert "stale or wrong value" not in waits[(1, 0, 1)].message


def test_generation_past_the_target_in_a_later_launch(tmp_path):
    t = open_fixture(FIX / "MT101/fire_generation_past_in_later_launch", tmp_path)
    waits = by_key(hits(t, "MT101"))
    eq = waits[(1, 0, 1)]
    assert eq.caused_by == (("MT204", (1, 0, 1)),) and eq.extra["current"] == 2
    # The next launch's waiter expects rank 1, stuck in launch 0: an edge, not a stopped rank.
    assert ("MT101", (1, 0, 1)) in waits[(0, 0, 5)].caused_by
    assert hits(t, "MT103") == []


def _diag(case, tmp_path):
    res = lib.run_case(case, tmp_path)
    return res, {f.id: f for f in res.reported}


def test_count_mismatch_cites_the_unreset_counter(tmp_path):
    res, ids = _diag(lib.Case("classic", "count-not-reset", 0, "uniform"), tmp_path)
    assert all(sf.found for sf in res.faults)
    mt502 = [f for f in res.reported if f.code == "MT502"]
    assert mt502 and all(any(ids[c].code == "MT202" for c in f.caused_by) for f in mt502)
    assert [f.code for f in res.roots] == ["MT202"]


def test_shifted_combine_slots_cite_the_invalid_route(tmp_path):
    res, ids = _diag(lib.Case("classic", "invalid-expert-neg", 2, "skewed"), tmp_path)
    assert [f.code for f in res.roots] == ["MT501"]
    mt105 = [f for f in res.reported if f.code == "MT105"]
    assert mt105 and all(ids[c].code == "MT501" for f in mt105 for c in f.caused_by)


def test_a_producer_that_raised_the_word_then_died_is_the_root(tmp_path):
    # Rank 1 raises rank 0's unindexed gen word step by step (1, 2) in launch 0, then its trace
    # ends mid-kernel; rank 0 waits for 3. The producer is rank 1 from this launch's own writes
    # (no earlier launch to learn it from), and it is dead, not a writer of a wrong value.
    from test_waitfor import KB, Q, analyze, sig, wb, we, write_trace

    man = {"ranks": 2, "cores": 1, "regions": [
        {"name": "gen", "role": "flag", "elem_bytes": 8, "length": 1, "monotonic": True}]}
    d = write_trace(tmp_path / "t", man, {
        (0, 0): [KB, wb("gen", 0, 1, "ge"), we("gen", 0, 1), wb("gen", 0, 2, "ge"), we("gen", 0, 2),
                 wb("gen", 0, 3, "ge")],
        (1, 0): [KB, sig(0, "gen", 0, 1), Q, sig(0, "gen", 0, 2), Q],
    })
    t = open_fixture(d, tmp_path)
    (n,) = analyze(t).waits()
    (v,) = n.verdicts
    assert (v.rank, v.status) == (1, "stopped")
    assert n.roots == (("MT103", (1, 0, 4)),)
    (h,) = hits(t, "MT101")
    assert h.caused_by == (("MT103", (1, 0, 4)),)


def test_current_value_follows_happens_before_not_rows():
    """Rank 0 waited on its flag[1], saw rank 1's 1, then reset it to 0: the word holds 0, though
    rank 1's write comes later in row order (tests/corpus/handshake_wrong_slot, launch 1's waits)."""
    from analyzer.engine import diagnose

    corpus = Path(__file__).resolve().parent / "corpus" / "handshake_wrong_slot"
    stuck = {(f.location.rank, f.extra["slot"]): f.extra["current"]
             for f in diagnose(corpus).findings if f.code == "MT101"}
    assert stuck == {(0, 1): 0, (1, 0): 0}, stuck
