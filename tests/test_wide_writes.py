"""A write's extent is a value in the trace: the shared tables stay linear in events whatever it is.

A 2^31-byte put into a flag region is two events; expanded a word per element it
was 2^29 table entries (19.6 GiB resident, four minutes). Each table now keeps
at most ``_words_table.widest`` words of one write, and the wait-for tables a wide
write's first slot and the slots waits name (so a stuck wait still finds it).
"""

from __future__ import annotations

import json
from pathlib import Path

from ingest.run import ingest
from rules.analysis import _words as W
from rules.analysis._waitfor_tables import Tables
from rules.analysis._words_table import widest
from rules.trace import TraceView

HUGE = 1 << 40  # the largest region ingest takes


def _trace(tmp_path: Path) -> TraceView:
    src = tmp_path / "src"
    src.mkdir()
    (src / "manifest.json").write_text(json.dumps({
        "format": "moetrace-trace/1", "ranks": 3, "cores": 1,
        "regions": [{"name": "out", "role": "output", "elem_bytes": 4, "length": HUGE},
                    {"name": "flag", "role": "flag", "elem_bytes": 4, "length": HUGE}]}))
    events = [
        {"rank": 0, "core": 0, "seq": 0, "ts": 1, "launch": 0, "kind": "put", "engine": "mte", "peer": 1,
         "region": "out", "offset": 0, "nbytes": 2**31 - 1},
        {"rank": 0, "core": 0, "seq": 1, "ts": 2, "launch": 0, "kind": "put", "engine": "mte", "peer": 1,
         "region": "flag", "offset": 0, "nbytes": 2**31 - 1},
        {"rank": 1, "core": 0, "seq": 0, "ts": 1, "launch": 0, "kind": "wait_begin", "region": "out",
         "offset": 0, "cmp": "ne", "value": 1},
        {"rank": 1, "core": 0, "seq": 1, "ts": 1, "launch": 0, "kind": "wait_begin", "region": "flag",
         "offset": 300000, "cmp": "ne", "value": 1},
    ]
    (src / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    ingest([src], tmp_path / "ds")
    return TraceView.open(tmp_path / "ds")


def test_tables_stay_linear_in_events(tmp_path):
    t = _trace(tmp_path)
    words = W.words(t)
    assert len(words.row) <= widest(t) + t.n
    tables = Tables(t, {0, 1})
    assert len(tables.w_row) <= 2 * (1 + t.n)
    # The wait beyond the kept words still finds the wide put as a write of its slot.
    flag = t.declared.region_id("flag")
    skey = int(tables.skey(1, flag, tables.slot_of(flag, 300000)))
    assert len(tables.writes_to(skey, 0)) == 1


def test_diagnose_of_a_wide_write_finds_the_stuck_wait(tmp_path):
    from analyzer.engine import diagnose

    report = diagnose(_trace(tmp_path).dataset.root)
    stuck = [f for f in report.findings if f.code == "MT101"]
    assert [(f.location.rank, f.location.region, f.location.offset) for f in stuck] == [(1, "flag", 300000)]
