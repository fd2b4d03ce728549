"""Blocks and windows: a large trace read and diagnosed a few launches at a time.

The writer cuts a trace into blocks of whole launches and gives every
(core, block) run its own row group; the reader returns any window of blocks
in dataset order; the engine diagnoses window by window and must say what it
says about the whole trace (windows.py names where it may not).  The
simulated traces here are tiny, so they are cut with ``block_events=1``
(every launch a block) and diagnosed with ``window_events=1`` (every block a
window): the most boundaries a trace can have.
"""

from __future__ import annotations

import gc
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from analyzer.config import Config, ConfigError, parse_config
from analyzer.engine import diagnose
from analyzer.windows import plan
from ingest.contract import COLUMNS
from ingest.dataset import Dataset
from ingest.ingest_report import Block
from ingest.run import ingest
from ingest.writer import write_events
from kernels import Params, Recording, simulate

SMALL = dict(ranks=4, cores=2, tokens=8, topk=2, hidden=4, local_experts=2)


def _blocked(tmp, protocol="classic", faults=(), seed=0, rounds=4, cap=None):
    simulate(protocol, Params(rounds=rounds, **SMALL), faults=list(faults), seed=seed, out=tmp / "sim",
             recording=Recording(ring_capacity=cap))
    ingest([tmp / "sim" / "dataset"], tmp / "blk", block_events=1)
    return tmp / "sim" / "dataset", tmp / "blk"


def _signature(report) -> set:
    by_id = {f.id: f for f in report.findings}
    return {(f.code, json.dumps(f.key), f.message, f.severity, f.confidence, f.is_root,
             tuple(sorted((by_id[c].code, json.dumps(by_id[c].key)) for c in f.caused_by)))
            for f in report.findings}


# ---- planning ----------------------------------------------------------------
def _blocks(*sizes):
    return [Block(2 * i, 2 * i + 1, n) for i, n in enumerate(sizes)]


def test_small_or_unblocked_trace_is_one_window():
    assert [w.blocks for w in plan([], 10, 100)] == [None]
    assert [w.blocks for w in plan(_blocks(5, 5), 10, 10)] == [None]


def test_windows_are_evened_out():
    wins = plan(_blocks(*[1] * 10), 8, 10)
    assert [w.launch_hi - w.launch_lo + 1 for w in wins] == [10, 10]  # 5 blocks of 2 launches each


def test_windows_own_every_launch_once_and_read_one_block_around():
    blocks = _blocks(4, 4, 4, 4, 4, 9, 1)
    wins = plan(blocks, 8, sum(b.events for b in blocks))
    owned = [L for w in wins for L in range(w.launch_lo, w.launch_hi + 1)]
    assert owned == list(range(2 * len(blocks)))
    for w in wins:
        main = [k for k, b in enumerate(blocks) if w.launch_lo <= b.launch_lo <= w.launch_hi]
        assert w.read_lo == max(main[0] - 1, 0) and w.read_hi == min(main[-1] + 2, len(blocks))
        assert sum(blocks[k].events for k in main) <= 8 + 9  # the budget, give or take a block
        assert w.events == sum(b.events for b in blocks[w.read_lo:w.read_hi])
    assert [w.last for w in wins] == [False] * (len(wins) - 1) + [True]


def test_windows_read_as_little_as_they_can():
    """The largest window read (main blocks and one block either side) is the least of any cut into
    as many windows: evening the main blocks alone made a middle window read two blocks of context
    more than the others (checked against every cut of small traces)."""
    from itertools import combinations

    def largest(sizes, cuts):
        n = len(sizes)
        return max(sum(sizes[max(a - 1, 0):min(b + 1, n)]) for a, b in zip(cuts[:-1], cuts[1:]))

    rng = np.random.default_rng(0)
    for _ in range(200):
        sizes = rng.integers(1, 20, rng.integers(2, 9)).tolist()
        budget = int(rng.integers(1, sum(sizes)))
        wins = plan(_blocks(*sizes), budget, sum(sizes))
        count = min(-(-sum(sizes) // budget), len(sizes))
        assert len(wins) == count
        cuts = [0] + [w.read_lo + (w.read_lo > 0) for w in wins[1:]] + [len(sizes)]
        best = min(largest(sizes, [0, *inner, len(sizes)]) for inner in combinations(range(1, len(sizes)), count - 1))
        assert largest(sizes, cuts) == max(w.events for w in wins) == best, (sizes, budget)
    # 19 equal blocks in three windows: main blocks evened (6, 7, 6) read 7, 9 and 7 blocks
    wins = plan(_blocks(*[1] * 19), 7, 19)
    assert max(w.events for w in wins) == 8 and len(wins) == 3


# ---- the dataset ---------------------------------------------------------------
def test_blocks_cover_the_trace_and_windows_read_exactly_their_launches(tmp_path):
    whole, blk = _blocked(tmp_path)
    ds, ref = Dataset(blk), Dataset(whole)
    assert len(ref.blocks) == 0 and len(ds.blocks) == 4  # small: one block; cut: a launch each
    names = [c.name for c in COLUMNS if c.name != "name"]
    full = ref.arrays(names)
    assert sum(b.events for b in ds.blocks) == len(full["kind"])
    for c in names:  # the whole read of a blocked dataset is the same rows in the same order
        np.testing.assert_array_equal(ds.arrays([c])[c], full[c])
    for k0 in range(4):
        for k1 in range(k0 + 1, 5):
            lo, hi = ds.blocks[k0].launch_lo, ds.blocks[k1 - 1].launch_hi
            m = (full["launch"] >= lo) & (full["launch"] <= hi)
            got = ds.arrays(names, blocks=(k0, k1))
            for c in names:
                np.testing.assert_array_equal(got[c], full[c][m], err_msg=f"{c} in blocks {k0}..{k1}")
    with pytest.raises(ValueError):
        ds.arrays(["kind"], blocks=(2, 9))


def test_row_groups_never_straddle_a_block(tmp_path):
    _, blk = _blocked(tmp_path)
    ds = Dataset(blk)
    his = np.array([b.launch_hi for b in ds.blocks])
    for p in ds.files.values():
        f = pq.ParquetFile(p)
        for g in range(f.num_row_groups):
            t = f.read_row_group(g, columns=["core", "launch"])
            assert len(np.unique(t.column("core").to_numpy())) == 1
            assert len(np.unique(np.searchsorted(his, t.column("launch").to_numpy()))) == 1


def test_blocks_of_per_rank_dumps_are_estimated_from_the_first_and_counted_exactly(tmp_path):
    from ingest.ring_encode import write_ring_file

    whole, _ = _blocked(tmp_path, rounds=4)
    ref = Dataset(whole)
    rings = tmp_path / "rings"
    rings.mkdir()
    shutil.copy(whole / "manifest.json", rings / "manifest.json")
    for r in ref.ranks:  # one dump per rank, as devices write them
        write_ring_file(rings / f"rank{r}.mtr", ref.table(ranks=[r]), ref.manifest)
    ingest([rings], tmp_path / "from_rings", block_events=1000)
    ds = Dataset(tmp_path / "from_rings")
    full = ref.arrays(["rank", "core", "seq", "launch"])
    assert len(ds.blocks) >= 2
    assert sum(b.events for b in ds.blocks) == len(full["seq"])
    for k, b in enumerate(ds.blocks):
        m = (full["launch"] >= b.launch_lo) & (full["launch"] <= b.launch_hi)
        assert m.sum() == b.events
        np.testing.assert_array_equal(ds.arrays(["seq"], blocks=(k, k + 1))["seq"], full["seq"][m])


def test_window_read_of_a_file_written_without_cuts_is_still_right(tmp_path):
    whole, blk = _blocked(tmp_path)
    ds = Dataset(blk)
    p = ds.files[1]
    write_events(pq.read_table(p, partitioning=None), p)  # one row group spanning every block
    ref = Dataset(whole).arrays(["rank", "seq", "launch"], ranks=[1])
    got = Dataset(blk).arrays(["rank", "seq", "launch"], ranks=[1], blocks=(1, 3))
    m = (ref["launch"] >= ds.blocks[1].launch_lo) & (ref["launch"] <= ds.blocks[2].launch_hi)
    np.testing.assert_array_equal(got["seq"], ref["seq"][m])


# ---- diagnose ------------------------------------------------------------------
CASES = [
    ("classic", ("count-not-reset",)),
    ("classic", ("invalid-expert",)),
    ("classic", ("missing-quiet",)),
    ("doubleplane", ("ready-not-reset", "count-not-reset")),
    ("fused", ("capacity-skew",)),
    ("reduce_scatter", ("atomic-none-early",)),
    ("reduce_scatter", ("rank-stop",)),
    ("sdma_fallback", ("same-chunk",)),
    ("udma_atomic", ("wrong-engine-quiet",)),
    ("generation", ("generation-eq",)),
    ("classic", ()),
]


@pytest.mark.parametrize("protocol,faults", CASES, ids=[f"{p}-{'-'.join(f) or 'clean'}" for p, f in CASES])
def test_windowed_diagnosis_equals_the_whole(tmp_path, protocol, faults):
    whole, blk = _blocked(tmp_path, protocol, faults, seed=1)
    a = diagnose(whole)
    b = diagnose(blk, Config(window_events=1))
    assert len(Dataset(blk).blocks) >= 2  # a hang ends the trace in the round it strikes
    sa, sb = _signature(a), _signature(b)
    if protocol == "generation":  # MT204 counts the eq waits of a site in the window it reports from
        sa, sb = ({x[:2] + x[3:] for x in s} for s in (sa, sb))
    assert sa == sb
    assert b.trace.events == a.trace.events


def test_windowed_diagnosis_of_a_wrapped_trace_equals_the_whole(tmp_path):
    whole, blk = _blocked(tmp_path, "classic", ("count-not-reset",), seed=2, rounds=4, cap=400)
    a, b = diagnose(whole), diagnose(blk, Config(window_events=1))
    assert a.trace.partial and b.trace.lost == a.trace.lost
    assert _signature(a) == _signature(b)


def test_windows_free_their_views(tmp_path):
    from rules.trace import TraceView

    _, blk = _blocked(tmp_path, "classic", ("invalid-expert",))
    diagnose(blk, Config(window_events=1))
    gc.collect()
    assert not [o for o in gc.get_objects() if isinstance(o, TraceView)]


def _reads_around_the_link(monkeypatch, blk, what):
    """Diagnose ``blk`` in one-block windows, recording ``what(columns, blocks)`` of every read of the
    dataset: (report, the reads while the rules ran, the reads after them)."""
    import analyzer.engine as engine

    reads: list = []
    done: list[int] = []
    arrays, link = Dataset.arrays, engine.link

    def counted(self, names, blocks=None, nulls=None):
        reads.append(what(names, blocks))
        return arrays(self, names, blocks=blocks, nulls=nulls)

    def marked(drafts):
        done.append(len(reads))
        return link(drafts)

    monkeypatch.setattr(Dataset, "arrays", counted)
    monkeypatch.setattr(engine, "link", marked)
    report = diagnose(blk, Config(window_events=1))
    return report, reads[:done[0]], reads[done[0]:]


def test_the_last_windows_evidence_is_not_read_again(tmp_path, monkeypatch):
    """The listed findings of the last window are described from its columns, kept past the rules
    (without the stages' results); only an earlier window's findings make it read a window again.
    Here every finding lies in the last window (the stop ends the trace there): once the rules are
    done, no column is read again (only one the rules never asked for, a kernel's name)."""
    _, blk = _blocked(tmp_path, "reduce_scatter", ("rank-stop",), seed=1)
    report, during, after = _reads_around_the_link(monkeypatch, blk, lambda names, blocks: list(names))
    windows = plan(Dataset(blk).blocks, 1, report.trace.events)
    assert len(windows) >= 2 and report.findings
    assert all(windows[-1].owns(f.location.launch) and f.evidence for f in report.findings)
    again = {n for names in after for n in names} & {n for names in during for n in names}
    assert not again, after


def test_a_window_with_many_findings_hands_its_memory_back(tmp_path, monkeypatch):
    """The trim after a window counts its findings, a batch of hits as its members: counted as
    pieces (a rule's batch is one), a window of hundreds of thousands of findings never reached it
    and each window's read grew the heap past the last one's drafts."""
    import analyzer.window_run as W
    import ingest._allocator as allocator
    from analyzer.draft import Draft
    from rules import registry

    ingest([Path(__file__).parent / "corpus" / "classic_cut_after_reset"], tmp_path / "ds")
    ds = Dataset(tmp_path / "ds")
    window = plan(ds.blocks, Config().window_events, ds.num_rows())[0]
    trims: list[int] = []
    monkeypatch.setattr(allocator, "trim", lambda: trims.append(1))
    out, _ = W.run_window(ds, window, Config(), list(registry().values()), None)
    findings = sum(1 if isinstance(p, Draft) else len(p) for p in out)
    assert len(out) < findings and not trims  # fewer findings than the threshold: memory kept
    monkeypatch.setattr(W, "_TRIM_FROM", findings)
    W.run_window(ds, window, Config(), list(registry().values()), None)
    assert trims == [1]


def test_window_events_must_be_positive():
    with pytest.raises(ConfigError, match="window-events"):
        parse_config({"window-events": 0}, "moetrace.toml")
    assert parse_config({"window-events": 5}).window_events == 5
    with pytest.raises(ConfigError, match="--window-events"):
        Config().with_overrides(window_events=-1)


def test_parallel_windows_say_the_same(tmp_path):
    whole, blk = _blocked(tmp_path, "classic", ("count-not-reset",), seed=1)
    serial = diagnose(blk, Config(window_events=1))
    parallel = diagnose(blk, Config(window_events=1, jobs=2))
    assert [f.to_json() for f in parallel.findings] == [f.to_json() for f in serial.findings]


def test_a_window_job_runs_alone_and_its_rule_errors_pickle(tmp_path):
    from analyzer.window_run import RuleError, window_job

    _, blk = _blocked(tmp_path, "classic", (), rounds=2)
    err = RuleError("MT101", ValueError("boom"))
    again = pickle.loads(pickle.dumps(err))
    assert (again.code, str(again)) == ("MT101", str(err))
    with pytest.raises(ConfigError):
        Config().with_overrides(jobs=0)
    assert window_job(str(blk), plan(Dataset(blk).blocks, 1, 0)[0], Config(), ["MT501"]) == []


def test_trace_errors_cross_processes():
    from ingest.errors import TraceError

    e = pickle.loads(pickle.dumps(TraceError("x.jsonl", "line 3", "bad kind")))
    assert str(e) == "x.jsonl:line 3: bad kind"


def test_describing_an_earlier_windows_evidence_infers_nothing(tmp_path, monkeypatch):
    """A listed finding of an earlier window is described from that window read again: its rows'
    fields and site names (declared, never inferred), not the manifest inference of the rules, which
    reads and scans the whole window (2.3 s of a 20 M many-findings diagnose's evidence step)."""
    import rules.analysis.inference as inference

    _, blk = _blocked(tmp_path, "classic", ("count-not-reset",), seed=1)
    calls: list[int] = []
    infer = inference.infer
    monkeypatch.setattr(inference, "infer", lambda trace: calls.append(1) or infer(trace))
    report = diagnose(blk, Config(window_events=1))
    windows = plan(Dataset(blk).blocks, 1, report.trace.events)
    assert any(not windows[-1].owns(f.location.launch) for f in report.findings)  # one is read again
    assert all(f.evidence for f in report.findings)
    assert len(calls) == len(windows)  # once per window's rules, none for the evidence


def test_an_earlier_window_read_again_for_its_evidence_reads_its_rows_alone(tmp_path, monkeypatch):
    """The evidence of an earlier window's listed findings is read once per window, and only at
    their rows (``Dataset.take``, the row groups holding them), not the window's columns again."""
    _, blk = _blocked(tmp_path, "classic", ("count-not-reset",), seed=1)
    taken: list = []
    take = Dataset.take

    def counted(self, names, rows, blocks=None):
        taken.append((blocks, len(rows)))
        return take(self, names, rows, blocks=blocks)

    monkeypatch.setattr(Dataset, "take", counted)
    report, _, after = _reads_around_the_link(monkeypatch, blk, lambda names, blocks: blocks)
    windows = plan(Dataset(blk).blocks, 1, report.trace.events)
    again = {w.blocks for w in windows[:-1] if any(w.owns(f.location.launch) for f in report.findings)}
    assert again and {b for b, _ in taken} == again and len(taken) == len(again)
    assert not set(after) & again, after  # no whole window read again
    rows = sum(len(f.evidence) for f in report.findings)
    assert all(0 < n <= rows for _, n in taken)
    assert all(f.evidence for f in report.findings)


def test_take_reads_what_arrays_reads_at_those_rows(tmp_path):
    """``Dataset.take`` gives each column's values at the rows asked, as the whole read does, for
    every block window (strings and nulls included)."""
    from ingest.contract import COLUMNS

    _, blk = _blocked(tmp_path, "classic", ("count-not-reset",), seed=1)
    ds = Dataset(blk)
    names = [c.name for c in COLUMNS]
    rng = np.random.default_rng(3)
    for w in plan(ds.blocks, 1, ds.num_rows()):
        whole = ds.arrays(names, blocks=w.blocks)
        n = len(whole["kind"])
        for rows in (np.arange(0), np.array([0, n - 1]), np.unique(rng.integers(0, n, 40))):
            got = ds.take(names, rows, blocks=w.blocks)
            for name in names:
                assert got[name].tolist() == whole[name][rows].tolist(), (w.blocks, name)


def test_a_window_reads_the_columns_only_evidence_names_when_it_describes_a_row(tmp_path):
    """ts and epoch: no rule reads them in bulk (never order by ts), so a window's read leaves them out,
    and the first row described reads both, whole and as the dataset holds them."""
    from rules.trace import EVIDENCE_ONLY, TraceView

    _, blk = _blocked(tmp_path, "classic", ("count-not-reset",), seed=1)
    ds = Dataset(blk)
    w = plan(ds.blocks, 1, ds.num_rows())[1]
    view = TraceView(ds, blocks=w.blocks)
    view.prefetch()
    assert set(EVIDENCE_ONLY) == {"ts", "epoch"} and not set(EVIDENCE_ONLY) & set(view.loaded)
    row = view.n // 2
    described = view.describe(row)
    # read, and held unless null on every row of the window (the simulator records no epoch)
    assert all(name in view.loaded or view.all_null(name) for name in EVIDENCE_ONLY), view.loaded
    assert "ts" in view.loaded and view.all_null("epoch") and "epoch" not in view.loaded
    whole = ds.arrays(["ts"], blocks=w.blocks)["ts"]
    assert described["ts"] == int(whole[row]) and view["ts"].tolist() == whole.tolist()
