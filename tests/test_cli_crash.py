"""An internal error in any command: one line on stderr naming a crash report, exit 3, never a traceback.

Each command of ``moetrace --help`` gets a RuntimeError injected into a function it
calls; the line must read ``moetrace: internal error: RuntimeError: ...; please report it
with the file written to PATH`` and PATH must hold the traceback and the command line.
Also: the report cannot be written (still one line, exit 3), an interrupt (130), an
exception that cannot even be printed, the same through a real process, and an error
raised in a ``--jobs`` worker process, which must end the same way as one raised here.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

LINE = re.compile(r"moetrace: internal error: (\w+): (.*); please report it with the file written to (\S+)")


@pytest.fixture
def crash_dir(tmp_path, monkeypatch):
    d = tmp_path / "crashes"
    monkeypatch.setenv("MOETRACE_CRASH_DIR", str(d))
    return d


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    from _diag_helpers import write_trace

    return write_trace(tmp_path_factory.mktemp("crash") / "raw")


def _commands() -> list[str]:
    """The commands ``moetrace --help`` lists."""
    text = run_cli("--help").stdout
    block = text[text.index("Commands:"):]
    return re.findall(r"^  (\w[\w-]*)\s", block, re.M)


# command -> (the function it calls that is made to raise, its arguments)
INJECT = {
    "demo": ("kernels.api", "simulate", ["demo", "-o", "{tmp}/demo"]),
    "diagnose": ("analyzer.engine", "diagnose", ["diagnose", "{trace}"]),
    "ingest": ("ingest.run", "ingest", ["ingest", "{trace}", "-o", "{tmp}/ds"]),
    "query": ("ingest.dataset", "Dataset", ["query", "{trace}", "select 1"]),
    "timeline": ("analyzer.timeline", "build", ["timeline", "{trace}", "-o", "{tmp}/t.json"]),
    "simulate": ("kernels.api", "simulate", ["simulate", "--protocol", "classic", "-o", "{tmp}/sim"]),
    "rules": ("rules", "registry", ["rules"]),
    "explain": ("rules", "registry", ["explain", "MT101"]),
}


def test_every_command_is_covered():
    assert set(_commands()) == set(INJECT)


def _check_internal(r, crash_dir: Path, what: str, argv: list[str]) -> str:
    assert r.code == 3, (r.code, r.stderr)
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    m = LINE.fullmatch(lines[0])
    assert m, lines[0]
    assert m.group(1) == "RuntimeError" and m.group(2) == what
    path = Path(m.group(3))
    assert path.parent == crash_dir and path.name.startswith("moetrace-crash-"), path
    text = path.read_text()
    assert "Traceback (most recent call last)" in text and f"RuntimeError: {what}" in text
    assert repr(["moetrace", *argv]) in text and "moetrace " in text and "python: " in text
    return text


@pytest.mark.parametrize("command", sorted(INJECT))
def test_an_internal_error_in_every_command(command, crash_dir, trace, tmp_path, monkeypatch):
    import importlib

    module, name, args = INJECT[command]
    what = f"injected into {command}"

    def boom(*a, **k):
        raise RuntimeError(what)

    monkeypatch.setattr(importlib.import_module(module), name, boom)
    argv = [a.format(trace=trace, tmp=tmp_path) for a in args]
    text = _check_internal(run_cli(*argv), crash_dir, what, argv)
    assert "in boom" in text  # the traceback reaches the injected function


def test_a_rule_that_raises_is_an_internal_error(crash_dir, trace, monkeypatch):
    import rules as rules_pkg
    from _diag_helpers import RULES, Boom, registry_of

    monkeypatch.setattr(rules_pkg, "registry", lambda: registry_of(*RULES, Boom))
    r = run_cli("diagnose", trace)
    assert r.code == 3 and len(r.stderr.splitlines()) == 1, r.stderr
    assert r.stderr.startswith("moetrace: internal error: RuleError: rule MT599 raised ValueError: kaboom; ")
    text = Path(LINE.fullmatch(r.stderr.strip()).group(3)).read_text()
    assert "ValueError: kaboom" in text and "in check" in text  # the rule's own frame


def test_the_crash_report_cannot_be_written(tmp_path, trace, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("MOETRACE_CRASH_DIR", str(blocker / "below"))  # a directory under a file
    import analyzer.engine  # imported here: whether an earlier test of this worker did is up to xdist

    monkeypatch.setattr(analyzer.engine, "diagnose", lambda *a, **k: 1 / 0)
    r = run_cli("diagnose", trace)
    assert r.code == 3 and len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith("moetrace: internal error: ZeroDivisionError: division by zero; please report it "
                               "(no crash report: "), r.stderr


@pytest.mark.parametrize("exc", ["KeyboardInterrupt", "Abort"])
def test_an_interrupt_is_one_line_and_130(exc, crash_dir, trace, monkeypatch):
    import typer

    import analyzer.engine

    def stop(*a, **k):
        raise KeyboardInterrupt() if exc == "KeyboardInterrupt" else typer.Abort()

    monkeypatch.setattr(analyzer.engine, "diagnose", stop)
    r = run_cli("diagnose", trace)
    assert (r.code, r.stderr) == (130, "moetrace: interrupted\n")
    assert not crash_dir.exists()


def test_the_handler_survives_an_exception_it_cannot_print(crash_dir):
    import io

    from analyzer.exits import handle

    class Unprintable(Exception):
        def __str__(self):
            raise ValueError("no text")

    err = io.StringIO()
    assert handle(Unprintable(), err) == 3
    line, = err.getvalue().splitlines()
    assert line.startswith("moetrace: internal error: Unprintable; please report it with the file written to ")
    assert "Unprintable" in Path(line.rsplit(" ", 1)[1]).read_text()


def test_usage_and_input_errors_stay_exit_2(trace, crash_dir):
    for args, start in ((["diagnose", trace, "--format", "xml"], "moetrace: error: command line: --format: "),
                        (["nope"], "moetrace: error: No such command 'nope'."),
                        (["diagnose", trace / "missing"], "moetrace: error: "),
                        (["explain", "MT999"], "moetrace: error: unknown rule code 'MT999'")):
        r = run_cli(*args)
        assert r.code == 2 and r.stderr.startswith(start) and len(r.stderr.splitlines()) == 1, r.stderr
    assert run_cli().stderr.startswith("Usage: moetrace")  # no command: the help
    assert not crash_dir.exists()


DRIVER = """
import os
import sys
import time
import analyzer.window_run

def boom(*a, **k):
    raise RuntimeError("injected into a worker")

def slow(*a, **k):  # a window that takes half a minute; says when it runs and when it is done
    open(os.path.join(os.environ["RUNNING_DIR"], str(os.getpid())), "w").close()
    time.sleep(30)
    open(os.path.join(os.environ["RUNNING_DIR"], f"{os.getpid()}.done"), "w").close()
    return [], None  # (the window's findings, no view kept)

# At the top level: a --jobs worker (spawned) imports this file as __mp_main__ and gets it too.
analyzer.window_run.run_window = slow if os.environ.get("RUNNING_DIR") else boom

if __name__ == "__main__":
    from analyzer.cli import main
    sys.argv = ["moetrace", *sys.argv[1:]]
    main()
"""


def _process(tmp_path: Path, crash_dir: Path, *args: str, **env) -> subprocess.Popen:
    import os

    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    env = {**os.environ, "MOETRACE_CRASH_DIR": str(crash_dir), "PYTHONPATH": str(ROOT), **env}
    return subprocess.Popen([sys.executable, str(driver), *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, start_new_session=True)


@pytest.fixture(scope="module")
def blocked(tmp_path_factory):
    """Three launches, each its own block: with --window-events 1, three windows for two workers."""
    from ingest.run import ingest
    from kernels import Params, simulate

    tmp = tmp_path_factory.mktemp("blocked")
    simulate("classic", Params(rounds=3, ranks=2, cores=1, tokens=4, topk=1, hidden=2, local_experts=1),
             seed=0, out=tmp / "sim")
    ingest([tmp / "sim" / json.loads((tmp / "sim" / "truth.json").read_text())["dataset"]], tmp / "blk",
           block_events=1)
    return tmp / "blk"


def test_an_internal_error_in_a_process_and_in_its_jobs_workers(tmp_path, crash_dir, blocked):
    for jobs in ("1", "2"):
        p = _process(tmp_path, crash_dir, "diagnose", blocked, "--window-events", "1", "--jobs", jobs)
        out, err = p.communicate(timeout=600)
        assert p.returncode == 3 and out == "", (jobs, p.returncode, err)
        lines = err.splitlines()
        assert len(lines) == 1 and "Traceback" not in err, (jobs, err)
        m = LINE.fullmatch(lines[0])
        assert m and (m.group(1), m.group(2)) == ("RuntimeError", "injected into a worker"), lines[0]
        # The worker's own frames reach the report (the pool hands its traceback on as the cause).
        assert "in boom" in Path(m.group(3)).read_text()


def test_ctrl_c_with_jobs_workers_ends_them(tmp_path, crash_dir, blocked):
    """Ctrl-C reaches the whole process group: the parent says "interrupted" once, and no window
    is run on. The third window used to be run to its end after the interrupt (the pool's exit
    waited for every window submitted); a worker interrupted while idle printed a traceback."""
    import os
    import signal
    import time

    running = tmp_path / "running"
    running.mkdir()
    p = _process(tmp_path, crash_dir, "diagnose", blocked, "--window-events", "1", "--jobs", "2",
                 RUNNING_DIR=str(running))
    try:
        deadline = time.monotonic() + 300
        while len(list(running.iterdir())) < 2 and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(list(running.iterdir())) == 2, "the two workers never ran their windows"
        os.killpg(p.pid, signal.SIGINT)
        out, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    assert (p.returncode, err, out) == (130, "moetrace: interrupted\n", "")
    assert not list(running.glob("*.done")), "a worker ran its window on after Ctrl-C"
