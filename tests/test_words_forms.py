"""The word table's packed form and its lexsort fallback build the same table.

The packed form is the one every bench trace takes; the fallback only runs
where the packed key would overflow, so without this test it would rot
unseen. Checked on every stale-flag fixture (the rules that read the table).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _rule_cases import FIXTURES, fixture_input

from rules.analysis import _words as W
from rules.analysis import _words_packed as WP
from rules.trace import TraceView

FIELDS = ("row", "region", "phase", "op", "value", "after", "last", "key_launch", "kind")


def _cases():
    for d in sorted(FIXTURES.glob("MT2*/*")):
        if d.is_dir():
            yield pytest.param(d, id=f"{d.parent.name}/{d.name}")


def _assert_packed_is_lexsort(fixture: Path, tmp_path: Path) -> None:
    """The packed word table of ``fixture``'s trace equals the general (lexsort) one, field by field."""
    from ingest.run import ingest

    ingest([fixture_input(fixture, tmp_path / "input")], tmp_path / "ds")
    trace = TraceView.open(tmp_path / "ds")
    packed, general = WP.build_packed(trace), W._build_lexsort(trace)
    if packed is None:  # nothing flag-like written: the general form is empty too
        assert len(general.row) == 0
        return
    assert (packed.launch_min, packed.launch_span) == (general.launch_min, general.launch_span)
    for f in FIELDS:
        a, b = getattr(packed, f), getattr(general, f)
        assert a.dtype == b.dtype, f
        np.testing.assert_array_equal(a, b, err_msg=f)


@pytest.mark.parametrize("fixture", list(_cases()))
def test_packed_matches_lexsort(fixture: Path, tmp_path: Path):
    _assert_packed_is_lexsort(fixture, tmp_path)


@pytest.mark.parametrize("fixture", list(_cases()))
def test_squeezed_keys_match_lexsort(fixture: Path, tmp_path: Path, monkeypatch):
    """The packed form over renumbered flag-like keys (taken where the trace's keys are too far
    apart to pack), forced on every fixture: the same table, keys decoded back exactly."""
    plain = WP._fit
    monkeypatch.setattr(WP, "_fit", lambda rows, waits, packing, strict, room:
                        plain(rows, waits, packing, strict, room) if strict else None)
    _assert_packed_is_lexsort(fixture, tmp_path)



# Corpus traces whose flags are written and waited on whole 32 B slots (the classic kernels), and one
# whose ring words pair up: the word table holds one entry per slot there (``_units``).
SLOT_TRACES = ("classic_count_not_reset", "classic_status_not_reset", "classic_cut_prefix",
               "two_off_by_one_and_invalid_expert", "unusual_pipeline_ring_gt_two_words")


def _one_entry_per_word(monkeypatch) -> None:
    def ones(trace):
        return np.ones(max(len(trace.manifest.regions), 1), np.int64)
    monkeypatch.setattr(W, "word_units", ones)
    monkeypatch.setattr(WP, "word_units", ones)


@pytest.mark.parametrize("name", SLOT_TRACES)
def test_one_entry_per_slot_reports_what_one_entry_per_word_does(name, monkeypatch):
    """Where a trace writes and waits on whole slots, a slot's words have one history: the table
    keeps one entry for them, and every finding (its words counted, its offsets named) is the one
    the table of an entry per word gives."""
    import json

    from analyzer.config import Config
    from analyzer.engine import diagnose
    from analyzer.report.json import to_json
    from analyzer.inputs import as_dataset
    from rules.analysis._units import word_units

    trace_dir = Path(__file__).parent / "corpus" / name
    with as_dataset(trace_dir) as ds:
        view = TraceView.open(ds)
        assert (word_units(view) > 1).any(), "the trace no longer has a region written in whole slots"
        slots = len(W.words(view).row)

    def report():
        out = to_json(diagnose(trace_dir, Config(max_findings=10**9)))
        out.pop("trace", None), out.pop("tool", None)
        return json.dumps(out, sort_keys=True, default=str)

    by_slot = report()
    _one_entry_per_word(monkeypatch)
    with as_dataset(trace_dir) as ds:
        assert len(W.words(TraceView.open(ds)).row) > slots
    assert report() == by_slot


@pytest.mark.parametrize("name", SLOT_TRACES[:2])
def test_packed_matches_lexsort_with_an_entry_per_slot(name, tmp_path):
    """The two forms agree where entries stand for whole slots too."""
    from analyzer.inputs import as_dataset

    with as_dataset(Path(__file__).parent / "corpus" / name) as ds:
        trace = TraceView.open(ds)
        packed, general = WP.build_packed(trace), W._build_lexsort(trace)
        assert (packed.unit > 1).any()
        for f in FIELDS:
            np.testing.assert_array_equal(getattr(packed, f), getattr(general, f), err_msg=f)
