"""Issue 14 classes 7, 8 and 9: values a column cannot hold as data are located errors.

A column's null sentinel (its type's minimum) never stands for data; a ring
slot wider than its column must not wrap; offsets, byte counts and region
lengths stay inside what the analyses address (ingest.value_ranges.ADDRESS_LIMIT,
HEAP_LIMIT); a manifest's integers fit int64. Whatever ingest accepts, every
view answers `select *` over it.
"""

from __future__ import annotations

import json

import pytest

from _readers import jsonl_verdicts, ring_bytes, ring_verdict, set_record_slot, write_manifest
from _trace_files import lines_of, manifest
from conftest import run_cli
from ingest.value_ranges import ADDRESS_LIMIT
from ingest.errors import TraceError


def _ev(kind, seq=1, **fields):
    return {"rank": 0, "core": 0, "seq": seq, "ts": 100 + seq, "launch": 0, "kind": kind, **fields}


def _count(**over):
    return _ev("count", **{"peer": 1, "local_expert": 0, "value": 2, **over})


def _write(**over):
    return _ev("write", **{"region": "counts", "offset": 0, "nbytes": 4, "value": 1, **over})


JSON_CASES = {
    "ts sentinel": (_write(ts=-(2**63)), "null sentinel of int64"),
    "launch sentinel": (_write(launch=-(2**31)), "null sentinel of int32"),
    "value sentinel": (_write(value=-(2**63)), "null sentinel of int64"),
    "local_expert sentinel": (_count(local_expert=-(2**31)), "null sentinel of int32"),
    "site sentinel": (_write(site=-(2**31)), "null sentinel of int32"),
    "topk sentinel": (_ev("route", token=0, topk=-(2**15), expert=0), "null sentinel of int16"),
    "offset near 2^62": (_write(offset=2**62), "beyond what the analyses address"),
    "offset near -2^63": (_write(offset=-(2**63) + 1), "beyond what the analyses address"),
    "nbytes 2^63-1": (_write(nbytes=2**63 - 1), "beyond what the analyses address"),
    "wait offset near 2^63": (_ev("wait_begin", region="flags", offset=2**63 - 8, cmp="eq", value=1),
                              "beyond what the analyses address"),
}


@pytest.mark.parametrize("case", sorted(JSON_CASES))
def test_unholdable_value_is_a_located_error_on_both_json_paths(tmp_path, case):
    bad, needle = JSON_CASES[case]
    m = write_manifest(tmp_path, manifest())
    p = tmp_path / "events.jsonl"
    p.write_text(lines_of([_write(seq=0), {**bad, "seq": 1}]))
    got = jsonl_verdicts(p, m)
    assert got["fast_only"] is None
    for name in ("fast", "careful"):
        err = got[name]
        assert isinstance(err, TraceError) and err.where == "line 2" and needle in err.message, (name, err)


def test_largest_addressable_values_are_accepted(tmp_path):
    m = write_manifest(tmp_path, manifest())
    p = tmp_path / "events.jsonl"
    p.write_text(lines_of([_write(seq=0, offset=ADDRESS_LIMIT, nbytes=ADDRESS_LIMIT, value=-(2**63) + 1),
                           _write(seq=1, offset=-ADDRESS_LIMIT, value=2**63 - 1)]))
    got = jsonl_verdicts(p, m)
    assert got["fast_only"] is not None and got["careful"].equals(got["fast_only"])


RING_CASES = {
    # slot: (event, record slot, raw value, message)
    "route slot 2^31 wraps int32": (_ev("route", token=0, topk=0, expert=0, slot=0), "y", 2**31, "does not fit int32"),
    "delivered 2^32+5 wraps int32": (_ev("deliver", local_expert=0, src_rank=0, requested=1, delivered=1,
                                         capacity=1), "x", 2**32 + 5, "does not fit int32"),
    "dst_rank 2^16 wraps int16": (_ev("route", token=0, topk=0, expert=0, dst_rank=0), "x", 2**16,
                                  "does not fit int16"),
    "local_expert sentinel": (_count(), "u", -(2**31), "null sentinel of int32"),
    "launch sentinel": (_count(), "launch", -(2**31), "null sentinel of int32"),
    "ts sentinel": (_count(), "ts", -(2**63), "null sentinel of int64"),
    "offset near 2^62": (_write(), "x", 2**62, "beyond what the analyses address"),
    "value sentinel": (_write(), "y", -(2**63), "null sentinel of int64"),
}


@pytest.mark.parametrize("case", sorted(RING_CASES))
def test_unholdable_ring_value_is_a_located_error(tmp_path, case):
    ev, slot, raw, needle = RING_CASES[case]
    m = write_manifest(tmp_path, manifest())
    data = set_record_slot(ring_bytes([{**ev, "seq": 0}, {**ev, "seq": 1}], m), 1, slot, raw)
    p = tmp_path / "dump.mtr"
    p.write_bytes(data)
    err = ring_verdict(p, m)
    assert isinstance(err, TraceError) and err.where == "byte 128" and needle in err.message, err


MANIFEST_CASES = {
    "capacity beyond int64": (lambda d: d["params"].update(capacity=2**63), "$.params.capacity"),
    "topk beyond int64": (lambda d: d["params"].update(topk=-(2**70)), "$.params.topk"),
    "site id beyond int32": (lambda d: d["sites"].update({str(2**63): "k.cpp:1"}), "$.sites."),
    "region of 2^62 elements": (lambda d: d["regions"][0].update(length=2**62), "$.regions[0].length"),
    "regions beyond 2^44 per rank": (lambda d: d["regions"].extend(
        {"name": f"big{i}", "role": "payload", "elem_bytes": 1, "length": ADDRESS_LIMIT} for i in range(17)),
        "$.regions[18].length"),
    "reset sentinel": (lambda d: d["regions"][1].update(reset=-(2**63)), "$.regions[1].reset"),
    "surrogate site text": (lambda d: d["sites"].update({"3": "\ud83d"}), "$.sites.3"),
    "kernel name not text": (lambda d: d.update(names=[1]), "$.names[0]"),
}


@pytest.mark.parametrize("case", sorted(MANIFEST_CASES))
def test_manifest_beyond_what_views_hold_is_a_located_error(tmp_path, case):
    change, where = MANIFEST_CASES[case]
    doc = manifest()
    change(doc)
    d = tmp_path / "trace"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps(doc))
    (d / "events.jsonl").write_text(lines_of([_write(seq=0)]))
    res = run_cli("ingest", d, "-o", tmp_path / "ds")
    assert res.code == 2 and "Traceback" not in res.stderr, res.stderr
    assert f"manifest.json:{where}" in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not (tmp_path / "ds").exists()


def test_every_view_reads_the_extremes_ingest_accepts(tmp_path):
    doc = manifest()
    doc["params"] = {"tokens": 2**63 - 1, "topk": 2**63 - 1, "capacity": 2**63 - 1, "local_experts": 2**62,
                     "num_experts": 2**63 - 1, "expert_sentinel": -(2**63) + 1}
    doc["sites"] = {str(2**31 - 1): "k.cpp:1", str(-(2**31) + 1): "k.cpp:2"}
    doc["regions"][0]["length"] = ADDRESS_LIMIT
    doc["regions"][0]["elem_bytes"] = 1 << 16
    big, lim = 2**63 - 1, ADDRESS_LIMIT
    d = tmp_path / "trace"
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps(doc))
    (d / "events.jsonl").write_text(lines_of([
        _ev("kernel_begin", 0, name="k", site=2**31 - 1, epoch=big),
        _ev("put", 1, engine="mte", peer=1, region="payload", offset=lim, nbytes=lim, value=big),
        _ev("put_signal", 2, engine="mte", peer=1, region="payload", offset=-lim, nbytes=-lim, sig_region="flags",
            sig_offset=2**31 - 1, op="add", value=-big),
        _ev("get", 3, engine="mte", peer=1, region="payload", offset=lim, nbytes=lim, local_region="counts",
            local_offset=-lim),
        _ev("wait_begin", 4, region="flags", offset=lim, cmp="eq", value=big, words=2**31 - 1),
        _ev("wait_end", 5, region="flags", offset=lim, observed=-big),
        _ev("route", 6, token=2**31 - 1, topk=2**15 - 1, expert=2**31 - 1, dst_rank=2**15 - 1, slot=2**31 - 1),
        _ev("count", 7, peer=-(2**15) + 1, local_expert=-(2**31) + 1, value=big, capacity=2**31 - 1),
        _ev("deliver", 8, local_expert=2**31 - 1, src_rank=2**15 - 1, requested=2**31 - 1, delivered=-(2**31) + 1,
            capacity=2**31 - 1),
        {**_ev("write", 9, region="counts", offset=lim, nbytes=lim, value=big), "ts": big, "launch": 2**31 - 1},
    ]))
    ds = tmp_path / "ds"
    assert run_cli("ingest", d, "-o", ds).code == 0
    from ingest.dataset import Dataset
    from rules.views import connect

    con = connect(Dataset(ds))
    views = [r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()]
    tables = [r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()]
    con.close()
    assert {"events", "routes", "writes", "waits", "last_event"} <= set(views)
    for name in views + tables:
        res = run_cli("query", ds, f"select * from {name}")
        assert res.code == 0, (name, res.stderr)
