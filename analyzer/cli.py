"""The ``moetrace`` command line.

Each command lives in its own module under ``analyzer/commands`` and imports
its heavy dependencies (pyarrow, duckdb, numba) inside the command body, so
``moetrace --help`` stays fast.  Exit codes: 0 clean, 1 findings at or above
--fail-on, 2 bad usage or unreadable input (one line on stderr, no traceback),
3 an internal error, a bug in moetrace (one line on stderr naming the crash
report written with its traceback: ``analyzer.exits``), 130 interrupted.
"""

from __future__ import annotations

import functools
import importlib
import sys

import typer

app = typer.Typer(
    name="moetrace",
    help="Trace analysis and post-mortem diagnosis for MoE all-to-all kernels.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)



@app.callback()
def _root() -> None:
    """Trace analysis and post-mortem diagnosis for MoE all-to-all kernels."""
    # A callback keeps typer in group mode even if only one command is registered,
    # so `moetrace ingest X` never reads "ingest" as an argument.


# Registration order is the order of `moetrace --help`.
_COMMANDS = ("demo", "diagnose", "ingest", "query", "timeline", "simulate", "rules")

for _name in _COMMANDS:
    try:
        _mod = importlib.import_module(f"analyzer.commands.{_name}")
    except ModuleNotFoundError as _e:  # a command still being built
        if _e.name != f"analyzer.commands.{_name}":
            raise
        continue
    _mod.register(app)


@functools.cache
def _command():
    """The click command typer makes of ``app``, made once: typer remakes it on every call
    (~65 ms), which in-process callers (the tests, the fuzz campaign) paid per command."""
    return typer.main.get_command(app)


def main() -> None:
    from analyzer.exits import handle, interrupted

    try:
        code = _command()(standalone_mode=False)
    except SystemExit:  # a command's own exit: its code stands
        raise
    except BaseException as e:  # noqa: BLE001  (every error ends as one line and an exit code: analyzer.exits)
        sys.exit(handle(e))
    if code == 130:  # typer 0.29 turns Ctrl-C into Exit(130) and returns it, having said nothing
        sys.exit(interrupted())
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
