"""Resolving ingest inputs: directories, single files, datasets, ring dumps; the ingest report."""

from __future__ import annotations

import json

import pytest

from ingest.errors import TraceError

from conftest import ROOT, run_cli
from ingest.dataset import Dataset
from ingest.run import ingest
from _trace_files import Core, manifest, write_trace

EXAMPLE = ROOT / "examples" / "classic-2rank"


def _rows(ds):
    t = Dataset(ds).table()
    return sorted(map(tuple, (r.values() for r in t.to_pylist())))


def _two_files(d):
    a, b = Core(0, 0), Core(1, 1)
    write_trace(d, [a("kernel_begin", name="k"), a("fence")], name="a.jsonl")
    write_trace(d, [b("quiet", engine="all"), b("kernel_end", name="k")], name="b.jsonl.gz", compression="gzip")


def test_directory_single_file_and_report(tmp_path):
    _two_files(tmp_path / "t")
    rep = ingest([tmp_path / "t"], tmp_path / "ds")
    assert [s.format for s in rep.sources] == ["jsonl", "jsonl"]
    assert rep.events_in == rep.rows_out == 4 and rep.lost == 0
    assert rep.ranks_missing == []
    one = ingest([tmp_path / "t" / "b.jsonl.gz"], tmp_path / "ds1")
    assert one.rows_out == 2 and one.ranks_missing == [0]
    assert [(c.rank, c.core, c.rows, c.first_seq, c.last_seq) for c in one.cores] == [(1, 1, 2, 1, 2)]


def test_same_file_twice_is_read_once(tmp_path):
    _two_files(tmp_path / "t")
    rep = ingest([tmp_path / "t", tmp_path / "t" / "a.jsonl"], tmp_path / "ds")
    assert rep.rows_out == 4 and len(rep.sources) == 2


def test_dataset_reingest_and_merge(tmp_path):
    d = tmp_path / "t"
    a, b = Core(0, 0), Core(1, 0)
    write_trace(d, [a("fence"), a("fence")], name="a.jsonl")
    ingest([d / "a.jsonl"], tmp_path / "ds_a")
    write_trace(d, [b("fence")], name="b.jsonl")
    merged = ingest([tmp_path / "ds_a", d / "b.jsonl"], tmp_path / "merged")
    assert [s.format for s in merged.sources] == ["dataset", "jsonl"]
    assert merged.rows_out == 3
    ingest([d / "b.jsonl"], tmp_path / "ds_b")
    assert _rows(tmp_path / "merged") == sorted(_rows(tmp_path / "ds_a") + _rows(tmp_path / "ds_b"))
    again = ingest([tmp_path / "merged"], tmp_path / "again")
    assert again.rows_out == merged.rows_out
    assert _rows(tmp_path / "again") == _rows(tmp_path / "merged")


def test_force_replaces_a_dataset_with_a_reingested_one_but_never_its_input(tmp_path):
    ingest([EXAMPLE], tmp_path / "ds")
    before = _rows(tmp_path / "ds")
    ingest([tmp_path / "ds"], tmp_path / "copy")
    rep = ingest([tmp_path / "copy"], tmp_path / "ds", force=True)
    assert rep.rows_out == len(before) and _rows(tmp_path / "ds") == before
    # Replacing an input, even with itself, is refused (issue 14: --force never deletes an input).
    with pytest.raises(TraceError, match="would replace the input"):
        ingest([tmp_path / "ds"], tmp_path / "ds", force=True)
    assert _rows(tmp_path / "ds") == before


def test_ring_dump_source(tmp_path):
    rings = pytest.importorskip("ingest.rings")
    from ingest.manifest import Manifest

    d = tmp_path / "t"
    doc = manifest()
    d.mkdir()
    (d / "manifest.json").write_text(json.dumps(doc))
    m = Manifest.from_json(doc)
    import pyarrow as pa

    table = pa.table({"rank": pa.array([0, 0, 0, 1], pa.int16()), "core": pa.array([0, 0, 0, 1], pa.int16()),
                      "seq": pa.array([0, 1, 2, 0], pa.int64()), "ts": pa.array([5, 6, 7, 8], pa.int64()),
                      "launch": pa.array([0, 0, 0, 0], pa.int32()), "kind": pa.array([8, 8, 8, 8], pa.int8())})
    rings.write_ring_file(d / "dump.mtr", table, m, capacity=2)
    rep = ingest([d], tmp_path / "ds")
    assert [s.format for s in rep.sources] == ["mtr"]
    assert rep.events_in == 4 and rep.rows_out == 3 and rep.lost == 1
    assert {(c.rank, c.core): c.lost for c in rep.cores} == {(0, 0): 1, (1, 1): 0}


def test_cli_text_and_json_report(tmp_path):
    res = run_cli("ingest", EXAMPLE, "-o", tmp_path / "ds")
    assert res.code == 0, res.stderr
    assert "244 rows from 244 events in, 0 lost" in res.stdout
    assert "events.jsonl" in res.stdout and "ranks missing: none" in res.stdout
    assert res.stderr == ""  # no progress when stderr is not a terminal
    res = run_cli("ingest", EXAMPLE, "-o", tmp_path / "ds", "--force", "--format", "json", "--no-progress")
    doc = json.loads(res.stdout)
    assert doc["events_in"] == doc["rows_out"] == 244 and doc["dataset"] == str(tmp_path / "ds")
    assert doc["sources"][0]["format"] == "jsonl"
