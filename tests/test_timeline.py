"""moetrace timeline: the Chrome JSON file read back (processes, tracks, slices, stuck marks, flows)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests._trace_files import Core, manifest, write_trace

OFFSET = 1_000_000  # rank 1's clock runs this far ahead of rank 0's


def _skewed_trace(d: Path) -> Path:
    """Rank 1 signals flags[0] on rank 0 twice (1, then 2); rank 0 waits for eq 2, then for a word nobody writes.

    Both ranks pass a cross-rank barrier first.  Rank 1's ts are far ahead
    (its clock), and its second signal's ts is before rank 0's wait_end on
    no clock at all: only the data (observed 2) names the releasing write.
    """
    a, b = Core(0, 0), Core(1, 0)
    b.ts += OFFSET
    ev = [a("kernel_begin", name="combine"), a("barrier_begin", scope="all"), a("barrier_end", scope="all"),
          a("wait_begin", region="flags", offset=0, cmp="eq", value=2),
          a("wait_end", region="flags", offset=0, observed=2),
          a("wait_begin", region="flags", offset=8, cmp="eq", value=1),
          b("kernel_begin", name="combine"), b("barrier_begin", scope="all"), b("barrier_end", scope="all"),
          b("signal", engine="mte", peer=0, region="flags", offset=0, op="set", value=1),
          b("signal", engine="mte", peer=0, region="flags", offset=0, op="set", value=2),
          b("quiet", engine="mte"), b("kernel_end", name="combine")]
    return write_trace(d, ev, doc=manifest(ranks=2, cores=1)).parent


def _timeline(cli, tmp_path, *args) -> dict:
    out = tmp_path / "tl.json"
    r = cli("timeline", *args, "-o", out)
    assert r.code == 0, r.stderr
    return json.loads(out.read_text())


def _slices(doc):
    return [e for e in doc["traceEvents"] if e["ph"] == "X"]


def _check_flows(doc) -> dict:
    """Every flow has one start and one finish, each exactly on a drawn slice's (pid, tid, ts, cat)."""
    anchors = {(e["pid"], e["tid"], e["ts"], e["cat"]) for e in _slices(doc)}
    ends: dict[int, dict] = {}
    for e in doc["traceEvents"]:
        if e["ph"] in ("s", "f"):
            assert (e["pid"], e["tid"], e["ts"], e["cat"]) in anchors, e
            assert e["ph"] not in ends.setdefault(e["id"], {}), f"flow {e['id']} has two {e['ph']}"
            ends[e["id"]][e["ph"]] = e
    for fid, pair in ends.items():
        assert set(pair) == {"s", "f"}, f"flow {fid} lacks an end"
        s, f = pair["s"], pair["f"]
        assert s["name"] == f["name"] and s["cat"] == f["cat"]
        assert (s["ts"] <= f["ts"]) or s["args"]["approximate"], "a backward arrow must say it is approximate"
    return ends


def test_skewed_clocks_flow_by_data_and_barrier_alignment(cli, tmp_path):
    doc = _timeline(cli, tmp_path, _skewed_trace(tmp_path / "t"))
    meta = doc["otherData"]
    assert meta["clock"]["aligned_on_launch"] == 0
    assert {v["method"] for v in meta["clock"]["ranks"].values()} == {"barrier"}
    slices = _slices(doc)
    bar_end = {e["pid"]: e["ts"] for e in slices if e["args"]["kind"] == "barrier_end"}
    assert bar_end[0] == bar_end[1], "the ranks' barrier exits line up"
    # Processes are ranks, threads are cores, named.
    names = {(e["name"], e["pid"], e.get("tid")): e["args"] for e in doc["traceEvents"] if e["ph"] == "M"}
    assert names[("process_name", 0, None)]["name"] == "rank 0"
    assert names[("thread_name", 1, 0)]["name"] == "core 0"
    ends = _check_flows(doc)
    released = [p for p in ends.values() if p["s"]["name"].startswith("released")]
    assert len(released) == 1
    src, dst = released[0]["s"], released[0]["f"]
    by_place = {(e["pid"], e["tid"], e["ts"]): e for e in slices}
    write, wait_end = by_place[(src["pid"], src["tid"], src["ts"])], by_place[(dst["pid"], dst["tid"], dst["ts"])]
    assert (write["args"]["kind"], write["args"]["value"], write["args"]["seq"]) == ("signal", 2, 5)
    assert (wait_end["args"]["kind"], wait_end["args"]["observed"]) == ("wait_end", 2)
    assert src["args"]["matched_by"] == "value"


def test_stuck_wait_runs_to_its_ranks_end_and_is_marked(cli, tmp_path):
    doc = _timeline(cli, tmp_path, _skewed_trace(tmp_path / "t"), "--no-causes")
    slices = _slices(doc)
    waits = [e for e in slices if e["args"]["kind"] == "wait_begin"]
    assert [w["args"]["stuck"] for w in waits] == [False, True]
    stuck = waits[1]
    assert stuck["name"].startswith("STUCK wait flags[8]") and stuck["cname"] == "terrible"
    rank_end = max(e["ts"] + e["dur"] for e in slices if e["pid"] == 0)
    assert stuck["ts"] + stuck["dur"] == pytest.approx(rank_end)
    kernel = next(e for e in slices if e["pid"] == 0 and e["args"]["kind"] == "kernel_begin")
    assert kernel["name"].startswith("NEVER ENDED") and kernel["args"]["stuck"]
    done = next(e for e in slices if e["pid"] == 1 and e["args"]["kind"] == "kernel_begin")
    assert not done["args"]["stuck"] and done["args"]["end"]["kind"] == "kernel_end"
    assert doc["otherData"]["stuck"] == 2


def _nested(slices) -> None:
    """Slices on one (pid, tid) nest: each starts inside or after the ones still open."""
    by_track: dict = {}
    for e in slices:
        by_track.setdefault((e["pid"], e["tid"]), []).append(e)
    for evs in by_track.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        open_: list[float] = []
        for e in evs:
            while open_ and open_[-1] <= e["ts"] and not (open_[-1] == e["ts"] and e["dur"] == 0):
                open_.pop()
            end = e["ts"] + e["dur"]
            assert not open_ or end <= open_[-1] + 1e-9, f"{e['name']} overlaps its parent"
            open_.append(end)


@pytest.fixture(scope="module")
def demo_hang(tmp_path_factory):
    from kernels.api import DATASET_DIR, simulate
    from kernels.base import Params

    out = tmp_path_factory.mktemp("demo")
    simulate("classic", Params(ranks=4, cores=2, tokens=8, topk=2, hidden=4, local_experts=2),
             faults=["invalid-expert"], seed=1, out=out, at={"rank": 1, "round": 0, "token": 5, "topk": 1})
    return out / DATASET_DIR


def test_simulated_hang_root_cause_arrow_and_cuts(cli, tmp_path, demo_hang):
    doc = _timeline(cli, tmp_path, demo_hang)
    slices = _slices(doc)
    assert {e["pid"] for e in slices} == {0, 1, 2, 3}
    assert {(e["pid"], e["tid"]) for e in slices} == {(r, c) for r in range(4) for c in range(2)}
    _nested(slices)
    ends = _check_flows(doc)
    waits_ended = sum(1 for e in slices if e["args"]["kind"] == "wait_end")
    assert doc["otherData"]["flows"]["released"]["drawn"] == waits_ended > 0
    cause = [p for p in ends.values() if p["s"]["name"].startswith("explains")]
    assert cause and all(p["s"]["args"]["root"].endswith("MT501") for p in cause)
    root = next(e for e in slices if e["name"].startswith("ROOT CAUSE MT501"))
    assert root["args"]["kind"] == "route" and root["args"]["expert"] == 8
    stuck = [e for e in slices if e["name"].startswith("STUCK")]
    assert stuck and all(e["pid"] == 1 for e in stuck)
    # Cut to two ranks: only their processes, and flows still bind (writers elsewhere are named instead).
    cut = _timeline(cli, tmp_path, demo_hang, "--ranks", "0-1", "--launch", "0")
    assert {e["pid"] for e in _slices(cut)} == {0, 1}
    _check_flows(cut)
    assert cut["otherData"]["ranks"] == [0, 1]


def test_bad_cuts_are_usage_errors(cli, tmp_path):
    trace = _skewed_trace(tmp_path / "t")
    for args, text in ((("--ranks", "0-5"), "rank 5 is not in the trace"), (("--ranks", "x"), "'x'"),
                       (("--launch", "3"), "no events to draw (launch 3)")):
        r = cli("timeline", trace, "-o", tmp_path / "bad.json", *args)
        assert r.code == 2 and text in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert not (tmp_path / "bad.json").exists()
