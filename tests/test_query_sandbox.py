"""Issue 14 class 10: `moetrace query` only reads the dataset unless told --unsafe.

A CI job that runs `moetrace query` on an uploaded trace must not be able to
write files (least of all the dataset's own) or read the runner's files.
"""

from __future__ import annotations

import hashlib

import pytest

from conftest import ROOT, run_cli


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("sandbox") / "ds"
    assert run_cli("ingest", ROOT / "examples" / "classic-2rank", "-o", out).code == 0
    return out


def _digest(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _refused(res, *needles):
    assert res.code == 2, (res.code, res.stdout, res.stderr)
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    for n in needles:
        assert n in res.stderr, (n, res.stderr)


def _attacks(ds, tmp_path):
    part = ds / "events" / "rank=0" / "part-0.parquet"
    return {
        "copy over an event file": (f"COPY (select 1 as x) TO '{part}' (FORMAT parquet)", "COPY"),
        "copy over the report": (f"COPY (select 1 as x) TO '{ds / 'ingest.json'}'", "COPY"),
        "copy anywhere": (f"COPY (select 1 as x) TO '{tmp_path / 'out.csv'}'", "COPY"),
        "attach a new database": (f"ATTACH '{tmp_path / 'new.duckdb'}'", "ATTACH"),
        "two statements": ("select 1; select 2", "exactly one SQL statement, got 2"),
        "read_csv of the runner": ("select * from read_csv('/etc/passwd')", "Permission"),
        "read_text beside the events": (f"select * from read_text('{ds / 'manifest.json'}')", "Permission"),
        "glob the runner": ("select * from glob('/root/*')", "Permission"),
        "lift the sandbox": ("SET enable_external_access = true", "SET"),
        "install an extension": ("INSTALL httpfs", "need --unsafe"),
        "load an extension": ("LOAD httpfs", "need --unsafe"),
        "explain analyze a copy": (f"EXPLAIN ANALYZE COPY (select 1) TO '{tmp_path / 'e.csv'}'", "EXPLAIN"),
        "create a table": ("CREATE TABLE t AS SELECT 1", "CREATE"),
    }


def test_sandbox_refuses_writes_and_outside_files(ds, tmp_path):
    before = _digest(ds)
    for name, (sql, needle) in _attacks(ds, tmp_path).items():
        _refused(run_cli("query", ds, sql), needle)
        assert _digest(ds) == before, name
    assert list(tmp_path.iterdir()) == []
    res = run_cli("query", ds, "select current_setting('enable_external_access') as ext")
    assert res.code == 0 and "false" in res.stdout


def test_sandbox_still_reads_every_view_and_the_event_files(ds):
    for sql in ("select count(*) from events", "select * from writes limit 3", "select * from routes",
                "with w as (select * from waits) select count(*) from w",
                f"select count(*) from read_parquet('{ds / 'events' / 'rank=0' / 'part-0.parquet'}')"):
        res = run_cli("query", ds, sql)
        assert res.code == 0, (sql, res.stderr)


def test_unsafe_lifts_the_sandbox(ds, tmp_path):
    out = tmp_path / "n.csv"
    res = run_cli("query", ds, f"COPY (select count(*) as n from events) TO '{out}'", "--unsafe")
    assert res.code == 0, res.stderr
    assert out.read_text().splitlines()[0] == "n"
