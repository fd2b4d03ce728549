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

from _trace_files import Core, manifest, write_trace

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
    "keys in another order": "{" + ",".join(reversed((HEAD + "," + SIGNAL).split(","))) + "}",
    "kind last": "{" + SIGNAL + "," + HEAD + "}",
    "null for another kind's field": "{" + HEAD + "," + SIGNAL + ',"name":null,"words":null}',
    "a kind's optional field": "{" + HEAD + "," + SIGNAL + ',"site":2,"epoch":-7}',
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

# What the scanner checks at each line's end, as the careful path does (ingest.jsonl_plan): it
# declines, and the careful path refuses the file at that line.
REFUSED = {
    "unknown kind": "{" + HEAD.replace('"signal"', '"teleport"') + "," + SIGNAL + "}",
    "no kind": "{" + HEAD.replace(',"kind":"signal"', "") + "," + SIGNAL + "}",
    "null kind": "{" + HEAD.replace('"signal"', "null") + "," + SIGNAL + "}",
    "kind twice": "{" + HEAD + "," + SIGNAL + ',"kind":"put"}',
    "required field missing": "{" + HEAD + "," + SIGNAL.replace(',"value":1', "") + "}",
    "required field null": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":null') + "}",
    "another kind's field": "{" + HEAD + "," + SIGNAL + ',"words":8}',
    "another kind's text": "{" + HEAD + "," + SIGNAL + ',"name":"k"}',
    "peer not a rank": "{" + HEAD + "," + SIGNAL.replace('"peer":1', '"peer":2') + "}",
    "core not a core": "{" + HEAD.replace('"core":0', '"core":2') + "," + SIGNAL + "}",
    "negative rank": "{" + HEAD.replace('"rank":0', '"rank":-1') + "," + SIGNAL + "}",
    "offset past the address bound": "{" + HEAD + "," + SIGNAL.replace('"offset":8', '"offset":1099511627777') + "}",
    "launch past int32": "{" + HEAD.replace('"launch":0', '"launch":2147483648') + "," + SIGNAL + "}",
    "the null sentinel": "{" + HEAD + "," + SIGNAL.replace('"value":1', '"value":-9223372036854775808') + "}",
    "unknown region": "{" + HEAD + "," + SIGNAL.replace('"flags"', '"flagz"') + "}",
    "unknown engine": "{" + HEAD + "," + SIGNAL.replace('"mte"', '"warp"') + "}",
    "engine this kind does not allow": "{" + HEAD + "," + SIGNAL.replace('"mte"', '"all"') + "}",
    "op this kind does not allow": "{" + HEAD + "," + SIGNAL.replace('"add"', '"none"') + "}",
    "another enum's name": "{" + HEAD + "," + SIGNAL.replace('"add"', '"set_flag"') + "}",
    "seq steps back": "{" + HEAD.replace('"seq":10', '"seq":1') + "," + SIGNAL + "}",
    "seq repeated": "{" + HEAD.replace('"seq":10', '"seq":2') + "," + SIGNAL + "}",
}
DECLINED.update(REFUSED)


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


@pytest.mark.parametrize("line", REFUSED.values(), ids=REFUSED.keys())
def test_what_the_scanner_checks_the_careful_path_refuses_at_that_line(tmp_path, line):
    """The checks run inside the scan only decline; the careful path names the line (the 4th)."""
    _, careful = _both(tmp_path, line)
    assert isinstance(careful, TraceError) and careful.where == "line 4", careful


def test_key_orders_that_change_from_line_to_line(tmp_path):
    """The scanner predicts each key from the last line of its kind; a wrong guess only costs a lookup."""
    a = Core(0, 0)
    events = []
    for i in range(40):
        e = a("put", engine="sdma", peer=1, region="payload", offset=i, nbytes=64, site=1 + i % 2)
        if i % 3 == 1:
            e = dict(reversed(list(e.items())))
        if i % 5 == 2:
            e["epoch"] = None
        events.append(e)
        if i % 4 == 0:
            events.append(a("signal", engine="mte", peer=1, region="flags", offset=8, op="add", value=i))
    p = write_trace(tmp_path, events)
    m = Manifest.load(tmp_path / "manifest.json")
    fast = read_fast(p, m, None)
    assert fast is not None and fast[0].equals(read_jsonl(p, m, fast=False).table)


def test_seq_is_checked_across_chunks(tmp_path, monkeypatch):
    """The last seq of each (rank, core) travels from one chunk of a file to the next."""
    a = Core(0, 0)
    events = [a("quiet", engine="sdma") for _ in range(6)]
    events.append(dict(events[1]))  # seq of the 2nd line again, in a later chunk
    p = write_trace(tmp_path, events)
    m = Manifest.load(tmp_path / "manifest.json")
    monkeypatch.setattr(jsonl_fast, "_CHUNK", 64)
    assert read_fast(p, m, None) is None
    with pytest.raises(TraceError, match="does not increase") as e:
        read_jsonl(p, m)
    assert e.value.where == "line 7"


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


@pytest.mark.parametrize("back", [False, True])
def test_seq_on_a_machine_too_wide_for_the_dense_check(tmp_path, back):
    """Past ranks x cores = SEQ_DENSE the scanner leaves seq to a sort after it; the verdict is the same."""
    from ingest.jsonl_plan import SEQ_DENSE

    a = Core(0, 0)
    events = [a("quiet", engine="sdma") for _ in range(4)]
    if back:
        events.append(dict(events[1]))
    doc = manifest(ranks=2048, cores=SEQ_DENSE // 2048 + 1)
    p = write_trace(tmp_path, events, doc=doc)
    m = Manifest.load(tmp_path / "manifest.json")
    assert m.ranks * m.cores > SEQ_DENSE
    fast = read_fast(p, m, None)
    if back:
        assert fast is None
        with pytest.raises(TraceError, match="does not increase"):
            read_jsonl(p, m, fast=False)
    else:
        assert fast is not None and fast[0].equals(read_jsonl(p, m, fast=False).table)
