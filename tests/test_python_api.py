"""import moetrace: the views as polars LazyFrames, the diagnosis as a DataFrame, and docs/python-api.md's example."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import polars as pl
import pytest

import moetrace
from _diag_helpers import write_trace as write_scenario

DOC = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """What `moetrace demo -o demo` leaves, in a fresh directory."""
    from tests.conftest import run_cli

    where = tmp_path_factory.mktemp("api")
    r = run_cli("demo", "-o", where / "demo")
    assert r.code == 0, r.stderr
    return where


def test_the_docs_worked_example_runs_and_prints_what_the_doc_says(demo):
    text = DOC.read_text()
    example = text.split("## A worked example", 1)[1]
    code = re.search(r"```python\n(.*?)```", example, re.S).group(1)
    expected = re.search(r"```text\n(.*?)```", example, re.S).group(1)
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(demo)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(DOC), "exec"), {"__name__": "__doc_example__"})
    finally:
        os.chdir(cwd)
    assert out.getvalue() == expected


def test_frames_are_the_sql_views(demo):
    with moetrace.open(demo / "demo" / "dataset") as t:
        for name, frame in (("events", t.events()), ("waits", t.waits()), ("routes", t.routes())):
            assert isinstance(frame, pl.LazyFrame)
            got = frame.collect()
            want = t.sql(f"SELECT * FROM {name}")
            assert got.schema == want.schema and got.height == want.height > 0
            key = [c for c in ("rank", "core", "seq", "begin_seq") if c in got.columns]
            assert got.sort(key).equals(want.sort(key)), name
        assert t.events().select(pl.len()).collect().item() == t.dataset.num_rows()
        # A projection and a filter come back right, early stops included.
        assert t.events().filter(pl.col("kind") == "route").head(3).collect().height == 3
        assert t.waits().select("stuck").collect().columns == ["stuck"]
        with pytest.raises(ValueError, match="no view 'nope'; the views are events, last_event, routes, waits, writes"):
            t.view("nope")


def test_diagnosis_dataframe_roots_and_select(demo):
    t = moetrace.open(demo / "demo" / "dataset")
    d = t.diagnose()
    df = d.findings()
    assert df.columns[:8] == ["id", "code", "family", "name", "severity", "confidence", "rank", "core"]
    assert {"launch", "message", "class", "root"} <= set(df.columns)
    assert df["class"].to_list() == [f.defect_class for f in d.report.findings] and df["class"][0] == "C1"
    assert df.schema["root"] == pl.Boolean and df.schema["rank"] == pl.Int16
    assert df.height == len(d.report.findings)
    roots = df.filter(pl.col("root"))
    assert roots["id"].to_list() == [f.id for f in d.roots]
    assert d.roots[0].code == "MT501" and d.roots[0].is_root
    assert df.filter(pl.col("code") == "MT101")["caused_by"].to_list() == [[d.roots[0].id]]
    only = t.diagnose(select="MT5").findings()
    assert only["code"].to_list() == ["MT501"]
    assert "MT101" not in t.diagnose(ignore=["hang"]).findings()["code"].to_list()
    assert d.exit_code() == 1 and '"root_cause": true' in d.render("json")
    t.close()


def test_raw_inputs_are_ingested_and_cleaned_up(tmp_path):
    raw = write_scenario(tmp_path / "raw")
    t = moetrace.open(raw)
    tmp = t.path
    assert tmp != raw and tmp.is_dir()
    assert t.waits().filter(pl.col("stuck")).collect().height == 4
    assert t.diagnose().report.trace.inputs == (str(raw),)
    t.close()
    assert not tmp.exists()
    dropped = moetrace.open(raw)
    tmp = dropped.path
    del dropped  # never closed: the temporary dataset goes with the object
    import gc

    gc.collect()
    assert not tmp.exists()


def test_bad_input_raises_trace_error(tmp_path):
    with pytest.raises(moetrace.TraceError, match="no such file"):
        moetrace.open(tmp_path / "nope")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "manifest.json").write_text("{")
    (bad / "events.jsonl").write_text("")
    with pytest.raises(moetrace.TraceError):
        moetrace.open(bad)
