"""The fast JSON-lines parser (ingest.jsonl_scan): what it takes, what it leaves to the careful path.

Whatever the line, the two paths agree: the fast one either gives the careful
one's table or declines (None), and declines only cost speed. The lines a
kernel or json.dumps writes (any separators, null for an absent optional
field, CRLF) must take the fast path, or the speed is lost silently.
"""

from __future__ import annotations

import pytest

from ingest import jsonl_fast
from ingest.errors import TraceError
from ingest.jsonl import read_jsonl
from ingest.jsonl_fast import read_fast
from ingest.manifest import Manifest

from _trace_files import Core, write_trace

SIGNAL = '"engine":"mte","peer":1,"region":"flags","offset":8,"op":"add","value":1'
HEAD = '"rank":0,"core":0,"seq":10,"ts":400,"launch":0,"kind":"signal"'


def _events(line: str | None = None):
    a = Core(0, 0)
    out = [a("kernel_begin", name="k"), a("put", engine="sdma", peer=1, region="payload", offset=8, nbytes=64),
           a("quiet", engine="sdma")]
    a.seq, a.ts = 10, 500
    tail = [a("wait_begin", region="flags", offset=0, cmp="ge", value=1, words=8),
            a("wait_end", region="flags", offset=0, observed=1)]
    return out + ([line] if line is not None else []) + tail


def _both(tmp_path, line: str | None, **kw):
    p = write_trace(tmp_path, _events(line), **kw)
    m = Manifest.load(tmp_path / "manifest.json")
    try:
        careful = read_jsonl(p, m, fast=False).table
    except TraceError as e:
        careful = e
    return read_fast(p, m, None), careful


TAKEN = {
    "compact": "{" + HEAD + "," + SIGNAL + "}",
    "spaces and tabs": "  { " + HEAD.replace(",", " ,\t").replace(":", " : ") + " , " + SIGNAL + " }  ",
    "null optional": "{" + HEAD + "," + SIGNAL + ',"epoch":null}',
    "null then the value": "{" + HEAD + ',"value":null,' + SIGNAL + "}",
    "negative zero": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":-0') + "}",
    "19 digits": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":9223372036854775807') + "}",
    "19 digits, negative": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":-9223372036854775807') + "}",
    "18 digits": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":-999999999999999999') + "}",
    "carriage return": "{" + HEAD + "," + SIGNAL + "}\r",
}

DECLINED = {
    "key twice": "{" + HEAD + "," + SIGNAL + ',"value":2}',
    "fraction": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":1.0') + "}",
    "exponent": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":1e0') + "}",
    "true": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":true') + "}",
    "leading zero": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":01') + "}",
    "past int64": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":9223372036854775808') + "}",
    "past int64, negative": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":-9223372036854775809') + "}",
    "20 digits": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":10000000000000000000') + "}",
    "escape in a name": "{" + HEAD + "," + SIGNAL.replace('"add"', '"\\u0061dd"') + "}",
    "escape in a key": "{" + HEAD + "," + SIGNAL.replace('"peer"', '"p\\u0065er"') + "}",
    "non-ASCII": "{" + HEAD + "," + SIGNAL.replace('"flags"', '"fl\u00e4gs"') + "}",
    "two objects": "{" + HEAD + "," + SIGNAL + "}{" + HEAD + "," + SIGNAL + "}",
    "garbage after": "{" + HEAD + "," + SIGNAL + "}x",
    "blank": "   ",
    "empty object": "{}",
    "unknown key": "{" + HEAD + "," + SIGNAL + ',"colour":1}',
    "string for an integer": "{" + HEAD + "," + SIGNAL.replace('"offset":8', '"offset":"8"') + "}",
    "integer for a name": "{" + HEAD + "," + SIGNAL.replace('"engine":"mte"', '"engine":1') + "}",
    "unterminated string": "{" + HEAD + "," + SIGNAL.replace('"add"', '"add') + "}",
    "nul": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":nul') + "}",
    "minus alone": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":-') + "}",
    "array": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":[1]') + "}",
    "not an object": "null",
}


@pytest.mark.parametrize("line", TAKEN.values(), ids=TAKEN.keys())
def test_what_kernels_write_takes_the_fast_path(tmp_path, line):
    fast, careful = _both(tmp_path, line)
    assert not isinstance(careful, TraceError), careful
    assert fast is not None
    assert fast[0].equals(careful)


@pytest.mark.parametrize("line", DECLINED.values(), ids=DECLINED.keys())
def test_anything_else_is_left_to_the_careful_path(tmp_path, line):
    fast, careful = _both(tmp_path, line)
    assert fast is None, careful


def test_crlf_file_and_chunks_cut_anywhere(tmp_path, monkeypatch):
    """Chunks end at a line's end wherever the block size falls; CRLF files read as LF ones."""
    p = write_trace(tmp_path, _events())
    m = Manifest.load(tmp_path / "manifest.json")
    careful = read_jsonl(p, m, fast=False).table
    crlf = tmp_path / "crlf.jsonl"
    crlf.write_bytes(p.read_bytes().replace(b"\n", b"\r\n"))
    for size in (1, 7, 64, 1 << 20):
        monkeypatch.setattr(jsonl_fast, "_CHUNK", size)
        for path in (p, crlf):
            got = read_fast(path, m, None)
            assert got is not None and got[0].equals(careful), (size, path.name)
