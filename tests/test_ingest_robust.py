"""Issue 14: one contract, one verdict, the first bad place, on any input.

Each test is the minimal input of a class the fuzzer found: the fast and the
careful JSON-lines reader must agree (the same rows, or the same located
TraceError), and what ingest accepts must read back whole.
"""

from __future__ import annotations

import gzip

import pyarrow as pa
import pytest

from _readers import jsonl_verdicts, write_manifest
from _trace_files import manifest
from conftest import run_cli
from ingest.errors import TraceError

GOOD = '{"rank":0,"core":0,"seq":%d,"ts":1,"launch":0,"kind":"kernel_begin","name":"k"}\n'


def _verdicts(tmp_path, data: bytes, name="events.jsonl"):
    m = write_manifest(tmp_path, manifest())
    p = tmp_path / name
    p.write_bytes(data)
    return p, jsonl_verdicts(p, m)


def _agree(got):
    """The fast path and the careful one give one verdict; returns it."""
    fast, careful = got["fast"], got["careful"]
    if isinstance(careful, TraceError):
        assert got["fast_only"] is None, "the fast path accepted what the careful one rejects"
        assert isinstance(fast, TraceError) and str(fast) == str(careful)
        return careful
    assert not isinstance(fast, TraceError), fast
    assert fast.equals(careful)
    if got["fast_only"] is not None:
        assert got["fast_only"].equals(careful)
    return careful


@pytest.mark.parametrize("name, text, needle", [
    ("lone high surrogate", GOOD.replace('"k"', '"\\ud83d"') % 1, "lone surrogate"),
    ("lone low surrogate", GOOD.replace('"k"', '"a\\udc80b"') % 1, "lone surrogate"),
    ("deep array", "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    ("deep value", GOOD.replace('"name":"k"', '"name":"k","x":' + "[" * 5000 + "]" * 5000) % 1, "nested too deeply"),
])
def test_text_that_cannot_be_stored_is_a_located_error(tmp_path, name, text, needle):
    p, got = _verdicts(tmp_path, text.encode())
    err = _agree(got)
    assert isinstance(err, TraceError) and err.where == "line 1" and needle in str(err), err
    res = run_cli("ingest", tmp_path, "-o", tmp_path / "ds")
    assert res.code == 2 and "Traceback" not in res.stderr and needle in res.stderr


def test_surrogate_pair_is_text_and_reads_back(tmp_path):
    _, got = _verdicts(tmp_path, (GOOD.replace('"k"', '"\\ud83d\\ude00"') % 1).encode())
    assert _agree(got).column("name").to_pylist() == ["\U0001f600"]


def test_bom_opening_a_file_is_accepted_by_both_paths(tmp_path):
    _, got = _verdicts(tmp_path, b"\xef\xbb\xbf" + (GOOD % 1).encode())
    assert got["fast_only"] is not None
    assert _agree(got).num_rows == 1


def test_bom_inside_a_file_is_rejected_by_both_paths(tmp_path):
    _, got = _verdicts(tmp_path, ((GOOD % 1) + "\ufeff" + (GOOD % 2)).encode())
    err = _agree(got)
    assert isinstance(err, TraceError) and err.where == "line 2" and "BOM" in str(err)


def test_null_field_a_kind_does_not_carry_is_absent_on_both_paths(tmp_path):
    text = '{"rank":0,"core":0,"seq":1,"ts":1,"launch":0,"kind":"pipe_sync","op":"set_flag","event":"all",' \
           '"token":null}\n'
    _, got = _verdicts(tmp_path, text.encode())
    assert _agree(got).column("token").null_count == 1


def test_field_a_kind_does_not_carry_is_rejected_on_both_paths(tmp_path):
    text = '{"rank":0,"core":0,"seq":1,"ts":1,"launch":0,"kind":"pipe_sync","op":"set_flag","event":"all",' \
           '"token":3}\n'
    _, got = _verdicts(tmp_path, text.encode())
    err = _agree(got)
    assert isinstance(err, TraceError) and "'token' is not part of a pipe_sync event" in str(err)


def test_first_bad_line_is_reported_before_a_later_bad_utf8_line(tmp_path):
    lines = [(GOOD % i).encode() for i in range(1, 200)]
    lines[47] = b'{"rank":0,\n'  # line 48: not JSON
    lines[135] = (GOOD % 136).replace('"k"', '"\xff"').encode("latin-1")  # line 136: not UTF-8
    _, got = _verdicts(tmp_path, b"".join(lines))
    err = _agree(got)
    assert isinstance(err, TraceError) and err.where == "line 48", err


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_broken_compressed_stream_names_its_place(tmp_path, compression, damage):
    data = b"".join((GOOD % i).encode() for i in range(1, 300_001))
    if compression == "gzip":
        blob = gzip.compress(data)
    else:
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as f:
            f.write(data)
        blob = sink.getvalue().to_pybytes()
    cut = len(blob) // 2
    blob = blob[:cut] if damage == "truncated" else blob[:cut] + bytes(64) + blob[cut + 64:]
    _, got = _verdicts(tmp_path, blob, name="events.jsonl.gz")
    err = _agree(got)
    assert isinstance(err, TraceError), err
    assert err.where.startswith("line "), err
    if damage == "truncated" or "JSON" not in err.message:  # garbage may decode to a bad line first
        assert "after line" in err.message and f"compressed byte" in err.message, err
        assert f"of {len(blob)}" in err.message
        assert int(err.where.split()[1]) > 1000  # the good lines before the damage were read


@pytest.mark.parametrize("line", ['{"a":' * 100_000 + "1" + "}" * 100_000 + "\n", "null\n", "7\n", '"x"\n'])
def test_line_that_crashed_pyarrow_never_reaches_it(tmp_path, line):
    """pyarrow's JSON reader killed the process (SIGSEGV) on 100,000 nested objects and on a
    line that is not an object before an object ("null" then {...})."""
    import subprocess
    import sys

    from conftest import ROOT

    m = write_manifest(tmp_path, manifest())
    (tmp_path / "events.jsonl").write_text(line + GOOD % 1)
    code = ("import sys; from pathlib import Path; from ingest.manifest import Manifest; "
            "from ingest.jsonl_fast import read_fast; "
            "print(read_fast(Path(sys.argv[1]), Manifest.load(sys.argv[2]), None))")
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path / "events.jsonl"), str(tmp_path / "manifest.json")],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "None", (res.returncode, res.stderr[-300:])
    _, got = _verdicts(tmp_path, (line + GOOD % 1).encode())
    err = _agree(got)
    assert isinstance(err, TraceError) and err.where == "line 1", err
    assert m.ranks == 2
