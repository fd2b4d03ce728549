"""``-o PATH``: a regular file is replaced whole; a device, pipe or symlink stays what it is.

The commands wrote every output beside its path and renamed it over: on
``-o /dev/null``, run as root, that put a regular file where the device was,
and every later write to /dev/null landed in it (this suite then read a
config from /dev/null and found text there). A FIFO stands in for the device
here, since a regression must not break the machine the tests run on.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT

from analyzer.output import write_output
from analyzer.timeline import write as write_timeline

TRACE = ROOT / "tests" / "corpus" / "classic_invalid_expert_9"


def _drain(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


class _Pipe:
    """A FIFO with a reader open (non-blocking, so a writer's open returns at once) and a thread
    emptying it, so a writer never blocks on a full pipe; ``take()`` what was written so far."""

    def __init__(self, path: Path):
        self.path = path
        os.mkfifo(path)
        self.fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        self.got = bytearray()
        self._start()

    def _start(self) -> None:
        self.stop = threading.Event()
        self.pump = threading.Thread(target=self._run, daemon=True)
        self.pump.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            self.got += _drain(self.fd)
            time.sleep(0.005)

    def take(self) -> bytes:
        self.stop.set()
        self.pump.join()
        self.got += _drain(self.fd)
        out, self.got = bytes(self.got), bytearray()
        self._start()
        return out

    def close(self) -> None:
        self.stop.set()
        self.pump.join()
        os.close(self.fd)


@pytest.fixture
def fifo(tmp_path):
    pipe = _Pipe(tmp_path / "pipe")
    yield pipe
    pipe.close()


def test_diagnose_writes_into_a_pipe_and_leaves_it_a_pipe(fifo, cli):
    r = cli("diagnose", TRACE, "--format", "json", "-o", fifo.path)
    assert r.code == 1, r.stderr
    assert stat.S_ISFIFO(os.stat(fifo.path).st_mode)
    assert json.loads(fifo.take())["findings"]


def test_query_and_timeline_write_into_a_pipe_too(fifo, cli, tmp_path):
    assert cli("ingest", TRACE, "-o", tmp_path / "ds").code == 0
    r = cli("query", tmp_path / "ds", "select count(*) as n from events", "--format", "csv", "-o", fifo.path)
    assert r.code == 0, r.stderr
    assert stat.S_ISFIFO(os.stat(fifo.path).st_mode) and fifo.take().decode().splitlines()[0] == "n"
    write_timeline({"traceEvents": []}, fifo.path)
    assert stat.S_ISFIFO(os.stat(fifo.path).st_mode) and json.loads(fifo.take()) == {"traceEvents": []}


def test_a_symlink_stays_a_link_to_the_file_it_names(tmp_path, cli):
    real = tmp_path / "reports" / "r.json"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(real)
    r = cli("diagnose", TRACE, "--format", "json", "-o", link)
    assert r.code == 1, r.stderr
    assert link.is_symlink() and json.loads(real.read_text())["findings"]
    assert sorted(p.name for p in real.parent.iterdir()) == ["r.json"]  # no temporary left


def test_a_regular_file_is_replaced_whole_or_kept(tmp_path):
    path = tmp_path / "r.txt"
    path.write_text("old")
    with pytest.raises(OSError):
        def fail(target: Path) -> None:
            target.write_text("half")
            raise OSError(28, "No space left on device")
        write_output(path, fail)
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["r.txt"]
    write_output(path, lambda target: target.write_text("new"))
    assert path.read_text() == "new"
