"""The evidence resolver (``analyzer.evidence._resolve_rows``) against ``TraceView.describe``.

Findings build their evidence from the columns in bulk, grouped by which
fields of a row are null; each row must come out as ``describe`` gives it:
the same head, the same non-null fields in the same order, the same source and
location fields (``_first_places``, from which a finding is located). Checked on every row of several corpus traces (every kind
they hold, nulls included) and on repeated rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analyzer.draft import LOCATION_FIELDS
from analyzer.evidence import _resolve_rows
from analyzer.placement import _as_location, _first_places
from rules.trace import TraceView

CORPUS = Path(__file__).parent / "corpus"
TRACES = ("classic_invalid_expert_9", "rs_ring_wrap_lost_atomic_mode", "udma_amo_before_quiet", "fused_deliver_over_capacity")


@pytest.mark.parametrize("name", TRACES)
def test_resolved_rows_are_describe(name: str, tmp_path: Path) -> None:
    from ingest.run import ingest

    ingest([CORPUS / name], tmp_path / "ds")
    trace = TraceView.open(tmp_path / "ds")
    rows = np.concatenate((np.arange(trace.n), np.arange(trace.n)[::3]))  # repeats: one shared tuple each
    kinds = set()
    places = map(_as_location, _first_places(trace, rows))  # a finding's place, from its first row's columns
    for row, r, (place, seq) in zip(rows.tolist(), _resolve_rows(trace, rows), places):
        d = trace.describe(row)
        kinds.add(d["kind"])
        assert r[:4] == (d["rank"], d["core"], d["seq"], d["kind"])
        assert list(r[4].items()) == [(k, v) for k, v in d.items() if k not in ("rank", "core", "seq", "kind")]
        assert r[5] == trace.manifest.site_text(d.get("site"))
        assert place == {k: d[k] for k in LOCATION_FIELDS if k in d} and seq == d["seq"]
    assert len(kinds) > 3  # the trace exercised several kinds' field sets
