"""The ring decoder's fast path gives the careful decoder's verdict: the same rows, or the same error.

Valid dumps of every kind and field (``test_rings.event``) and the same dumps with bytes of their
records overwritten: the fast path may decline only a chunk the careful decoder refuses.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ingest.rings as rings
from ingest.errors import TraceError
from ingest.ring_layout import HEADER_SIZE, RECORD_SIZE
from test_rings import MANIFEST, _table, event


def _read(path, careful: bool):
    """Each chunk's table, positions and counts, or the error's text."""
    try:
        chunks = rings.read_ring_file(path, MANIFEST, careful=careful)
    except TraceError as e:
        return str(e)
    return [(c.table, c.positions.tolist(), c.lost, c.events_in) for c in chunks]


def _same(fast, careful) -> bool:
    if isinstance(fast, str) or isinstance(careful, str):
        return fast == careful
    return len(fast) == len(careful) and all(
        a[0].equals(b[0]) and a[1:] == b[1:] for a, b in zip(fast, careful))


@pytest.fixture
def asked(monkeypatch):
    """Whether the careful decoder ran, on each chunk the fast path was given."""
    calls: list[bool] = []
    real = rings.careful_columns

    def spy(*args):
        calls.append(True)
        return real(*args)

    monkeypatch.setattr(rings, "careful_columns", spy)
    return calls


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(events=st.lists(event(), min_size=1, max_size=60), capacity=st.one_of(st.none(), st.integers(1, 30)),
       hits=st.lists(st.tuples(st.integers(0, 10**6), st.integers(16, RECORD_SIZE - 1), st.integers(0, 255)),
                     max_size=3))
def test_fast_path_gives_the_careful_verdict(tmp_path, asked, events, capacity, hits):
    data = bytearray(rings.encode_rings(_table(events), MANIFEST, capacity=capacity))
    records = [off for off in range(0, len(data), RECORD_SIZE) if data[off:off + 6] != b"MTRACE"]
    for pick, byte, value in hits:  # a record's fields (past ts and seq_lo) overwritten
        if records:
            data[records[pick % len(records)] + byte] = value
    path = tmp_path / "dump.mtr"
    path.write_bytes(bytes(data))
    asked.clear()
    fast = _read(path, careful=False)
    fast_asked = bool(asked)
    careful = _read(path, careful=True)
    assert _same(fast, careful)
    if not isinstance(careful, str):
        assert not fast_asked, "the fast path declined a dump the careful decoder accepts"


def test_fast_path_declines_each_kind_of_bad_record(tmp_path, asked):
    """Each check the careful decoder words is one the fast path declines on (and nothing else)."""
    base = rings.encode_rings(_table([
        {"rank": 0, "core": 0, "ts": 5, "launch": 0, "kind": 2, "peer": 1, "region": 0, "offset": 8,
         "nbytes": 4, "engine": 0},
    ] * 3), MANIFEST)
    from ingest.ring_layout import RECORD_DTYPE

    def poke(slot: str, value: int) -> bytes:
        data = bytearray(base)
        rec = np.frombuffer(data, np.uint8)[HEADER_SIZE + RECORD_SIZE:HEADER_SIZE + 2 * RECORD_SIZE]
        rec.view(RECORD_DTYPE)[slot][0] = value
        return bytes(data)

    cases = {"seq_lo": 7, "kind": 250, "ts": np.iinfo(np.int64).min, "launch": np.iinfo(np.int32).min,
             "h": 9, "r0": 3, "x": 1 << 41, "e0": 31}
    for slot, value in cases.items():
        path = tmp_path / f"{slot}.mtr"
        path.write_bytes(poke(slot, value))
        asked.clear()
        fast = _read(path, careful=False)
        assert isinstance(fast, str) and asked, slot
        assert fast == _read(path, careful=True), slot


def test_a_simulated_run_decodes_the_same_across_many_blocks(tmp_path, asked):
    """Thousands of records in one chunk: the fast path's validity is packed 2,048 records at a time (its
    last block partial, its last byte too), which the small dumps above never reach."""
    from ingest.dataset import Dataset
    from kernels.api import simulate
    from kernels.base import Params

    simulate("classic", Params(ranks=4, cores=3, tokens=24, topk=2, hidden=4, local_experts=2, rounds=2),
             faults=("missing-quiet",), seed=3, out=tmp_path / "run")
    ds = Dataset(tmp_path / "run" / "dataset")
    path = tmp_path / "run.mtr"
    path.write_bytes(rings.encode_rings(ds.table(), ds.manifest, capacity=1500))
    fast = rings.read_ring_file(path, ds.manifest)
    assert not asked
    careful = rings.read_ring_file(path, ds.manifest, careful=True)
    assert sum(c.table.num_rows for c in fast) > 3 * 2048 + 100
    assert _same([(c.table, c.positions.tolist(), c.lost, c.events_in) for c in fast],
                 [(c.table, c.positions.tolist(), c.lost, c.events_in) for c in careful])
