"""A view holds no column that is null on every one of its rows (``rules._view_columns``).

A field of a kind the window lacks (a put_signal's signal word) is never read;
an optional field nobody recorded (a put's local source) is read once and
dropped. Rules see the same values as before: ``col`` makes the nulls when a
rule asks for the whole column, ``carried`` hands a kernel that reads it only
at rows of a kind that carries it a one-element stand-in, and the whole run
of every rule finds what it found when every column was held.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ingest.contract import COLUMN, Kind
from rules import registry, runner
from rules.base import expand
from rules.trace import TraceView

CORPUS = Path(__file__).parent / "corpus"
SIGNAL_WORD = ("sig_region", "sig_offset")


def _view(name: str, tmp_path: Path) -> TraceView:
    from ingest.run import ingest

    ingest([CORPUS / name], tmp_path / "ds")
    view = TraceView.open(tmp_path / "ds")
    view.prefetch()
    return view


def _hits(view: TraceView) -> dict:
    out = runner.run(view, list(registry().values()))
    return {code: [(h.key, h.message, h.rows) for h in expand(found)] for code, found in out.items()}


def test_a_window_without_put_signal_holds_no_signal_word_and_no_unrecorded_source(tmp_path):
    view = _view("classic_barrier_all_cores_clean", tmp_path)
    kind = view["kind"]
    assert not (kind == Kind.PUT_SIGNAL).any() and (kind == Kind.PUT).any()
    _hits(view)  # every rule and shared analysis, the word table and the wait-for tables included
    for name in (*SIGNAL_WORD, "local_region", "local_offset"):
        assert name not in view.loaded and view.all_null(name), (name, view.loaded)
    stand_in = view.carried("sig_offset")
    assert stand_in.tolist() == [COLUMN["sig_offset"].numpy_null] and stand_in.dtype == np.int64
    whole = view["local_offset"]  # asked for in full: made, not read
    assert len(whole) == view.n and (whole == COLUMN["local_offset"].numpy_null).all()
    assert whole is view["local_offset"]


@pytest.mark.parametrize("name", ["classic_barrier_all_cores_clean", "fused_deliver_over_capacity"])
def test_every_rule_finds_the_same_with_every_column_held(name, tmp_path):
    lean = _view(name, tmp_path)
    full = TraceView(lean.dataset)
    full._cols = lean.dataset.arrays([n for n, spec in COLUMN.items() if spec.type != COLUMN["name"].type])
    assert _hits(lean) == _hits(full)
    if name.startswith("fused"):  # put_signal present: its signal word is a column like any other
        assert all(len(lean.carried(n)) == lean.n for n in SIGNAL_WORD)
