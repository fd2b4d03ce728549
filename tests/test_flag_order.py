"""The flag-sync order (``rules.analysis._flag_edges.FlagOrder``) answers alike however it is asked.

It memoizes each answer by what the answer depends on, so one question's
work serves the next: a row asked about stands for every row of its core up
to the next write of a waited-on word, and each wait's verdict on its word's
writes is kept (on DeepEP's barrier of atomics over 16 ranks, the corpus
trace below, this took the race rules from ~20 s to ~5 s). A key that left
out something an answer depends on shows here: one instance asked every
question, in either order, must give what a fresh instance gives to each
question alone.
"""

from __future__ import annotations

import json
import shutil

from conftest import ROOT
from ingest.run import ingest
from rules.analysis._flag_edges import DEPTH, FlagOrder
from rules.analysis.word_table import word_table
from rules.trace import TraceView

CORPUS = ROOT / "tests" / "corpus" / "unusual_atomic_barrier_block_16"
MANIFEST = ROOT / "tests" / "fixtures" / "rules" / "manifests" / "rma_2x2.json"
QUESTIONS = 40


def _answer(order: FlagOrder, write: int, read: int) -> tuple[bool, bool]:
    return (any(order.needs_after(e, write, DEPTH) for e in order.waits_before(read, write)),
            order.before(write, read, DEPTH))


def _asked_alike(view, pairs) -> list[tuple[bool, bool]]:
    fresh = [_answer(FlagOrder(view), w, r) for w, r in pairs]
    forward = FlagOrder(view)
    assert [_answer(forward, w, r) for w, r in pairs] == fresh
    backward = FlagOrder(view)
    assert [_answer(backward, w, r) for w, r in reversed(pairs)][::-1] == fresh
    return fresh


def _view(events_dir, tmp_path) -> TraceView:
    ingest([events_dir], tmp_path / "ds")
    return TraceView.open(tmp_path / "ds")


def test_two_writes_of_one_core_around_its_signal(tmp_path):
    # Rank 1 writes workspace[0:8], signals done[1], writes workspace[8:16]; rank 0 waits on
    # done[1], then gets workspace[0:16]. The signal orders the first write before the get, not
    # the second: rows of one core on either side of a waited-on write are not alike.
    ev = [
        (1, 1, "write", dict(region="workspace", offset=0, nbytes=32, value=1)),
        (1, 2, "signal", dict(engine="mte", peer=0, region="done", offset=1, op="set", value=1)),
        (1, 3, "write", dict(region="workspace", offset=32, nbytes=32, value=2)),
        (0, 1, "wait_begin", dict(region="done", offset=1, cmp="eq", value=1)),
        (0, 2, "wait_end", dict(region="done", offset=1, observed=1)),
        (0, 3, "get", dict(engine="mte", peer=1, region="workspace", offset=0, nbytes=64,
                           local_region="d_out", local_offset=0)),
    ]
    src = tmp_path / "in"
    src.mkdir()
    shutil.copy(MANIFEST, src / "manifest.json")
    lines = [dict(rank=r, core=0, seq=0, ts=0, launch=0, kind="kernel_begin", name="k") for r in (0, 1)]
    lines += [dict(rank=r, core=0, seq=s, ts=100 * s, launch=0, kind=k, **f) for r, s, k, f in ev]
    lines += [dict(rank=r, core=0, seq=s, ts=100 * s, launch=0, kind="kernel_end", name="k") for r, s in ((0, 4), (1, 4))]
    (src / "events.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    view = _view(src, tmp_path)
    row = {(int(r), int(s)): i for i, (r, s) in enumerate(zip(view["rank"], view["seq"]))}
    pairs = [(row[1, 1], row[0, 3]), (row[1, 3], row[0, 3])]
    assert [a for a, _ in _asked_alike(view, pairs)] == [True, False]


def test_a_barrier_of_atomics_answers_alike(tmp_path):
    view = _view(CORPUS, tmp_path)
    reads, writes, _, _ = word_table(view).races()
    done = word_table(view).done_of(writes, False)  # where each write is done, as MT601 asks
    pairs = [(int(d), int(r)) for d, r in zip(done, reads) if d >= 0]
    pairs = pairs[::max(1, len(pairs) // QUESTIONS)][:QUESTIONS]
    assert len(pairs) == QUESTIONS
    pairs += [(r, w) for w, r in pairs]  # and the other way round: mostly not ordered
    answers = [a for pair in _asked_alike(view, pairs) for a in pair]
    assert any(answers) and not all(answers)
