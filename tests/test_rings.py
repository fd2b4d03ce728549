"""Binary ring dumps: encode/decode round trip, wrap accounting, bad input."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from ingest.contract import ALLOWED, COLUMN, COMMON_OPTIONAL, FIELDS, SCHEMA, Kind
from ingest.value_ranges import column_range
from ingest.errors import TraceError
from ingest.manifest import Manifest
from ingest.ring_layout import HEADER_DTYPE, HEADER_SIZE, RECORD_DTYPE, RECORD_SIZE, SLOT_OF, layout_markdown, slot_of
from ingest.rings import encode_rings, read_ring_file

MANIFEST = Manifest.from_json({
    "format": "moetrace-trace/1", "ranks": 2, "cores": 3, "protocol": "test",
    "regions": [{"name": "payload", "role": "payload", "elem_bytes": 2, "length": 1 << 40},
                {"name": "flags", "role": "flag", "elem_bytes": 4, "length": 1 << 40},
                {"name": "counts", "role": "counter", "elem_bytes": 4, "length": 1 << 40}],
    "names": ["dispatch", "combine"],
})
RANK_FIELDS = ("peer", "dst_rank", "src_rank")


def _values(kind: Kind, col: str):
    spec = COLUMN[col]
    if col == "name":
        return st.sampled_from(MANIFEST.names)
    if spec.enum is not None:
        return st.sampled_from(sorted(int(c) for c in ALLOWED.get((kind, col), spec.enum)))
    if spec.ref == "region":
        return st.integers(0, len(MANIFEST.regions) - 1)
    if col in RANK_FIELDS:
        return st.integers(0, MANIFEST.ranks - 1)
    slot = np.iinfo(RECORD_DTYPE[slot_of(kind, col)])
    lo, hi = column_range(col)  # the data range: no null sentinel, offsets the analyses address
    return st.integers(max(slot.min, lo), min(slot.max, hi))


@st.composite
def event(draw):
    kind = draw(st.sampled_from(list(Kind)))
    req, opt = FIELDS[kind]
    ev = {"rank": draw(st.integers(0, 1)), "core": draw(st.integers(0, 2)),
          "ts": draw(st.integers(0, 2**63 - 1)), "launch": draw(st.integers(-(2**31) + 1, 2**31 - 1)),
          "kind": int(kind)}
    for col in req:
        ev[col] = draw(_values(kind, col))
    for col in opt + COMMON_OPTIONAL:
        if draw(st.booleans()):
            ev[col] = draw(_values(kind, col))
    return ev


def _table(events: list[dict]) -> pa.Table:
    nxt: dict[tuple[int, int], int] = {}
    rows = []
    for ev in events:
        key = (ev["rank"], ev["core"])
        rows.append({**ev, "seq": nxt.get(key, 0)})
        nxt[key] = nxt.get(key, 0) + 1
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def _decode(tmp_path, data: bytes, name="dump.mtr"):
    p = tmp_path / name
    p.write_bytes(data)
    return p, read_ring_file(p, MANIFEST)


def _rows(chunks) -> list[dict]:
    return pa.concat_tables([c.table for c in chunks]).to_pylist()


def _by_core(rows):
    return sorted(rows, key=lambda r: (r["rank"], r["core"], r["seq"]))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(event(), min_size=1, max_size=80), capacity=st.one_of(st.none(), st.integers(1, 40)),
       full=st.booleans())
def test_round_trip(tmp_path, events, capacity, full):
    table = _table(events)
    path, chunks = _decode(tmp_path, encode_rings(table, MANIFEST, capacity=capacity, full=full))
    rows = _by_core(table.to_pylist())
    per_core: dict[tuple[int, int], list[dict]] = {}
    for r in rows:
        per_core.setdefault((r["rank"], r["core"]), []).append(r)
    want, lost = [], {}
    for key, evs in per_core.items():
        keep = evs if capacity is None else evs[-capacity:]
        want += keep
        if len(keep) < len(evs):
            lost[key] = len(evs) - len(keep)
    got = _rows(chunks)
    assert got == want  # rings in (rank, core) order, each oldest first
    assert {k: v for c in chunks for k, v in c.lost.items()} == lost
    assert sum(c.events_in for c in chunks) == len(events) == len(got) + sum(lost.values())
    # Every position points at a record whose seq_lo is its row's seq.
    raw = np.fromfile(path, np.uint8)
    pos = np.concatenate([c.positions for c in chunks])
    seq_lo = raw.view(np.uint32)[(pos + 8) // 4]
    assert (seq_lo == np.array([r["seq"] for r in got], np.uint32)).all()


def test_wrap_keeps_the_newest_and_counts_the_rest(tmp_path):
    table = _table([{"rank": 1, "core": 2, "ts": i, "launch": 0, "kind": int(Kind.WRITE), "region": 1,
                     "offset": i, "nbytes": 4, "value": i} for i in range(100)])
    data = encode_rings(table, MANIFEST, capacity=16)
    h = np.frombuffer(data[:HEADER_SIZE], HEADER_DTYPE)[0]
    assert (int(h["capacity"]), int(h["write_count"]), int(h["stored"])) == (16, 100, 16)
    _, chunks = _decode(tmp_path, data)
    (chunk,) = chunks
    assert chunk.lost == {(1, 2): 84} and chunk.events_in == 100
    got = chunk.table.to_pylist()
    assert [r["seq"] for r in got] == list(range(84, 100)) == [r["offset"] for r in got]
    # Slot order on disk: record i sits in slot i % 16, so the oldest survivor (84) is in slot 4.
    assert list(chunk.positions) == [HEADER_SIZE + RECORD_SIZE * (i % 16) for i in range(84, 100)]


def test_empty_ring_and_prefix_dump(tmp_path):
    # A ring that never wrote (W = 0) and stores its full capacity of garbage is fine.
    from ingest.rings import ring_header

    data = ring_header(0, 1, 8, 0) + b"\xa5" * (8 * RECORD_SIZE)
    _, chunks = _decode(tmp_path, data)
    assert sum(c.table.num_rows for c in chunks) == 0 and sum(c.events_in for c in chunks) == 0


def test_docs_block_matches_layout():
    from conftest import ROOT

    doc = ROOT / "docs" / "trace-format.md"
    if not doc.exists() or "<!-- binary:begin -->" not in doc.read_text():
        pytest.skip("docs/trace-format.md has no binary section yet")
    text = doc.read_text()
    block = text[text.index("<!-- binary:begin -->"):text.index("<!-- binary:end -->")]
    assert layout_markdown() in block


# --------------------------------------------------------------------------
# Bad input: every class names the file and the byte offset; the CLI exits 2
# and leaves no dataset.
# --------------------------------------------------------------------------


def _good() -> bytes:
    evs = [{"rank": r, "core": c, "ts": 10 * i, "launch": 0, "kind": int(k), **f}
           for r in range(2) for c in range(2) for i, (k, f) in enumerate([
               (Kind.KERNEL_BEGIN, {"name": "dispatch"}),
               (Kind.PUT, {"engine": 0, "peer": 1, "region": 0, "offset": 64, "nbytes": 128}),
               (Kind.WAIT_BEGIN, {"region": 1, "offset": 3, "cmp": 0, "value": 1}),
               (Kind.KERNEL_END, {"name": "dispatch"})])]
    return encode_rings(_table(evs), MANIFEST)


RING = HEADER_SIZE + 4 * RECORD_SIZE  # bytes of one ring of _good()


def _rec(ring: int, i: int) -> int:
    return ring * RING + HEADER_SIZE + i * RECORD_SIZE


def _patch(data: bytes, at: int, value: bytes) -> bytes:
    return data[:at] + value + data[at + len(value):]


def _u(n, v):
    return int(v).to_bytes(n, "little", signed=v < 0)


_RO = {s: RECORD_DTYPE.fields[s][1] for s in RECORD_DTYPE.names}
_HO = {s: HEADER_DTYPE.fields[s][1] for s in HEADER_DTYPE.names}

BAD = {
    "bad magic": (lambda d: _patch(d, RING, b"NOPE!!"), RING, "bad magic"),
    "bad version": (lambda d: _patch(d, 2 * RING + _HO["version"], _u(2, 7)), 2 * RING + 6,
                    "unsupported ring version 7"),
    "record size": (lambda d: _patch(d, _HO["record_size"], _u(2, 128)), 8, "record/header size 128/64"),
    "torn record": (lambda d: d[:-10], _rec(3, 3), "record torn at the end of the dump"),
    "torn header": (lambda d: d + _good()[:20], 4 * RING, "ring header torn"),
    "missing records": (lambda d: d[:-RECORD_SIZE], _rec(3, 3), "records missing at the end"),
    "unknown kind": (lambda d: _patch(d, _rec(1, 2) + _RO["kind"], _u(1, 99)), _rec(1, 2), "unknown kind code 99"),
    "bad region": (lambda d: _patch(d, _rec(2, 1) + _RO["r0"], _u(2, 7)), _rec(2, 1),
                   "region id 7 unknown to the manifest's 3 regions"),
    "rank out of range": (lambda d: _patch(d, RING + _HO["rank"], _u(4, 2)), RING + 24,
                          "rank 2 outside the manifest's 2 ranks"),
    "core out of range": (lambda d: _patch(d, _HO["core"], _u(4, 3)), 28, "core 3 outside the manifest's 3 cores"),
    "seq mismatch": (lambda d: _patch(d, _rec(0, 2) + _RO["seq_lo"], _u(4, 7)), _rec(0, 2),
                     "record holds seq_lo 7 where record 2 belongs"),
    "enum not allowed": (lambda d: _patch(d, _rec(0, 1) + _RO["e0"], _u(1, 5)), _rec(0, 1),
                         "put: engine code 5 is not allowed"),
    "peer not a rank": (lambda d: _patch(d, _rec(3, 1) + _RO["h"], _u(2, 4)), _rec(3, 1),
                        "field 'peer' = 4 is not a rank"),
    "unknown name": (lambda d: _patch(d, _rec(1, 0) + _RO["u"], _u(4, 5)), _rec(1, 0),
                     "kernel name id 5 unknown to the manifest's 2 names"),
    "stored too few": (lambda d: _patch(d, _HO["stored"], _u(4, 2)), 32, "stores 2 records"),
    "huge write_count": (lambda d: _patch(d, RING + _HO["write_count"], _u(8, 1 << 63)), RING + 16,
                         "implausible write_count"),
    "zero capacity": (lambda d: _patch(d, _HO["capacity"], _u(4, 0)), 12, "ring capacity is 0"),
    "empty file": (lambda d: b"", 0, "empty ring dump"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_names_file_and_byte(tmp_path, case):
    corrupt, offset, needle = BAD[case]
    p = tmp_path / "bad.mtr"
    p.write_bytes(corrupt(_good()))
    with pytest.raises(TraceError) as ei:
        read_ring_file(p, MANIFEST)
    err = ei.value
    assert err.path == str(p) and err.where == f"byte {offset}", (str(err), offset)
    assert needle in err.message, err.message


@pytest.mark.parametrize("case", ["bad magic", "torn record", "unknown kind", "bad region", "rank out of range",
                                  "seq mismatch", "bad version"])
def test_cli_exits_2_and_leaves_no_dataset(tmp_path, case):
    corrupt, offset, needle = BAD[case]
    trace = tmp_path / "trace"
    trace.mkdir()
    MANIFEST.dump(trace / "manifest.json")
    (trace / "good.mtr").write_bytes(_good())
    (trace / "bad.mtr").write_bytes(corrupt(_good()))
    out = tmp_path / "ds"
    res = run_cli("ingest", str(trace), "-o", str(out), "--no-progress")
    assert res.code == 2, (res.code, res.stdout, res.stderr)
    err = res.stderr.strip()
    assert "\n" not in err and "Traceback" not in res.stderr
    assert f"bad.mtr:byte {offset}: " in err and needle in err, err
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ds")]


def test_good_dump_ingests(tmp_path):
    trace = tmp_path / "trace"
    trace.mkdir()
    MANIFEST.dump(trace / "manifest.json")
    (trace / "good.mtr").write_bytes(_good())
    res = run_cli("ingest", str(trace), "-o", str(tmp_path / "ds"), "--no-progress")
    assert res.code == 0, res.stderr
    assert "16 rows from 16 events in, 0 lost" in res.stdout


def test_encoder_refuses_what_a_ring_cannot_hold():
    put = {"rank": 0, "core": 0, "seq": 0, "ts": 1, "launch": 0, "kind": int(Kind.PUT), "engine": 0, "peer": 1,
           "region": 0, "offset": 0}
    with pytest.raises(ValueError, match="lacks required nbytes"):
        encode_rings(pa.Table.from_pylist([put], schema=SCHEMA), MANIFEST)
    with pytest.raises(ValueError, match="out of range"):
        encode_rings(pa.Table.from_pylist([{**put, "nbytes": 2**40}], schema=SCHEMA), MANIFEST)
    with pytest.raises(ValueError, match="seq must run 0..n-1"):
        encode_rings(pa.Table.from_pylist([{**put, "nbytes": 4, "seq": 5}], schema=SCHEMA), MANIFEST)


def test_batches_of_rings_decode_the_same(tmp_path, monkeypatch):
    import ingest.rings as rings

    data = encode_rings(_table([{"rank": r, "core": c, "ts": i, "launch": 1, "kind": int(Kind.QUIET), "engine": 5}
                                for i in range(7) for r in range(2) for c in range(3)]), MANIFEST, capacity=4)
    _, whole = _decode(tmp_path, data)
    import ingest.ring_columns as ring_columns

    monkeypatch.setattr(rings, "_BATCH", 5)
    monkeypatch.setattr(ring_columns, "_BLOCK", 3)  # the careful decoder's slot copies, 3 records at a time
    path, parts = _decode(tmp_path, data, "again.mtr")
    for parts in (parts, read_ring_file(path, MANIFEST, careful=True)):
        assert len(whole) == 1 and len(parts) == 3  # rings of 4 survivors, batches of >= 5
        assert _rows(parts) == _rows(whole)
        assert np.array_equal(np.concatenate([c.positions for c in parts]), whole[0].positions)
        assert sum(c.events_in for c in parts) == 42 and sum(sum(c.lost.values()) for c in parts) == 18
