"""The JSON-lines reader: decoding, file order, line numbers, compression."""

from __future__ import annotations

import pytest

from ingest.contract import Engine, Kind, Op, PipeOp
from ingest.errors import TraceError
from ingest.jsonl import detect_compression, read_jsonl
from ingest.manifest import Manifest

from _trace_files import Core, manifest, write_trace


def _events():
    a, b = Core(0, 0), Core(1, 1)
    return [
        a("kernel_begin", name="k"),
        b("put", engine="sdma", peer=0, region="payload", offset=8, nbytes=64, site=1),
        a("signal", engine="mte", peer=1, region="flags", offset=8, op="add", value=1, epoch=7),
        b("pipe_sync", op="wait_flag", event="mte3_s"),
        a("wait_begin", region="flags", offset=0, cmp="ge", value=1, words=8),
        a("wait_end", region="flags", offset=0, observed=1),
    ]


def _read(path):
    return read_jsonl(path, Manifest.load(path.parent / "manifest.json"))


@pytest.mark.parametrize("compression", [None, "gzip", "zstd"])
def test_reads_every_compression(tmp_path, compression):
    p = write_trace(tmp_path, _events(), compression=compression)
    assert detect_compression(p) == compression
    chunk = _read(p)
    t = chunk.table
    assert t.num_rows == 6
    assert chunk.positions.tolist() == [1, 2, 3, 4, 5, 6]
    assert t.column("kind").to_pylist() == [Kind.KERNEL_BEGIN, Kind.PUT, Kind.SIGNAL, Kind.PIPE_SYNC,
                                            Kind.WAIT_BEGIN, Kind.WAIT_END]
    assert t.column("engine").to_pylist() == [None, Engine.SDMA, Engine.MTE, None, None, None]
    assert t.column("op").to_pylist() == [None, None, Op.ADD, None, None, None]
    assert t.column("pipe_op").to_pylist() == [None, None, None, PipeOp.WAIT_FLAG, None, None]
    assert t.column("region").to_pylist() == [None, 0, 1, None, 1, 1]
    assert t.column("epoch").to_pylist() == [None, None, 7, None, None, None]
    assert t.column("words").to_pylist() == [None, None, None, None, 8, None]
    assert t.column("name").to_pylist()[0] == "k"


def test_compression_is_detected_by_content_not_name(tmp_path):
    # gzip data under a plain name, and plain text under a .gz name.
    p = write_trace(tmp_path / "a", _events(), name="events.jsonl", compression="gzip")
    assert _read(p).table.num_rows == 6
    q = write_trace(tmp_path / "b", _events(), name="events.jsonl.gz")
    assert _read(q).table.num_rows == 6


def test_blank_lines_crlf_and_unterminated_last_line(tmp_path):
    import json

    ev = _events()
    text = "\n" + json.dumps(ev[0]) + "\r\n\n  " + json.dumps(ev[1]) + "\n" + json.dumps(ev[2])
    (tmp_path / "manifest.json").write_text(json.dumps(manifest()))
    p = tmp_path / "e.jsonl"
    p.write_text(text)
    chunk = _read(p)
    assert chunk.positions.tolist() == [2, 4, 5]
    assert chunk.table.column("seq").to_pylist() == [1, 1, 2]


def test_error_line_counts_blank_lines(tmp_path):
    ev = _events()
    p = write_trace(tmp_path, ["", ev[0], "", {**ev[1], "kind": "bogus"}])
    with pytest.raises(TraceError) as e:
        _read(p)
    assert e.value.where == "line 4"
    assert "bogus" in e.value.message


def test_error_in_unterminated_last_line(tmp_path):
    import json

    (tmp_path / "manifest.json").write_text(json.dumps(manifest()))
    p = tmp_path / "e.jsonl"
    p.write_text(json.dumps(_events()[0]) + "\n" + '{"rank": 0')
    with pytest.raises(TraceError) as e:
        _read(p)
    assert e.value.where == "line 2"


def test_rows_keep_file_order_across_kinds(tmp_path):
    c = Core(0, 0)
    evs = [c("quiet", engine="all") if i % 3 else c("fence") for i in range(50)]
    chunk = _read(write_trace(tmp_path, evs))
    assert chunk.table.column("seq").to_pylist() == list(range(1, 51))


def test_corrupt_gzip_is_a_trace_error(tmp_path):
    p = write_trace(tmp_path, _events(), compression="gzip")
    p.write_bytes(p.read_bytes()[:-12])
    with pytest.raises(TraceError) as e:
        _read(p)
    assert e.value.path == str(p)


def test_empty_file_gives_empty_table(tmp_path):
    chunk = _read(write_trace(tmp_path, []))
    assert chunk.table.num_rows == 0
    assert chunk.table.schema.names[0] == "rank"


def test_big_values_fit_int64(tmp_path):
    c = Core(0, 0)
    big = 2**63 - 1
    chunk = _read(write_trace(tmp_path, [c("write", region="counts", offset=0, nbytes=4, value=big),
                                         c("write", region="counts", offset=0, nbytes=4, value=-big)]))
    # -2^63 itself is the column's null sentinel, never data (tests/test_ingest_limits.py).
    assert chunk.table.column("value").to_pylist() == [big, -big]


@pytest.mark.parametrize("compression", [None, "gzip", "zstd"])
def test_fast_path_takes_valid_files(tmp_path, compression):
    from ingest.jsonl_fast import read_fast

    p = write_trace(tmp_path, _events(), compression=compression)
    got = read_fast(p, Manifest.load(tmp_path / "manifest.json"), compression)
    assert got is not None
    table, lines = got
    assert table.equals(read_jsonl(p, Manifest.load(tmp_path / "manifest.json"), fast=False).table)
    assert lines.tolist() == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("bad", [
    {"kind": "put"},  # missing fields
    {"rank": 0, "core": 0, "seq": 1, "ts": 1, "launch": 0, "kind": "fence", "value": 3},  # extra field
    {"rank": 0, "core": 0, "seq": 1, "ts": 1, "launch": 0, "kind": "quiet", "engine": "warp"},
])
def test_fast_path_declines_bad_files(tmp_path, bad):
    from ingest.jsonl_fast import read_fast

    p = write_trace(tmp_path, _events() + [bad])
    assert read_fast(p, Manifest.load(tmp_path / "manifest.json"), None) is None
