"""Issue 14 classes 11, 12, 13: where ingest writes, what --force replaces, what a crash leaves.

--force replaces only a moetrace dataset, never an input or a directory that
holds one, and swaps atomically; disk full and bad output paths are one-line
errors with nothing left; a killed ingest's staging directory is removed by
the next ingest to the same output (ingest.staging).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from _trace_files import Core, write_trace
from conftest import ROOT, run_cli


def _trace(d):
    c = Core(0, 0)
    return write_trace(d, [c("kernel_begin", name="k"), c("kernel_end", name="k")])


def _siblings(out):
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}."))


def _one_line_error(res, *needles):
    assert res.code == 2, (res.code, res.stdout, res.stderr)
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, res.stderr
    for n in needles:
        assert n in res.stderr, (n, res.stderr)


def test_force_never_replaces_the_input_trace(tmp_path):
    d = tmp_path / "trace"
    ev = _trace(d)
    before = sorted(p.name for p in d.iterdir())
    _one_line_error(run_cli("ingest", d, "-o", d, "--force"), "would replace the input")
    _one_line_error(run_cli("ingest", ev, "-o", tmp_path, "--force"), "would replace the input")
    assert sorted(p.name for p in d.iterdir()) == before and ev.read_text()


def test_force_never_replaces_the_input_dataset(tmp_path):
    _trace(tmp_path / "trace")
    ds = tmp_path / "ds"
    assert run_cli("ingest", tmp_path / "trace", "-o", ds).code == 0
    _one_line_error(run_cli("ingest", ds, "-o", ds, "--force"), "would replace the input")
    assert (ds / "ingest.json").is_file()


def test_force_never_deletes_a_directory_that_is_not_a_dataset(tmp_path):
    _trace(tmp_path / "trace")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious")
    _one_line_error(run_cli("ingest", tmp_path / "trace", "-o", mine, "--force"), "not a moetrace dataset")
    assert (mine / "notes.txt").read_text() == "precious"
    f = tmp_path / "file.txt"
    f.write_text("also precious")
    _one_line_error(run_cli("ingest", tmp_path / "trace", "-o", f, "--force"), "not a moetrace dataset")
    assert f.read_text() == "also precious"


def test_force_replaces_a_dataset_and_leaves_nothing_beside_it(tmp_path):
    _trace(tmp_path / "trace")
    ds = tmp_path / "ds"
    assert run_cli("ingest", tmp_path / "trace", "-o", ds).code == 0
    (ds / "stale-marker").write_text("x")
    assert run_cli("ingest", tmp_path / "trace", "-o", ds, "--force").code == 0
    assert not (ds / "stale-marker").exists() and (ds / "ingest.json").is_file()
    assert _siblings(ds) == []
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli("ingest", tmp_path / "trace", "-o", empty, "--force").code == 0


def test_failed_swap_puts_the_old_dataset_back(tmp_path, monkeypatch):
    import ingest.staging as staging

    _trace(tmp_path / "trace")
    ds = tmp_path / "ds"
    assert run_cli("ingest", tmp_path / "trace", "-o", ds).code == 0
    (ds / "marker").write_text("old")
    real, calls = os.replace, []

    def flaky(src, dst):
        calls.append(dst)
        if len(calls) == 2:  # the new dataset into place
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(staging.os, "replace", flaky)
    _one_line_error(run_cli("ingest", tmp_path / "trace", "-o", ds, "--force"), "no space left")
    assert (ds / "marker").read_text() == "old" and _siblings(ds) == []


def test_output_under_a_regular_file_is_one_line(tmp_path):
    _trace(tmp_path / "trace")
    (tmp_path / "f").write_text("x")
    _one_line_error(run_cli("ingest", tmp_path / "trace", "-o", tmp_path / "f" / "ds"), "not a directory")


def test_disk_full_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    import ingest.writer as writer

    _trace(tmp_path / "trace")
    real = writer.DatasetWriter._write_all

    def full(self, stage, progress):
        real(self, stage, progress)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.DatasetWriter, "_write_all", full)
    out = tmp_path / "ds"
    _one_line_error(run_cli("ingest", tmp_path / "trace", "-o", out), "no space left on the device")
    assert not out.exists() and _siblings(out) == []


def test_file_size_limit_is_one_line_and_leaves_nothing(tmp_path):
    """A real failed write: the OS refuses to grow a file past RLIMIT_FSIZE (EFBIG, as a full disk would)."""
    out = tmp_path / "ds"
    code = ("import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
            "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096)); "
            "from analyzer.cli import main; sys.argv = ['moetrace', 'ingest', sys.argv[1], '-o', sys.argv[2]]; main()")
    res = subprocess.run([sys.executable, "-c", code, str(ROOT / "examples" / "classic-2rank"), str(out)],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "File too large" in res.stderr, res.stderr
    assert not out.exists() and _siblings(out) == []


_BLOCKED = """
import sys, time
import ingest.writer as w
ready = sys.argv[3]
real = w.DatasetWriter._write_all
def slow(self, stage, progress):
    real(self, stage, progress)
    open(ready, "w").write(str(stage))
    time.sleep(600)
w.DatasetWriter._write_all = slow
from analyzer.cli import main
sys.argv = ["moetrace", "ingest", sys.argv[1], "-o", sys.argv[2]]
main()
"""


def test_killed_ingest_staging_is_cleaned_by_the_next(tmp_path):
    _trace(tmp_path / "trace")
    out, ready = tmp_path / "ds", tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, "-c", _BLOCKED, str(tmp_path / "trace"), str(out), str(ready)], cwd=ROOT)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert ready.exists(), "the blocked ingest never reached its write"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = _siblings(out)
    assert len(left) == 1 and left[0].startswith(f".ds.stage-{proc.pid}-") and not out.exists()
    # A live writer's staging directory (this process's parent is alive) is not touched.
    live = tmp_path / f".ds.stage-{os.getppid()}-live"
    live.mkdir()
    assert run_cli("ingest", tmp_path / "trace", "-o", out).code == 0
    assert _siblings(out) == [live.name]
