"""The host companion kernels/device/moetrace_host.h: its dumps are valid ring
dumps (the written prefix of an unwrapped ring, all of a wrapped one), and its
watchdog dumps, marks and exits when the kernel stops making progress, and only
exits once the host said it finished."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import ROOT
from ingest.contract import Kind
from ingest.dataset import Dataset
from ingest.ring_layout import HEADER_SIZE, RECORD_SIZE
from ingest.run import ingest
from test_c_roundtrip import CC, CXX, STRICT

SRC = ROOT / "tests" / "c" / "host_dump_demo.c"
CAP, WRITTEN = 16, (10, 40)  # as in host_dump_demo.c: core 1 wraps
HANG_EXIT = 3  # MOETRACE_HANG_EXIT


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    if CC is None:
        pytest.skip("no C compiler (cc, gcc or clang) on PATH")
    exe = tmp_path_factory.mktemp("hostbuild") / "host_dump_demo"
    subprocess.run([CC, "-std=c99", *STRICT, "-O1", "-pthread", "-o", str(exe), str(SRC)], check=True,
                   capture_output=True, text=True)
    return exe


def _run(demo: Path, mode: str, out: Path) -> subprocess.CompletedProcess:
    out.mkdir()
    return subprocess.run([str(demo), mode, str(out)], capture_output=True, text=True, timeout=30)


def _check_dump(out: Path, tmp: Path) -> None:
    """The dump ingests, every ring's surviving events are its last min(W, C), the rest are lost."""
    dump = out / "rank0.mtr"
    stored = [min(w, CAP) for w in WRITTEN]
    assert dump.stat().st_size == len(WRITTEN) * HEADER_SIZE + sum(stored) * RECORD_SIZE
    rep = ingest([out], tmp / "ds")
    by_core = {c.core: c for c in rep.cores}
    for core, w in enumerate(WRITTEN):
        assert by_core[core].rows == min(w, CAP)
        assert by_core[core].lost == w - min(w, CAP)
        assert by_core[core].last_seq == w - 1
    ev = Dataset(tmp / "ds").arrays(["core", "seq", "kind"])
    last = ev["core"] == 1
    assert (ev["kind"][last][-1], ev["seq"][last][-1]) == (int(Kind.WAIT_BEGIN), WRITTEN[1] - 1)  # the stuck wait


def test_dump_writes_prefix_and_wrapped_rings(demo, tmp_path):
    res = _run(demo, "dump", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert [int(x) for x in res.stdout.split()] == list(WRITTEN)
    _check_dump(tmp_path / "out", tmp_path)


def test_watchdog_dumps_marks_and_exits_on_no_progress(demo, tmp_path):
    res = _run(demo, "hang", tmp_path / "out")
    assert res.returncode == HANG_EXIT, res.stderr
    assert (tmp_path / "out" / "hung").read_text() == "no progress\n"
    _check_dump(tmp_path / "out", tmp_path)


def test_watchdog_after_finish_only_exits(demo, tmp_path):
    res = _run(demo, "finished", tmp_path / "out")
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "out" / "hung").exists()
    _check_dump(tmp_path / "out", tmp_path)


@pytest.mark.skipif(CXX is None, reason="no C++ compiler (c++, g++ or clang++) on PATH")
def test_host_header_compiles_strict_as_cxx(tmp_path):
    subprocess.run([CXX, "-x", "c++", "-std=c++11", *STRICT, "-pthread", "-o", str(tmp_path / "demo"), str(SRC)],
                   check=True, capture_output=True, text=True)
