"""moetrace query --format csv|json|parquet: DuckDB's own writers, to -o or stdout, same values as before."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import pyarrow.parquet as pq
import pytest

from conftest import ROOT, run_cli

ORDERED = "select * from events order by rank, core, seq"


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("qo") / "ds"
    res = run_cli("ingest", ROOT / "examples" / "classic-2rank", "-o", out)
    assert res.code == 0, res.stderr
    return out


def _rows(ds, sql):
    from analyzer.commands.query import render
    from ingest.dataset import Dataset
    from rules.views import connect

    con = connect(Dataset(ds))
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    rows = cur.fetchall()
    con.close()
    return names, rows, render


def test_csv_is_byte_for_byte_the_python_writers(ds, tmp_path):
    names, rows, render = _rows(ds, ORDERED)
    out = tmp_path / "e.csv"
    assert run_cli("query", ds, ORDERED, "--format", "csv", "-o", out).code == 0
    assert out.read_text() == render(names, rows, "csv")
    assert run_cli("query", ds, ORDERED, "--format", "csv").stdout == out.read_text()


def test_json_has_the_same_values(ds, tmp_path):
    names, rows, render = _rows(ds, ORDERED)
    res = run_cli("query", ds, ORDERED, "--format", "json")
    assert res.code == 0, res.stderr
    assert json.loads(res.stdout) == json.loads(render(names, rows, "json"))


def test_parquet_to_a_file(ds, tmp_path):
    names, rows, _ = _rows(ds, ORDERED)
    out = tmp_path / "e.parquet"
    res = run_cli("query", ds, ORDERED, "--format", "parquet", "-o", out)
    assert res.code == 0 and res.stdout == "", res.stderr
    table = pq.read_table(out)
    assert table.column_names == names and table.num_rows == len(rows)
    assert [tuple(r.values()) for r in table.slice(0, 3).to_pylist()] == rows[:3]
    assert not list(tmp_path.glob(".*tmp*"))


def test_parquet_needs_a_binary_stdout(ds):
    res = run_cli("query", ds, "select 1 as x", "--format", "parquet")  # in-process stdout is text only
    assert res.code == 2 and "give -o FILE" in res.stderr


def test_parquet_and_csv_on_a_real_stdout(ds, tmp_path):
    cmd = [sys.executable, "-m", "analyzer.cli", "query", str(ds), "select rank, count(*) as n from events "
           "group by 1 order by 1", "--format"]
    piped = subprocess.run(cmd + ["parquet"], capture_output=True, cwd=ROOT)
    assert piped.returncode == 0, piped.stderr
    assert pq.read_table(io.BytesIO(piped.stdout)).to_pylist() == [{"rank": 0, "n": 110}, {"rank": 1, "n": 134}]
    # A regular file as stdout, appended to: what was there stays.
    target = tmp_path / "log.csv"
    target.write_text("before\n")
    with open(target, "a") as fh:
        assert subprocess.run(cmd + ["csv"], stdout=fh, cwd=ROOT).returncode == 0
    assert target.read_text() == "before\nrank,n\n0,110\n1,134\n"


def test_statements_before_the_select_and_trailing_comments(ds):
    sql = "create table t as select 41 as a; select a + 1 as b from t; -- done"
    res = run_cli("query", ds, sql, "--format", "csv", "--unsafe")
    assert res.code == 0, res.stderr
    assert list(csv.reader(io.StringIO(res.stdout))) == [["b"], ["42"]]
    # Sandboxed (the default), a statement before the streamed SELECT is refused, not run.
    res = run_cli("query", ds, sql, "--format", "csv")
    assert res.code == 2 and "exactly one SQL statement" in res.stderr and not res.stdout


def test_sandboxed_stream_writes_only_its_output(ds, tmp_path):
    """The streamed COPY may write -o, and nothing else: a SELECT reaching for other files fails."""
    out = tmp_path / "out.csv"
    res = run_cli("query", ds, "select count(*) as n from events", "--format", "csv", "-o", out)
    assert res.code == 0, res.stderr
    assert out.read_text().splitlines()[0] == "n"
    res = run_cli("query", ds, "select * from read_csv('/etc/passwd')", "--format", "csv", "-o", out)
    assert res.code == 2 and "query failed" in res.stderr


def test_errors_stay_one_line_and_write_nothing(ds, tmp_path):
    out = tmp_path / "x.csv"
    res = run_cli("query", ds, "select * from no_such_view", "--format", "csv", "-o", out)
    assert res.code == 2 and res.stderr.startswith("moetrace: error: query failed:") and "no_such_view" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not out.exists()
    res = run_cli("query", ds, "select 1 as x", "--format", "csv", "-o", tmp_path / "no" / "dir" / "x.csv")
    assert res.code == 2 and "cannot write" in res.stderr and len(res.stderr.strip().splitlines()) == 1
