"""Linear on any trace: the work of a diagnosis grows with the trace, not with groups x rows.

The trace is bench/ingest_bench.py's synthetic one (follows no protocol: every
ready flag is left set, counts disagree; thousands of findings per launch),
made small (one token a core). Doubling its launches must about double the
work: elements touched by numpy and Python lines run in rules/ and analyzer/
(tests/_work_counter.py), never time. A loop over groups that masks the whole
array per group (``idx[g == gid]``), or a scan of every finding per finding,
makes the ratio grow with the trace instead.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from _work_counter import ROOT, counting
from analyzer.engine import diagnose
from ingest.rings import write_ring_file
from ingest.run import ingest

sys.path.insert(0, str(ROOT / "bench"))
import ingest_bench as ib  # noqa: E402


TOKENS = 8  # per rank and launch: one a core, the smallest trace with every part of the pattern
LAUNCHES = 6


def _synthetic(tmp, launches: int):
    """The bench generator at 16 ranks x 8 cores, TOKENS tokens a rank, ``launches`` launches."""
    src = tmp / f"mtr{launches}"
    src.mkdir()
    m = ib.manifest()
    for rank in range(ib.P):
        rng = np.random.default_rng(rank)
        parts = [ib._blocks(rng, rank, c, launches) for c in range(ib.CORES)]
        write_ring_file(src / f"rank{rank:02d}.mtr", {c: np.concatenate([p[c] for p in parts]) for c in parts[0]}, m)
    m.dump(src / "manifest.json")
    out = tmp / f"ds{launches}"
    ingest([src], out)
    return out


def _work(monkeypatch, dataset) -> tuple[int, int]:
    with counting(monkeypatch) as tally:
        report = diagnose(dataset)
    return tally.total, report.counts()["findings"]  # every finding, listed or not


def test_work_grows_linearly_with_the_trace(tmp_path, monkeypatch):
    monkeypatch.setattr(ib, "TOKENS", TOKENS)
    diagnose(_synthetic(tmp_path, 1))  # imports and kernels loaded outside the count
    small, big = _synthetic(tmp_path, LAUNCHES), _synthetic(tmp_path, 2 * LAUNCHES)
    w1, n1 = _work(monkeypatch, small)
    w2, n2 = _work(monkeypatch, big)
    assert n2 >= 1.9 * n1 > 1000  # a trace with many findings
    # Twice the trace, about twice the work (a quadratic step makes this ~3x here and grows).
    assert w2 / w1 < 2.3, (w1, w2, w2 / w1)
