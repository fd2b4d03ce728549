"""The writer lets a rank's rows go once they are encoded and no later input can hold more of them.

Ring dumps say which ranks they hold; a rank no later dump holds is sealed after its dump is added,
and the dataset is the one written when every rank's rows stay until commit.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import ingest.run as run
from ingest.errors import TraceError
from ingest.ingest_report import SourceReport
from ingest.rings import encode_rings
from ingest.writer import DatasetWriter
from test_rings import MANIFEST, _table


def _events(rank: int, n: int, cores=(0, 1, 2)) -> list[dict]:
    return [{"rank": rank, "core": cores[i % len(cores)], "ts": i, "launch": i // 7, "kind": 11, "region": 0,
             "offset": i, "nbytes": 4, "value": i} for i in range(n)]


def _trace(tmp_path: Path, files: dict[str, list[int]]) -> Path:
    """Ring dumps, each holding rows of its ranks: a rank in several dumps has one core in each."""
    trace = tmp_path / "trace"
    trace.mkdir()
    MANIFEST.dump(trace / "manifest.json")
    seen: dict[int, int] = {}
    for name, ranks in files.items():
        rows = []
        for r in ranks:
            rows += _events(r, 50 + 10 * r, cores=(seen.get(r, 0),))
            seen[r] = seen.get(r, 0) + 1
        (trace / name).write_bytes(encode_rings(_table(rows), MANIFEST))
    return trace


def _files(ds: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ds)): p.read_bytes() for p in sorted(ds.rglob("*")) if p.is_file()}


def test_sealed_ranks_give_the_dataset_of_an_unsealed_write(tmp_path, monkeypatch):
    trace = _trace(tmp_path, {"a.mtr": [0], "b.mtr": [1, 0]})
    run.ingest([trace], tmp_path / "sealed")
    monkeypatch.setattr(run, "_seal_after", lambda sources, manifest: [set() for _ in sources])
    run.ingest([trace], tmp_path / "kept")
    assert _files(tmp_path / "sealed") == _files(tmp_path / "kept")


def test_only_ranks_no_later_input_holds_are_sealed(tmp_path):
    trace = _trace(tmp_path, {"a.mtr": [0], "b.mtr": [1, 0], "d.mtr": [1]})
    from ingest.sources import resolve

    manifest, sources = resolve([trace])
    assert run._seal_after(sources, manifest) == [set(), {0}, {1}]
    # An input that does not say which ranks it holds (JSON lines) seals nothing before it.
    jsonl = sources[0].__class__(trace / "c.jsonl", "jsonl", sources[0].manifest_path)
    assert run._seal_after([sources[0], jsonl, sources[2]], manifest) == [set(), set(), {1}]


def test_a_sealed_rank_lets_its_rows_go_once_encoded(tmp_path):
    writer = DatasetWriter(tmp_path / "ds", MANIFEST)
    for rank in (0, 1):
        writer.add(_table(_events(rank, 40)), SourceReport(f"r{rank}", "mtr"))
    writer.seal([0])
    if 0 in writer._spec:  # still encoding
        writer._spec[0][1].result()
        writer.seal([])  # a later call lets go what has been encoded since
    assert 0 not in writer._by_rank and 1 in writer._by_rank
    with pytest.raises(ValueError, match="after it was sealed"):
        writer.add(_table(_events(0, 3)), SourceReport("again", "mtr"))
    report = writer.commit()
    assert sum(c.rows for c in report.cores) == 80


def test_a_seq_error_of_a_sealed_rank_is_still_reported_at_commit(tmp_path):
    writer = DatasetWriter(tmp_path / "ds", MANIFEST)
    rows = _table(_events(0, 10))
    twice = pa.concat_tables([rows, rows])
    writer.add(twice, SourceReport("dup", "mtr"))
    writer.seal([0])
    with pytest.raises(TraceError, match="does not increase"):
        writer.commit()
    assert not (tmp_path / "ds").exists()
