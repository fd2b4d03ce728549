"""A dataset damaged after ingest (a file emptied, overwritten, cut, its pages garbled, a report cut):
one line, exit 2, from every reader (query, diagnose, timeline, re-ingest), and moetrace.TraceError
from the Python API, never a raw pyarrow or DuckDB exception."""

from __future__ import annotations

import os
import shutil

import pytest

import moetrace
from conftest import ROOT, run_cli
from ingest.errors import TraceError


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("dmg") / "ds"
    assert run_cli("ingest", ROOT / "examples" / "classic-2rank", "-o", out).code == 0
    return out


def _cut(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _garble_pages(data: bytes) -> bytes:
    """Every byte between the leading magic and the footer changed: the footer (and schema) stay valid."""
    footer = int.from_bytes(data[-8:-4], "little")
    body = bytes((b * 7 + 13) & 0xFF for b in data[4:len(data) - 8 - footer])
    return data[:4] + body + data[len(data) - 8 - footer:]


DAMAGE = {
    "event file empty": ("events/rank=0/part-0.parquet", lambda b: b""),
    "event file overwritten": ("events/rank=0/part-0.parquet", lambda b: b"x,y\n"),
    "event file garbage": ("events/rank=0/part-0.parquet", lambda b: os.urandom(len(b))),
    "event file cut": ("events/rank=1/part-0.parquet", _cut),
    "event pages garbled": ("events/rank=1/part-0.parquet", _garble_pages),
    "report not JSON": ("ingest.json", lambda b: b'{"sources": ['),
    "report of the wrong shape": ("ingest.json", lambda b: b'{"sources": 5}'),
    "report a list": ("ingest.json", lambda b: b"[1, 2]"),
}
# Damage the footer does not show: the API opens it, and says so when the rows are read.
READ_LATE = {"event pages garbled"}


def _damaged(ds, tmp_path, case):
    name, damage = DAMAGE[case]
    d = tmp_path / "ds"
    shutil.copytree(ds, d)
    p = d / name
    p.write_bytes(damage(p.read_bytes()))
    return d


@pytest.mark.parametrize("case", sorted(DAMAGE))
@pytest.mark.parametrize("command", [("query", "select count(*) from events"), ("query", "select sum(seq) from events"),
                                     ("diagnose", "-f", "json"), ("timeline", "-o", "{tmp}/t.json"),
                                     ("ingest", "-o", "{tmp}/again")])
def test_damaged_dataset_is_one_line(ds, tmp_path, case, command):
    d = _damaged(ds, tmp_path, case)
    res = run_cli(command[0], d, *(a.format(tmp=tmp_path) for a in command[1:]))
    assert res.code == 2, (res.code, res.stderr[-500:])
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr[-500:]
    assert not (tmp_path / "again").exists() and not (tmp_path / "t.json").exists()


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_damaged_dataset_raises_trace_error_from_the_api(ds, tmp_path, case):
    d = _damaged(ds, tmp_path, case)
    if case in READ_LATE:
        with moetrace.open(d) as t, pytest.raises(moetrace.TraceError, match=DAMAGE[case][0]):
            t.diagnose()
        return
    with pytest.raises(moetrace.TraceError, match=DAMAGE[case][0].replace("[", r"\[")) as err:
        moetrace.open(d)
    assert "\n" not in str(err.value)


def test_the_api_error_is_the_cli_error_type():
    assert moetrace.TraceError is TraceError and "TraceError" in moetrace.__all__
