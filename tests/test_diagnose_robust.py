"""diagnose on small valid-but-weird traces: no signal, no hang, no runaway memory, no internal error.

Each trace runs in a subprocess with NUMBA_BOUNDSCHECK=1 (a kernel reading
out of bounds raises instead of corrupting memory) in text, json, sarif,
junit and html and with --window-events 1, under a time and a resident-memory bound
(tests/fuzz/diagnose_run.py). bench/diagnose_fuzz.py runs many more; the
crashes it found are the minimal inputs below.
"""

from __future__ import annotations

import random

import pytest

from fuzz import gen, weird
from fuzz.diagnose_run import diagnose


@pytest.mark.parametrize("shape", weird.SHAPES)
def test_weird_shape_diagnoses_cleanly(tmp_path, shape):
    c = gen.Chooser(random.Random(f"suite:{shape}"))
    ring = shape in ("64x1-huge", "3x3-random")  # all rings in one dump, as the issue saw them
    doc, evs = weird.trace(c, shape, ring)
    assert diagnose(weird.write(tmp_path / "t", doc, evs, ring), timeout=60) is None


WIDE_PUT_AND_WAIT = [
    # One put of 2^31-1 bytes into a 2^40-element output region, and a wait on that region:
    # found by bench/diagnose_fuzz.py (64x1-huge, seed 1, trace 4), shrunk from 64 events.
    {"rank": 0, "core": 0, "seq": 0, "ts": 1, "launch": 0, "kind": "put", "engine": "mte", "peer": 1,
     "region": "out", "offset": 0, "nbytes": 2**31 - 1},
    {"rank": 1, "core": 0, "seq": 0, "ts": 1, "launch": 0, "kind": "wait_begin", "region": "out", "offset": 0,
     "cmp": "ne", "value": 1},
]


WIDE_WRITE_AND_WAIT = [
    # A local write of 2^40 bytes and a later wait on the same region: MT101 raised MemoryError
    # (bench/diagnose_fuzz.py, launch-gaps, seed 2, trace 6, shrunk to these two events).
    {"rank": 1, "core": 0, "seq": 3, "ts": 130, "launch": 1073741824, "kind": "write", "region": "out", "offset": 31,
     "nbytes": 1 << 40, "value": 16, "site": -2147483647},
    {"rank": 1, "core": 0, "seq": 14, "ts": 240, "launch": 7, "kind": "wait_begin", "region": "out", "offset": 40,
     "cmp": "ge", "value": 7, "site": 11, "epoch": 1},
]


@pytest.mark.parametrize("events", [WIDE_PUT_AND_WAIT, WIDE_WRITE_AND_WAIT], ids=["put-2^31-bytes", "write-2^40-bytes"])
def test_wide_write_and_a_wait_diagnose_in_bounded_memory(tmp_path, events):
    doc = weird.manifest_doc(3, 1)
    assert diagnose(weird.write(tmp_path / "t", doc, events, False), timeout=60) is None


WIDE_WAIT = [
    # A wait on 2^31-1 words of a 32-word counter region, and its end: the word table made an
    # entry per word waited on and took every byte of the machine (bench/diagnose_fuzz.py,
    # 3x3-random, seed 91, trace 38, shrunk to these two events).
    {"rank": 0, "core": 2, "seq": 8, "ts": 180, "launch": 0, "kind": "wait_begin", "region": "counts", "offset": 0,
     "cmp": "le", "value": 28, "words": 2**31 - 1},
    {"rank": 0, "core": 2, "seq": 11, "ts": 210, "launch": 0, "kind": "wait_end", "region": "out", "offset": 5,
     "observed": 23, "outcome": "timeout", "site": -2},
]


def _wide_waits_among_writes() -> list[dict]:
    """Waits of 2^31-1 words on a flag region, on the output region and on the counters, amid
    signals into the flags and counters that they cover: the table's packed form and its general one."""
    events = []
    for rank in range(3):
        seq = 0
        for launch in range(2):
            for region, offset in (("flags", 8 * rank), ("counts", 0), ("out", 3)):
                events += [
                    {"rank": rank, "core": 0, "seq": seq, "ts": seq, "launch": launch, "kind": "signal",
                     "engine": "mte", "peer": (rank + 1) % 3, "region": region, "offset": offset, "op": "set",
                     "value": 1},
                    {"rank": rank, "core": 0, "seq": seq + 1, "ts": seq + 1, "launch": launch, "kind": "wait_begin",
                     "region": region, "offset": offset, "cmp": "eq", "value": 1, "words": 2**31 - 1},
                    {"rank": rank, "core": 0, "seq": seq + 2, "ts": seq + 2, "launch": launch, "kind": "wait_end",
                     "region": region, "offset": offset, "observed": 1, "outcome": "ok"}]
                seq += 3
    return events


@pytest.mark.parametrize("events", [WIDE_WAIT, _wide_waits_among_writes()], ids=["alone", "among-writes"])
def test_a_wait_on_two_billion_words_diagnoses_in_bounded_memory(tmp_path, events):
    doc = weird.manifest_doc(3, 3)
    assert diagnose(weird.write(tmp_path / "t", doc, events, False), timeout=60) is None


def test_a_lone_wait_end_with_no_flag_written_diagnoses(tmp_path):
    # MT201 raised IndexError: a completed wait with no entry in the word table at all (nothing
    # flag-like written) indexed the empty table (bench/diagnose_fuzz.py, shuffled-ts, seed 94,
    # trace 81, shrunk to this one event). A dump whose flag writes a ring wrap took is the same.
    events = [{"rank": 2, "core": 1, "seq": 1, "ts": 2**63 - 1, "launch": 0, "kind": "wait_end", "region": "out",
               "offset": 39, "observed": 25, "outcome": "ok", "epoch": -2}]
    assert diagnose(weird.write(tmp_path / "t", weird.manifest_doc(3, 3), events, False), timeout=60) is None


def _diagnose_in_process(tmp_path, doc: dict, events: list[dict]):
    from analyzer.config import Config
    from analyzer.engine import diagnose as run

    return run(weird.write(tmp_path / "t", doc, events, False), Config())


def test_mt501_on_routes_of_a_manifest_without_params(tmp_path):
    # Issue 14 class 3: "rule MT501 raised KeyError: 'topk'". A manifest need not state topk
    # (or any param); routes with an id out of every range are still MT501's evidence.
    doc = {k: v for k, v in weird.manifest_doc(2, 1).items() if k != "params"}
    events = [{"rank": 0, "core": 0, "seq": s, "ts": 1 + s, "launch": 0, "kind": "route", "token": 0, "topk": s,
               "expert": e, "dst_rank": d} for s, (e, d) in enumerate([(1, 0), (2**31 - 1, 9), (-5, 0)])]
    report = _diagnose_in_process(tmp_path, doc, events)
    assert {f.code for f in report.findings} >= {"MT501"}


def test_waits_at_launches_far_apart_and_huge_offsets(tmp_path):
    # Issue 14 class 3: "rule MT101 raised ValueError: array is too big" -- an allocation sized
    # from launch numbers with gaps and an offset near the region's end. Sizes come from row counts.
    doc = weird.manifest_doc(2, 1)
    big = doc["regions"][-1]["length"] - 1
    events = [
        {"rank": 0, "core": 0, "seq": 0, "ts": 5, "launch": 0, "kind": "wait_begin", "region": "out",
         "offset": big, "cmp": "ge", "value": 1},
        {"rank": 1, "core": 0, "seq": 0, "ts": 5, "launch": 2**31 - 1, "kind": "wait_begin", "region": "out",
         "offset": big, "cmp": "ge", "value": 1},
        {"rank": 1, "core": 0, "seq": 1, "ts": 6, "launch": 2**31 - 1, "kind": "put", "engine": "mte", "peer": 0,
         "region": "out", "offset": big, "nbytes": 2},
    ]
    report = _diagnose_in_process(tmp_path, doc, events)
    assert {f.code for f in report.findings} & {"MT101", "MT102", "MT103", "MT104", "MT105"}
