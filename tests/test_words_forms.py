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

FIELDS = ("row", "region", "phase", "op", "value", "after", "last", "ck", "kind")


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
    assert (packed.lmin, packed.lspan) == (general.lmin, general.lspan)
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

