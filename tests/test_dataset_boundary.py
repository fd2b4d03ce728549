"""Issue 21: a dataset is the boundary. A received dataset (a dump copied off a cluster) may hold
links that lead out of it, or part files whose schema was tampered with: every reader (query,
diagnose, timeline, re-ingest, the Python API, by path and by file:// URL) refuses them in one
located line, exit 2, and reads nothing outside the dataset: a marker string of the outside file
never appears in any output.
"""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import moetrace
from conftest import ROOT, run_cli
from ingest.contract import SCHEMA

MARKER = "M4RK3R-from-outside"
PART0 = "events/rank=0/part-0.parquet"
SQL = "select name from events where name is not null union all select protocol from _manifest"


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("boundary") / "ds"
    assert run_cli("ingest", ROOT / "examples" / "classic-2rank", "-o", out).code == 0
    return out


def _commands(d, tmp_path):
    return {"query": ("query", d, SQL),
            "query csv": ("query", d, SQL, "--format", "csv"),
            "read the part as text": ("query", d, f"select * from read_csv('{d}/{PART0}', header=false)"),
            "diagnose": ("diagnose", d, "-f", "json"),
            "timeline": ("timeline", d, "-o", tmp_path / "t.json"),
            "re-ingest": ("ingest", d, "-o", tmp_path / "again")}


def _refused(res, *needles):
    out = res.stdout + res.stderr
    assert MARKER not in out, out[-2000:]
    assert res.code == 2, (res.code, res.stdout[-500:], res.stderr[-500:])
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    for n in needles:
        assert n in res.stderr, (n, res.stderr)


def _marked_part(ds, where):
    """A valid part file whose kernel names are the marker: what a reader would print if it followed a link."""
    t = pq.read_table(ds / PART0)
    i = t.schema.get_field_index("name")
    t = t.set_column(i, t.schema.field(i), pa.array([MARKER] * t.num_rows, pa.string()))
    pq.write_table(t, where)
    return where


def _marked_manifest(ds, where):
    doc = json.loads((ds / "manifest.json").read_text())
    doc["protocol"] = MARKER
    where.write_text(json.dumps(doc))
    return where


def _link(path, target):
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.symlink_to(target)


def _link_part(ds, d, out):
    _link(d / PART0, _marked_part(ds, out / "x.parquet"))


def _link_part_to_text(ds, d, out):
    (out / "notes.txt").write_text(f"{MARKER}\nroot:x:0:0\n")
    _link(d / PART0, out / "notes.txt")


def _link_rank_dir(ds, d, out):
    (out / "r").mkdir()
    _marked_part(ds, out / "r" / "part-0.parquet")
    _link(d / "events" / "rank=1", out / "r")


def _link_events_dir(ds, d, out):
    shutil.copytree(d / "events", out / "ev")
    _marked_part(ds, out / "ev" / "rank=0" / "part-0.parquet")
    _link(d / "events", out / "ev")


def _link_manifest(ds, d, out):
    _link(d / "manifest.json", _marked_manifest(ds, out / "m.json"))


def _link_manifest_relative(ds, d, out):
    _marked_manifest(ds, out / "m.json")
    _link(d / "manifest.json", os.path.relpath(out / "m.json", d))


def _link_report(ds, d, out):
    (out / "r.json").write_text((ds / "ingest.json").read_text().replace("classic", MARKER))
    _link(d / "ingest.json", out / "r.json")


LINKS = {"part to a parquet outside": (_link_part, PART0),
         "part to a text file outside": (_link_part_to_text, PART0),
         "rank directory outside": (_link_rank_dir, "rank=1"),
         "events directory outside": (_link_events_dir, "events"),
         "manifest outside": (_link_manifest, "manifest.json"),
         "manifest outside, relative link": (_link_manifest_relative, "manifest.json"),
         "ingest report outside": (_link_report, "ingest.json")}


def _linked(ds, tmp_path, case):
    d, out = tmp_path / "ds", tmp_path / "outside"
    shutil.copytree(ds, d)
    out.mkdir()
    LINKS[case][0](ds, d, out)
    return d


@pytest.mark.parametrize("case", sorted(LINKS))
def test_a_link_out_of_the_dataset_is_refused_by_every_reader(ds, tmp_path, case):
    d = _linked(ds, tmp_path, case)
    for name, args in _commands(d, tmp_path).items():
        _refused(run_cli(*args), "outside the dataset", LINKS[case][1])
    assert not (tmp_path / "again").exists() and not (tmp_path / "t.json").exists()
    url = d.resolve().as_uri()
    _refused(run_cli("query", url, SQL), "outside the dataset")
    _refused(run_cli("diagnose", url), "outside the dataset")
    with pytest.raises(moetrace.TraceError, match="outside the dataset") as err:
        moetrace.open(d)
    assert MARKER not in str(err.value)


def test_a_dataset_reached_through_a_link_still_reads(ds, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(ds)
    want = run_cli("query", ds, "select count(*) as n from events", "--format", "json")
    for where in (link, link.as_uri()):
        got = run_cli("query", where, "select count(*) as n from events", "--format", "json")
        assert got.code == 0 and got.stdout == want.stdout, got.stderr
        assert run_cli("diagnose", where, "-f", "json").code == run_cli("diagnose", ds, "-f", "json").code
    # A link inside the dataset to a file inside it leads nowhere else: read as the file.
    d = tmp_path / "inner"
    shutil.copytree(ds, d)
    (d / "events" / "rank=1").rename(d / "r1")
    (d / "events" / "rank=1").symlink_to("../r1")
    got = run_cli("query", d, "select count(*) as n from events", "--format", "json")
    assert got.code == 0 and got.stdout == want.stdout, got.stderr
    with moetrace.open(link) as t:
        assert t.events().collect().height == json.loads(want.stdout)[0]["n"]


def _rewrite(fn):
    def damage(part):
        pq.write_table(fn(pq.read_table(part)), part)
    return damage


def _retype(name, typ):
    def fn(t):
        i = t.schema.get_field_index(name)
        return t.set_column(i, pa.field(name, typ), pc.cast(t.column(name), typ))
    return fn


def _nullable(name):
    def fn(t):
        i = t.schema.get_field_index(name)
        return t.set_column(i, pa.field(name, t.schema.field(i).type, nullable=True), t.column(name))
    return fn


SCHEMAS = {
    "kind dropped": (_rewrite(lambda t: t.drop_columns(["kind"])), "column kind"),
    "seq dropped": (_rewrite(lambda t: t.drop_columns(["seq"])), "column seq"),
    "seq as text": (_rewrite(_retype("seq", pa.string())), "column seq"),
    "kind widened": (_rewrite(_retype("kind", pa.int64())), "column kind"),
    "rank may be null": (_rewrite(_nullable("rank")), "column rank"),
    "a column added": (_rewrite(lambda t: t.append_column("extra", pa.array([1] * t.num_rows))), "column extra"),
    "columns reordered": (_rewrite(lambda t: t.select(list(reversed(SCHEMA.names)))), "column"),
}


@pytest.mark.parametrize("case", sorted(SCHEMAS))
def test_a_part_of_another_schema_is_refused_naming_file_and_column(ds, tmp_path, case):
    damage, column = SCHEMAS[case]
    d = tmp_path / "ds"
    shutil.copytree(ds, d)
    damage(d / PART0)
    for name, args in _commands(d, tmp_path).items():
        _refused(run_cli(*args), PART0, column)
    assert not (tmp_path / "again").exists()
    with pytest.raises(moetrace.TraceError, match=column):
        moetrace.open(d)


def test_a_window_task_checks_the_dataset_itself(ds, tmp_path):
    """A Ray task (or a --jobs worker) opens the dataset by path or URL itself: a link put there after
    the driver opened it is refused by the task too."""
    from analyzer.config import Config
    from analyzer.window_run import window_job
    from analyzer.windows import plan
    from ingest.dataset import Dataset
    from rules import registry

    d, out = tmp_path / "ds", tmp_path / "outside"
    shutil.copytree(ds, d)
    out.mkdir()
    opened = Dataset(d)
    window = plan(opened.blocks, Config().window_events, opened.num_rows())[0]
    codes = sorted(registry())
    assert isinstance(window_job(str(d), window, Config(), codes), list)
    _link_part(ds, d, out)
    for where in (str(d), d.resolve().as_uri()):
        with pytest.raises(moetrace.TraceError, match="outside the dataset"):
            window_job(where, window, Config(), codes)


@pytest.mark.parametrize("what", ["fifo", "directory"])
def test_a_part_that_is_not_a_regular_file_is_refused(ds, tmp_path, what):
    """A FIFO would block a reader forever (a tar can carry one); a directory is no parquet file."""
    d = tmp_path / "ds"
    shutil.copytree(ds, d)
    (d / PART0).unlink()
    os.mkfifo(d / PART0) if what == "fifo" else (d / PART0).mkdir()
    for name, args in _commands(d, tmp_path).items():
        _refused(run_cli(*args), PART0, "not a regular file")
    with pytest.raises(moetrace.TraceError, match="not a regular file"):
        moetrace.open(d)
