"""moetrace query: formats, exact JSON values, errors, the dataset left untouched."""

from __future__ import annotations

import csv
import hashlib
import io
import json

import pytest

from conftest import ROOT, run_cli


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("q") / "ds"
    res = run_cli("ingest", ROOT / "examples" / "classic-2rank", "-o", out)
    assert res.code == 0, res.stderr
    return out


def _digest(root):
    return {str(p.relative_to(root)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(root.rglob("*")) if p.is_file()}


SQL = "select rank, core, count(*) as n, max(seq) as last, max(ts) * 1000003 as big from events group by all order by all"


def test_json_is_a_list_of_objects_with_exact_ints(ds):
    res = run_cli("query", ds, SQL + " limit 2", "--format", "json")
    assert res.code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert rows == [{"rank": 0, "core": 0, "n": 61, "last": 61, "big": rows[0]["big"]},
                    {"rank": 0, "core": 1, "n": 49, "last": 49, "big": rows[1]["big"]}]
    assert all(type(r["big"]) is int for r in rows)


def test_json_keeps_int64_extremes(ds):
    res = run_cli("query", ds, "select 9223372036854775807 as hi, -9223372036854775808 as lo, 0.5 as f, "
                                "NULL as n, 'x' as s, true as b", "--format", "json")
    assert json.loads(res.stdout) == [{"hi": 2**63 - 1, "lo": -(2**63), "f": 0.5, "n": None, "s": "x", "b": True}]


def test_csv(ds):
    res = run_cli("query", ds, SQL, "--format", "csv")
    assert res.code == 0
    rows = list(csv.reader(io.StringIO(res.stdout)))
    assert rows[0] == ["rank", "core", "n", "last", "big"]
    assert len(rows) == 5 and rows[1][:4] == ["0", "0", "61", "61"]


def test_table_is_default(ds):
    res = run_cli("query", ds, "select kind, count(*) as n from events where kind = 'wait_begin' group by 1")
    assert res.code == 0
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["kind", "n"]
    assert lines[2].split() == ["wait_begin", "24"]
    assert lines[-1] == "(1 row)"


def test_views_are_in_place(ds):
    for view in ("events", "waits", "writes", "routes", "last_event"):
        res = run_cli("query", ds, f"select count(*) as n from {view}", "--format", "json")
        assert res.code == 0, (view, res.stderr)
        assert json.loads(res.stdout)[0]["n"] > 0


@pytest.mark.parametrize("sql, needle", [
    ("select * from no_such_view", "no_such_view"),
    ("selec 1", "syntax error"),
    ("select 1/'a'", "query failed"),
])
def test_sql_errors_are_one_line_exit_2(ds, sql, needle):
    res = run_cli("query", ds, sql)
    assert res.code == 2
    err = res.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert err.startswith("moetrace: error: query failed:") and needle in err
    assert res.stdout == ""


def test_bad_format_and_not_a_dataset(ds, tmp_path):
    assert run_cli("query", ds, "select 1", "--format", "xml").code == 2
    res = run_cli("query", tmp_path, "select 1")
    assert res.code == 2 and "not a moetrace dataset" in res.stderr


def test_dataset_is_never_modified(ds):
    before = _digest(ds)
    for sql in ("select * from events", "create table t as select * from events",
                "create view v as select 1", "copy (select 1) to '/dev/null'", "select * from last_event"):
        run_cli("query", ds, sql, "--format", "json")
    assert _digest(ds) == before
    assert sorted(p.name for p in ds.iterdir()) == ["events", "ingest.json", "manifest.json"]
