"""Rank-valued fields a kernel computed are evidence, not bad input (issue 9, defect 1).

A route's dst_rank, a deliver's src_rank and a count's peer outside [0, ranks)
are what a buggy kernel did: every reader stores them (they must only fit
their column type). The envelope's rank and the peer of a one-sided operation
address memory, so they must be ranks of the manifest.
"""

from __future__ import annotations

import pytest

from _readers import jsonl_verdicts, ring_bytes, ring_verdict, write_manifest
from _trace_files import lines_of, manifest
from ingest.errors import TraceError


def _ev(kind, seq, **fields):
    return {"rank": 0, "core": 0, "seq": seq, "ts": 100 + seq, "launch": 0, "kind": kind, **fields}


COMPUTED = [
    _ev("route", 1, token=0, topk=0, expert=9, dst_rank=4, slot=0),
    _ev("route", 2, token=0, topk=1, expert=-3, dst_rank=-1),
    _ev("count", 3, peer=7, local_expert=0, value=2),
    _ev("deliver", 4, local_expert=0, src_rank=32767, requested=2, delivered=2, capacity=4),
]


def _readers(tmp_path, events):
    m = write_manifest(tmp_path, manifest(ranks=4))
    p = tmp_path / "events.jsonl"
    p.write_text(lines_of(events))
    got = jsonl_verdicts(p, m)
    if all(e["rank"] < m.ranks for e in events):  # a ring's rank is its header's: 4 cannot be encoded
        ring = tmp_path / "events.mtr"
        ring.write_bytes(ring_bytes(events, m))
        got["ring"] = ring_verdict(ring, m)
    return got


def test_computed_ranks_are_stored_by_every_reader(tmp_path):
    got = _readers(tmp_path, COMPUTED)
    assert got["fast_only"] is not None
    for name in ("fast_only", "fast", "careful", "ring"):
        t = got[name]
        assert not isinstance(t, TraceError), (name, t)
        assert t.column("dst_rank").to_pylist()[:2] == [4, -1], name
        assert t.column("peer").to_pylist()[2] == 7, name
        assert t.column("src_rank").to_pylist()[3] == 32767, name


@pytest.mark.parametrize("bad, needle", [
    (_ev("put", 5, engine="mte", peer=4, region="payload", offset=0, nbytes=2), "'peer' = 4 is not a rank"),
    (_ev("quiet", 5, engine="mte", peer=-1), "'peer' = -1 is not a rank"),
    (_ev("get", 5, engine="mte", peer=9, region="payload", offset=0, nbytes=2, local_region="payload",
         local_offset=0), "'peer' = 9 is not a rank"),
    ({**_ev("route", 5, token=0, topk=0, expert=1), "rank": 4}, "'rank' = 4 is not a rank"),
])
def test_addressing_ranks_are_checked_by_every_reader(tmp_path, bad, needle):
    got = _readers(tmp_path, COMPUTED + [bad])
    assert got["fast_only"] is None
    for name in ("fast", "careful"):
        assert isinstance(got[name], TraceError) and got[name].where == "line 5", (name, got[name])
        assert needle in str(got[name]), got[name]
    if "ring" in got:
        assert isinstance(got["ring"], TraceError) and needle in str(got["ring"]), got["ring"]


def test_computed_rank_must_fit_its_column(tmp_path):
    bad = _ev("route", 5, token=0, topk=0, expert=1, dst_rank=1 << 15)
    got = _readers(tmp_path, COMPUTED + [bad])
    for name in ("fast", "careful", "ring"):
        assert isinstance(got[name], TraceError), (name, got[name])
        assert "dst_rank" in str(got[name]) and "does not fit int16" in str(got[name]), got[name]


def test_diagnose_reports_a_route_to_rank_4_of_4(tmp_path):
    import json

    from conftest import run_cli

    doc = manifest(ranks=4)
    doc["params"] = {"tokens": 2, "topk": 2, "local_experts": 2, "num_experts": 8, "capacity": 4}
    d = tmp_path / "trace"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps(doc))
    (d / "events.jsonl").write_text(lines_of([
        _ev("kernel_begin", 0, name="k"), *COMPUTED, _ev("kernel_end", 5, name="k")]))
    ds = tmp_path / "ds"
    assert run_cli("ingest", d, "-o", ds).code == 0
    for view in ("events", "routes", "writes", "waits", "last_event"):
        res = run_cli("query", ds, f"select * from {view}")
        assert res.code == 0, (view, res.stderr)
    for fmt in ("text", "json", "sarif", "junit"):
        res = run_cli("diagnose", ds, "-f", fmt)
        assert res.code == 1 and "Traceback" not in res.stderr, (fmt, res.stderr)
    res = run_cli("diagnose", ds, "-f", "json")
    hits = json.loads(res.stdout)
    assert "MT501" in json.dumps(hits) and "rank 4" in json.dumps(hits)
