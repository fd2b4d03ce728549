"""The ``moetrace`` console script's entry point, one name that resolves both in the repository and in a wheel.

In the repository the command line is ``analyzer.cli``; an installed wheel
has it at ``moetrace.analyzer.cli`` (hatch_build.py rewrites this import
with the others), so the script names this module, which exists in both.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    from analyzer.cli import main as run

    try:
        run()
        code = 0
    except SystemExit as e:
        if not isinstance(e.code, (int, type(None))):
            raise
        code = e.code or 0
    _exit(code)


def _exit(code: int) -> None:
    """End the process now that the command is done, skipping the interpreter's teardown.

    Tearing down a process that loaded numba (its ~100,000 objects, LLVM) took
    0.25-0.4 s of CPU after the command had finished, as much as a small
    diagnose's rules. Nothing left at this point needs it: the output is flushed
    here, files are closed, and temporary directories are removed by the
    commands themselves. A process that started others (Ray, a worker pool, a
    thread still running) exits the ordinary way, so their shutdown hooks run.
    """
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: let the ordinary exit report it
        sys.exit(code)
    if "ray" in sys.modules or _children() or _threads():
        sys.exit(code)
    os._exit(code)


def _children() -> bool:
    mp = sys.modules.get("multiprocessing")
    return bool(mp is not None and mp.active_children())


def _threads() -> bool:
    import threading

    return any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread())
