"""The SQL views on a small hand-written trace."""

from __future__ import annotations

import pytest

from ingest.dataset import Dataset
from ingest.run import ingest
from rules.views import connect, view_files
from _trace_files import Core, write_trace


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("views")
    a, b, c = Core(0, 0), Core(0, 1), Core(1, 0)
    events = [
        a("kernel_begin", name="k"),
        a("wait_begin", region="flags", offset=8, cmp="eq", value=1, words=8, site=1),   # seq 2: ends ok
        a("wait_end", region="flags", offset=8, observed=1, outcome="ok"),             # seq 3
        a("wait_begin", region="counts", offset=2, cmp="ge", value=4),                  # seq 4: no end
        b("wait_begin", region="flags", offset=0, cmp="ne", value=0),                   # seq 1: timeout
        b("wait_end", region="flags", offset=0, observed=0, outcome="timeout"),
        b("wait_begin", region="flags", offset=16, cmp="eq", value=1),                  # seq 3: superseded
        b("wait_begin", region="flags", offset=24, cmp="eq", value=1),                  # seq 4: ends
        b("wait_end", region="flags", offset=24, observed=1),                           # no outcome: ok
        b("kernel_end", name="k"),
        c("put", engine="mte", peer=0, region="payload", offset=0, nbytes=64),
        c("put_signal", engine="udma", peer=0, region="payload", offset=64, nbytes=8, sig_region="flags",
          sig_offset=8, op="set", value=1),
        c("signal", engine="mte", peer=0, region="counts", offset=2, op="add", value=3, site=2),
        c("amo", engine="roce", peer=0, region="counts", offset=3, op="set", value=9),
        c("write", region="flags", offset=0, nbytes=32, value=0),
        c("get", engine="sdma", peer=0, region="payload", offset=0, nbytes=6, local_region="payload",
          local_offset=128),
        c("route", token=0, topk=1, expert=3, dst_rank=1, slot=0),
        c("route", token=1, topk=0, expert=4),
        c("route", token=1, topk=1, expert=-1),
        c("pipe_sync", op="set_flag", event="mte3_s"),
    ]
    write_trace(tmp / "trace", events)
    ingest([tmp / "trace"], tmp / "ds")
    con = connect(Dataset(tmp / "ds"))
    yield con
    con.close()


def q(con, sql):
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r)) for r in cur.fetchall()]


def test_view_files_order_puts_dependencies_first():
    names = [p.stem for p in view_files()]
    assert names.index("events") < names.index("last_event")


def test_events_decode_names(con):
    rows = q(con, "select kind, engine, op, region, sig_region, local_region, site_text, event from events "
                  "where rank = 1 order by seq")
    kinds = [r["kind"] for r in rows]
    assert kinds[:6] == ["put", "put_signal", "signal", "amo", "write", "get"]
    assert rows[1]["engine"] == "udma" and rows[1]["sig_region"] == "flags" and rows[1]["op"] == "set"
    assert rows[2]["site_text"] == "k.cpp:20" and rows[2]["op"] == "add"
    assert rows[5]["local_region"] == "payload"
    assert rows[-1]["op"] == "set_flag" and rows[-1]["event"] == "mte3_s"


def test_waits_pairing_and_stuck(con):
    rows = q(con, "select * from waits order by rank, core, begin_seq")
    by = {(r["core"], r["begin_seq"]): r for r in rows}
    assert len(rows) == 5
    ok = by[(0, 2)]
    assert (ok["stuck"], ok["end_seq"], ok["observed"], ok["outcome"], ok["words"], ok["target"]) == \
        (False, 3, 1, "ok", 8, 1)
    assert ok["duration"] == 10 and ok["site_text"] == "k.cpp:10" and ok["region"] == "flags"
    stuck = by[(0, 4)]
    assert stuck["stuck"] and stuck["end_seq"] is None and stuck["outcome"] is None and stuck["words"] == 1
    assert stuck["cmp"] == "ge" and stuck["region"] == "counts" and stuck["offset"] == 2
    assert by[(1, 1)]["outcome"] == "timeout" and not by[(1, 1)]["stuck"]
    assert by[(1, 3)]["stuck"]  # another wait_begin came before any wait_end
    assert by[(1, 4)]["outcome"] == "ok" and by[(1, 4)]["end_seq"] == 5
    assert not any(r["end_mismatch"] for r in rows)


def test_writes_owner_and_parts(con):
    rows = q(con, "select kind, part, owner, region, \"offset\", nbytes, words, op, value from writes "
                  "order by seq, part")
    got = {(r["kind"], r["part"]): r for r in rows}
    assert len(rows) == 7
    assert got[("put", "data")]["owner"] == 0 and got[("put", "data")]["words"] == 32
    sig = got[("put_signal", "signal")]
    assert (sig["owner"], sig["region"], sig["offset"], sig["nbytes"], sig["words"], sig["op"], sig["value"]) == \
        (0, "flags", 8, 4, 1, "set", 1)
    assert got[("put_signal", "data")]["region"] == "payload" and got[("put_signal", "data")]["words"] == 4
    assert got[("signal", "data")]["owner"] == 0 and got[("amo", "data")]["op"] == "set"
    assert got[("write", "data")]["owner"] == 1 and got[("write", "data")]["words"] == 8
    get = got[("get", "data")]
    assert (get["owner"], get["region"], get["offset"], get["words"]) == (1, "payload", 128, 3)


def test_routes_validity(con):
    rows = q(con, "select token, topk, expert, valid, expert_rank, local_expert from routes order by seq")
    assert [(r["expert"], r["valid"], r["expert_rank"], r["local_expert"]) for r in rows] == \
        [(3, True, 1, 1), (4, False, None, None), (-1, False, None, None)]


def test_last_event_per_core(con):
    rows = q(con, "select rank, core, seq, kind, events from last_event order by rank, core")
    assert [(r["rank"], r["core"], r["seq"], r["kind"], r["events"]) for r in rows] == [
        (0, 0, 4, "wait_begin", 4), (0, 1, 6, "kernel_end", 6), (1, 0, 10, "pipe_sync", 10)]


def test_empty_dataset_has_views(tmp_path):
    write_trace(tmp_path / "t", [])
    ingest([tmp_path / "t"], tmp_path / "ds")
    c = connect(Dataset(tmp_path / "ds"))
    assert c.execute("select count(*) from events").fetchone() == (0,)
    assert c.execute("select count(*) from waits").fetchone() == (0,)
