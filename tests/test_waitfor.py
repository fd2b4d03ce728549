"""The wait-for analysis: producer verdicts, root-cause chains, classes, partial traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _rule_cases import FIXTURES as FIX
from _rule_cases import fixture_input
from ingest.run import ingest
from rules import Confidence, registry
from rules.analysis.wait_for import wait_for as analyze
from rules.runner import check_one
from rules.trace import TraceView



def open_fixture(path: Path, tmp_path: Path, lost: dict | None = None) -> TraceView:
    """The trace of a rule fixture (its manifest may be a shared one) or of a directory write_trace made."""
    out = tmp_path / "ds"
    if not (path / "manifest.json").is_file():
        path = fixture_input(path, tmp_path / "input")
    ingest([path], out)
    if lost:  # stand-in for a ring wrap: the report's per-core lost counts
        rep_path = out / "ingest.json"
        rep = json.loads(rep_path.read_text())
        for c in rep["cores"]:
            c["lost"] = lost.get((c["rank"], c["core"]), 0)
        rep_path.write_text(json.dumps(rep))
    return TraceView.open(out)


def write_trace(d: Path, manifest: dict, cores: dict) -> Path:
    d.mkdir(parents=True)
    base = {"format": "moetrace-trace/1", "cores": 2, "protocol": "test"}
    (d / "manifest.json").write_text(json.dumps({**base, **manifest}))
    lines = []
    for (rank, core), evs in sorted(cores.items()):
        for seq, e in enumerate(evs):
            e = dict(e)
            lines.append(json.dumps({"rank": rank, "core": core, "seq": seq, "ts": 10 * seq,
                                     "launch": e.pop("launch", 0), **e}))
    (d / "events.jsonl").write_text("\n".join(lines) + "\n")
    return d


def hits(trace, code):
    return check_one(registry()[code], trace)


def row_of(trace, key):
    r, c, s = key
    import numpy as np

    m = (trace["rank"] == r) & (trace["core"] == c) & (trace["seq"] == s)
    return int(np.flatnonzero(m)[0])


KB = {"kind": "kernel_begin", "name": "k"}
KE = {"kind": "kernel_end", "name": "k"}
Q = {"kind": "quiet", "engine": "mte"}
PAYLOAD = {"name": "payload", "role": "payload", "elem_bytes": 4, "length": 64}


def wb(region, off, v=1, cmp="eq", **kw):
    return {"kind": "wait_begin", "region": region, "offset": off, "cmp": cmp, "value": v, **kw}


def we(region, off, obs=1):
    return {"kind": "wait_end", "region": region, "offset": off, "observed": obs, "outcome": "ok"}


def sig(peer, region, off, v=1, **kw):
    return {"kind": "signal", "engine": "mte", "peer": peer, "region": region, "offset": off,
            "op": "set", "value": v, **kw}


# ---- root causes ----------------------------------------------------------

def test_invalid_expert_combine_roots_at_the_route(tmp_path):
    t = open_fixture(FIX / "MT101/fire_invalid_expert_combine", tmp_path)
    wf = analyze(t)
    (n,) = wf.waits()
    (root,) = n.roots
    assert root[0] == "MT501"
    row = row_of(t, root[1])
    assert t.describe(row)["kind"] == "route" and t.describe(row)["expert"] == 9
    (h,) = hits(t, "MT101")
    assert ("MT501", root[1]) in h.caused_by
    assert "expert 9" in h.message and "combine_status[3]" in h.message


def test_chain_of_two_resolves_to_the_deepest_cause(tmp_path):
    t = open_fixture(FIX / "MT101/fire_chain_of_two", tmp_path)
    wf = analyze(t)
    top = next(n for n in wf.waits() if n.rank == 0)
    mid = next(n for n in wf.waits() if n.rank == 1)
    assert top.verdicts[0].status == "stuck" and mid.id in top.verdicts[0].edges
    assert mid.verdicts[0].status == "dropped-route"
    assert top.roots == mid.roots == (("MT501", (2, 0, 1)),)
    assert mid.ref in top.caused_by  # the chain stays readable: top -> mid -> route
    assert top.ref not in mid.caused_by
    causes = wf.root_causes()
    assert {n.ref for n in causes[("MT501", (2, 0, 1))]} == {top.ref, mid.ref}


def test_dead_rank_is_the_root_and_missing_dump_is_partial(tmp_path):
    t = open_fixture(FIX / "MT103/fire_dead_rank", tmp_path / "a")
    (n,) = analyze(t).waits()
    assert n.roots == (("MT103", (1, 0, 1)),) and n.verdicts[0].status == "stopped"
    t = open_fixture(FIX / "MT103/fire_missing_dump", tmp_path / "b")
    assert t.ranks_missing == [1]
    (h,) = hits(t, "MT101")
    assert h.caused_by == (("MT103", (1,)),) and h.confidence == Confidence.PARTIAL_TRACE
    assert "no events from rank 1" in h.message
    (stop,) = hits(t, "MT103")
    assert stop.key == (1,) and stop.confidence == Confidence.PARTIAL_TRACE


def test_ring_wrap_on_the_producer_lowers_confidence(tmp_path):
    t = open_fixture(FIX / "MT101/fire_chain_of_two", tmp_path, lost={(2, 0): 5})
    by_rank = {h.key[0]: h for h in hits(t, "MT101")}
    assert by_rank[1].confidence == Confidence.PARTIAL_TRACE
    assert "rank 2 lost 5 events on core 0" in by_rank[1].message
    # The wait on rank 0 only depends on rank 1, whose trace is whole.
    assert by_rank[0].confidence == Confidence.INFERRED


def test_deadlock_cycle_has_one_root(tmp_path):
    t = open_fixture(FIX / "MT104/fire_two_cycle", tmp_path)
    wf = analyze(t)
    (cyc,) = wf.cycles
    assert len(cyc.members) == 2
    for n in wf.waits():
        assert n.caused_by == (("MT104", cyc.key),)
    (h,) = hits(t, "MT104")
    assert h.key == cyc.key == (0, 0, 3)


def test_chain_with_an_outside_cause_is_no_deadlock(tmp_path):
    t = open_fixture(FIX / "MT104/quiet_chain_with_outside_cause", tmp_path)
    wf = analyze(t)
    assert wf.cycles == []
    assert all(n.roots == (("MT103", (2, 0, 1)),) for n in wf.waits())


def test_wrong_slot_and_wrong_peer_name_the_write(tmp_path):
    t = open_fixture(FIX / "MT105/fire_wrong_slot", tmp_path / "a")
    (h,) = hits(t, "MT105")
    assert t.describe(row_of(t, h.key))["kind"] == "signal" and "flag[0] of rank 0" in h.message
    (w,) = hits(t, "MT101")
    assert w.caused_by == (("MT105", h.key),)
    t = open_fixture(FIX / "MT105/fire_wrong_peer", tmp_path / "b")
    (h,) = hits(t, "MT105")
    assert "flag[1] of rank 2" in h.message


def test_generation_ahead_cites_the_eq_wait(tmp_path):
    t = open_fixture(FIX / "MT101/fire_generation_ahead", tmp_path)
    (h,) = hits(t, "MT101")
    assert h.caused_by == (("MT204", h.key),) and h.extra["current"] == 2


def test_barrier_names_the_rank_that_never_came(tmp_path):
    t = open_fixture(FIX / "MT102/fire_rank_never_reached", tmp_path)
    hs = hits(t, "MT102")
    assert len(hs) == 2
    for h in hs:
        assert h.extra["missing"] == [[2, "skipped"]] and "rank 2 core 0" in h.message


# ---- classes --------------------------------------------------------------

def test_classes_group_equal_waits(tmp_path):
    t = open_fixture(FIX / "MT101/fire_chain_of_two", tmp_path)
    classes = analyze(t).classes()
    assert list(classes) == [(3, "flag", "eq", 1)]
    assert len(classes[(3, "flag", "eq", 1)]) == 2
    assert all(h.extra["class"] == [3, "flag", "eq", 1] for h in hits(t, "MT101"))


# ---- producers from routes, counts and history ----------------------------

CLASSIC = {"ranks": 2, "params": {"tokens": 2, "topk": 2, "local_experts": 2, "num_experts": 4},
           "regions": [PAYLOAD,
                       {"name": "count", "role": "counter", "elem_bytes": 4, "length": 32, "reset": -1,
                        "slot_words": 8, "index": "segment"},
                       {"name": "status", "role": "flag", "elem_bytes": 4, "length": 32, "reset": 0,
                        "slot_words": 8, "index": "token_topk"}]}


def test_segment_count_wait_blames_the_sources_invalid_route(tmp_path):
    # Rank 1 waits on count[le=1, src=0] = slot 1*P+0 = 2; rank 0 finished with a route to
    # rank 1 whose expert is out of range.
    d = write_trace(tmp_path / "t", CLASSIC, {
        (0, 0): [KB, {"kind": "route", "token": 0, "topk": 0, "expert": 7, "dst_rank": 1}, KE],
        (1, 0): [KB, wb("count", 16, words=8)],
    })
    t = open_fixture(d, tmp_path)
    (n,) = analyze(t).waits()
    assert n.slot == 2 and n.verdicts[0].rank == 0 and n.verdicts[0].status == "dropped-route"
    assert n.roots == (("MT501", (0, 0, 1)),)


def test_token_topk_wait_blames_the_clamped_deliver(tmp_path):
    # Token 1 topk 0 of rank 0 goes to expert 3 (rank 1); rank 1 took 0 of 1 rows from rank 0.
    d = write_trace(tmp_path / "t", CLASSIC, {
        (0, 0): [KB, {"kind": "route", "token": 1, "topk": 0, "expert": 3, "dst_rank": 1},
                 wb("status", 16, words=8)],
        (1, 0): [KB, {"kind": "deliver", "local_expert": 1, "src_rank": 0, "requested": 1,
                      "delivered": 0, "capacity": 0}, KE],
    })
    t = open_fixture(d, tmp_path)
    (h,) = hits(t, "MT101")
    assert h.caused_by == (("MT301", (1, 0, 1)),)
    assert "rank 1 (owns expert 3" in h.message


def test_history_names_the_producer_of_an_unindexed_slot(tmp_path):
    man = {"ranks": 2, "params": {}, "regions": [
        PAYLOAD, {"name": "flag", "role": "flag", "elem_bytes": 4, "length": 2, "reset": 0}]}
    d = write_trace(tmp_path / "t", man, {
        (0, 0): [KB, wb("flag", 0), we("flag", 0), {"kind": "write", "region": "flag", "offset": 0,
                                                     "nbytes": 4, "value": 0}, KE,
                 dict(KB, launch=1), dict(wb("flag", 0), launch=1)],
        (1, 1): [KB, sig(0, "flag", 0), KE, dict(KB, launch=1), dict(Q, launch=1)],
    })
    t = open_fixture(d, tmp_path)
    (n,) = analyze(t).waits()
    (v,) = n.verdicts
    assert (v.rank, v.via, v.status) == (1, "history", "stopped")
    assert n.roots == (("MT103", (1, 1, 4)),)


def test_analysis_is_cached_per_trace(tmp_path):
    t = open_fixture(FIX / "MT101/fire_chain_of_two", tmp_path)
    assert analyze(t) is analyze(t)


@pytest.mark.parametrize("fixture", ["MT101/quiet_wait_ended", "MT101/quiet_completed_trace",
                                     "MT102/quiet_barrier_completed", "MT103/quiet_completed"])
def test_clean_traces_have_no_stuck_nodes(fixture, tmp_path):
    wf = analyze(open_fixture(FIX / fixture, tmp_path))
    assert wf.nodes == [] and wf.stops == {}
