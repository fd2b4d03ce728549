"""Issue 14 class 10: `moetrace query` only reads the dataset unless told --unsafe.

A CI job that runs `moetrace query` on an uploaded trace must not be able to
write files (least of all the dataset's own) or read the runner's files.
Every query here runs from a working directory that holds a marker file and a
`.tmp/` with one (DuckDB's default temp directory, which it lets a query read,
issue 21): the marker must never appear in any output.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from conftest import ROOT
from conftest import run_cli as _run_cli

MARKER = "M4RK3R-of-the-runner"


@pytest.fixture(autouse=True, params=["cwd-a", "cwd-b"])
def cwd(request, tmp_path_factory, monkeypatch):
    """A working directory with the runner's files in it (two, so no path is fixed by chance)."""
    d = tmp_path_factory.mktemp(request.param)
    (d / "secret.csv").write_text(f"k,v\n{MARKER},1\n")
    (d / ".tmp").mkdir()
    (d / ".tmp" / "x.csv").write_text(f"k,v\n{MARKER},2\n")
    monkeypatch.chdir(d)
    return d


def run_cli(*args):
    res = _run_cli(*args)
    assert MARKER not in res.stdout + res.stderr, (args, res.stdout[-1000:], res.stderr[-1000:])
    return res


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
        "read_csv of the working directory": ("select * from read_csv('secret.csv')", "Permission"),
        "read_csv of DuckDB's default temp dir": ("select * from read_csv('.tmp/x.csv')", "Permission"),
        "read_csv of it by its absolute path": (f"select * from read_csv('{Path.cwd() / '.tmp' / 'x.csv'}')",
                                                "Permission"),
        "read_text of the temp dir": ("select * from read_text('.tmp/*')", "Permission"),
        "glob the temp dir": ("select * from glob('.tmp/*')", "Permission"),
    }


def test_sandbox_refuses_writes_and_outside_files(ds, tmp_path):
    before = _digest(ds)
    for name, (sql, needle) in _attacks(ds, tmp_path).items():
        for fmt in ("table", "csv"):  # csv streams through DuckDB's COPY: the other path
            _refused(run_cli("query", ds, sql, "--format", fmt), needle)
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


def test_duckdb_spills_to_a_private_directory_removed_after(ds, cwd):
    """DuckDB's temp directory is the process's own, never the working directory's `.tmp`; a query
    that spills (--unsafe, to lower the memory limit) still runs, and the directory goes with it."""
    sandboxed = run_cli("query", ds, "select current_setting('temp_directory') as t", "--format", "json")
    assert sandboxed.code == 0, sandboxed.stderr
    private = Path(json.loads(sandboxed.stdout)[0]["t"])
    assert private.is_absolute() and cwd not in private.parents and not private.exists()
    (cwd / ".tmp" / "x.csv").unlink()
    (cwd / ".tmp").rmdir()
    spill = run_cli("query", ds, "SET memory_limit = '64MB'; SET threads = 1; "
                    "CREATE TABLE t AS SELECT x, x * 2 AS y FROM range(12000000) r(x); "
                    "SELECT path FROM duckdb_temporary_files()", "--unsafe", "--format", "json")
    assert spill.code == 0, spill.stderr
    paths = [Path(r["path"]) for r in json.loads(spill.stdout)]
    assert paths, "the query did not spill: the test proves nothing"
    assert all(cwd not in p.parents and not p.parent.exists() for p in paths), paths
    assert not (cwd / ".tmp").exists() and sorted(os.listdir(cwd)) == ["secret.csv"]
