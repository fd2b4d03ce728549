"""Round trip: random valid event streams -> JSON lines -> ingest -> query returns them unchanged."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import run_cli
from ingest.contract import ALLOWED, COLUMN, COMMON_OPTIONAL, FIELDS, Kind, json_name
from ingest.value_ranges import column_range
from _trace_files import manifest, write_trace

RANKS, CORES = 3, 2
DOC = manifest(ranks=RANKS, cores=CORES)
REGIONS = [r["name"] for r in DOC["regions"]]
RANK_FIELDS = {"peer", "dst_rank", "src_rank"}


def _value(kind: Kind, col: str):
    spec = COLUMN[col]
    if spec.enum is not None:
        allowed = ALLOWED.get((kind, col), frozenset(spec.enum))
        return st.sampled_from(sorted(spec.enum(c).wire for c in allowed))
    if spec.ref == "region":
        return st.sampled_from(REGIONS)
    if spec.type.equals(COLUMN["name"].type):
        return st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
    if col in RANK_FIELDS:
        return st.integers(0, RANKS - 1)
    lo, hi = column_range(col)  # the data range: no null sentinel, offsets the analyses address
    return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, -1]), st.integers(-5, 100))


@st.composite
def event_body(draw):
    kind = draw(st.sampled_from(list(Kind)))
    req, opt = FIELDS[kind]
    body = {"kind": kind.wire}
    for col in req:
        body[json_name(kind, col)] = draw(_value(kind, col))
    for col in opt + COMMON_OPTIONAL:
        if draw(st.booleans()):
            body[json_name(kind, col)] = draw(_value(kind, col))
    return body


@st.composite
def streams(draw):
    bodies = draw(st.lists(event_body(), min_size=1, max_size=40))
    files = draw(st.integers(1, 3))
    next_seq = {}
    events = []
    for body in bodies:
        rank, core = draw(st.integers(0, RANKS - 1)), draw(st.integers(0, CORES - 1))
        if (rank, core) not in next_seq:
            next_seq[(rank, core)] = draw(st.integers(-(2**62), 2**62))
        seq = next_seq[(rank, core)]
        next_seq[(rank, core)] = seq + draw(st.integers(1, 2**20))
        ev = {"rank": rank, "core": core, "seq": seq, "ts": draw(st.integers(-(2**63) + 1, 2**63 - 1)),
              "launch": draw(st.integers(-(2**31) + 1, 2**31 - 1)), **body}
        events.append((draw(st.integers(0, files - 1)), ev))
    gz = draw(st.lists(st.sampled_from([None, "gzip", "zstd"]), min_size=files, max_size=files))
    return files, gz, events


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams())
def test_events_round_trip_exactly(stream):
    files, comp, events = stream
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for i in range(files):
            suffix = {None: "", "gzip": ".gz", "zstd": ".zst"}[comp[i]]
            write_trace(tmp / "trace", [e for f, e in events if f == i], name=f"part{i}.jsonl{suffix}", doc=DOC,
                        compression=comp[i])
        res = run_cli("ingest", tmp / "trace", "-o", tmp / "ds", "--format", "json")
        assert res.code == 0, res.stderr
        report = json.loads(res.stdout)
        assert report["events_in"] == report["rows_out"] == len(events)
        q = run_cli("query", tmp / "ds", "select * from events order by rank, core, seq", "--format", "json")
        assert q.code == 0, q.stderr
    rows = json.loads(q.stdout)
    got = [{k: v for k, v in r.items() if v is not None and k != "site_text"} for r in rows]
    want = sorted((e for _, e in events), key=lambda e: (e["rank"], e["core"], e["seq"]))
    assert got == want


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(streams(), st.sampled_from(["", "\n", "   \n", '{"kind": "bogus"}\n', '{"rank": 0}{"rank": 1}\n']))
def test_fast_and_careful_readers_agree(stream, extra):
    # The vectorised path must accept exactly what the line-by-line path accepts, with the same rows.
    from ingest.errors import TraceError
    from ingest.jsonl import read_jsonl
    from ingest.manifest import Manifest

    _, _, events = stream
    m = Manifest.from_json(DOC)
    with tempfile.TemporaryDirectory() as tmp:
        p = write_trace(Path(tmp), [e for _, e in events], doc=DOC)
        with open(p, "a") as f:
            f.write(extra)
        results = []
        for fast in (True, False):
            try:
                c = read_jsonl(p, m, fast=fast)
                results.append((c.table, c.positions.tolist()))
            except TraceError as e:
                results.append(str(e))
    if isinstance(results[0], str):
        assert results[0] == results[1]
    else:
        assert results[0][0].equals(results[1][0]) and results[0][1] == results[1][1]
