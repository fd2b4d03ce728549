"""Progress bars (rich.progress) on stderr while ingest and diagnose run: on a terminal only, never on a pipe."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading

import pytest

from _diag_helpers import events, write_trace
from conftest import ROOT

MOETRACE = [sys.executable, "-c", "from analyzer.cli import main; main()"]


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    return write_trace(tmp_path_factory.mktemp("prog") / "raw", events())


def _env():
    env = dict(os.environ, TERM="xterm", COLUMNS="100", PYTHONPATH=str(ROOT))
    env.pop("NO_COLOR", None)
    return env


@pytest.mark.parametrize("command", ["diagnose", "ingest"])
def test_no_progress_bytes_on_a_pipe(raw, tmp_path, command):
    args = [str(raw)] + (["-o", str(tmp_path / "ds")] if command == "ingest" else ["--format", "json"])
    r = subprocess.run(MOETRACE + [command, *args], capture_output=True, cwd=tmp_path, env=_env(), timeout=300)
    assert r.returncode in (0, 1), r.stderr
    assert r.stderr == b""
    assert b"\r" not in r.stdout and b"\x1b" not in r.stdout


def _on_a_terminal(args: list[str], cwd) -> tuple[int, bytes, bytes]:
    """Run with stderr on a pseudo-terminal (stdout a pipe); what each received."""
    master, slave = pty.openpty()
    seen = bytearray()

    def drain():
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                return
            if not chunk:
                return
            seen.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    p = subprocess.Popen(MOETRACE + args, stdout=subprocess.PIPE, stderr=slave, cwd=cwd, env=_env())
    os.close(slave)
    out, _ = p.communicate(timeout=300)
    reader.join(timeout=10)
    os.close(master)
    return p.returncode, out, bytes(seen)


def test_progress_on_a_terminal(raw, tmp_path):
    code, out, err = _on_a_terminal(["diagnose", str(raw), "--format", "json"], tmp_path)
    assert code == 1
    assert b"rules run" in err and b"events read" in err  # the bars drew on the terminal
    assert out.lstrip().startswith(b"{") and b"\x1b" not in out  # stdout untouched
    code, out, err = _on_a_terminal(["ingest", str(raw), "-o", str(tmp_path / "ds")], tmp_path)
    assert code == 0 and b"events read" in err
    code, out, err = _on_a_terminal(["diagnose", str(raw), "--no-progress", "--format", "json"], tmp_path)
    assert code == 1 and b"rules run" not in err
