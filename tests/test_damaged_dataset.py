"""A dataset damaged after ingest (a file overwritten, a report cut): one line, exit 2, from query and diagnose."""

from __future__ import annotations

import shutil

import pytest

from conftest import ROOT, run_cli


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    out = tmp_path_factory.mktemp("dmg") / "ds"
    assert run_cli("ingest", ROOT / "examples" / "classic-2rank", "-o", out).code == 0
    return out


DAMAGE = {
    "event file overwritten": ("events/rank=0/part-0.parquet", b"x,y\n"),
    "event file cut": ("events/rank=1/part-0.parquet", None),
    "report not JSON": ("ingest.json", b'{"sources": ['),
    "report of the wrong shape": ("ingest.json", b'{"sources": 5}'),
    "report a list": ("ingest.json", b"[1, 2]"),
}


@pytest.mark.parametrize("case", sorted(DAMAGE))
@pytest.mark.parametrize("command", [("query", "select count(*) from events"), ("diagnose", "-f", "json")])
def test_damaged_dataset_is_one_line(ds, tmp_path, case, command):
    name, data = DAMAGE[case]
    d = tmp_path / "ds"
    shutil.copytree(ds, d)
    p = d / name
    p.write_bytes(data if data is not None else p.read_bytes()[: p.stat().st_size // 2])
    res = run_cli(command[0], d, *command[1:])
    assert res.code == 2, (res.code, res.stderr[-500:])
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr[-500:]
