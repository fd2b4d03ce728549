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

# Registration order is the order of `moetrace --help`.
_COMMANDS = ("demo", "diagnose", "ingest", "query", "timeline", "simulate", "rules")
# A command registered by a module of another name.
_MODULE_OF = {"explain": "rules"}


def _root() -> None:
    """Trace analysis and post-mortem diagnosis for MoE all-to-all kernels."""
    # A callback keeps typer in group mode even if only one command is registered,
    # so `moetrace ingest X` never reads "ingest" as an argument.


def _app(only: str | None = None) -> typer.Typer:
    """The app with every command, or with those of the module ``only``: running a command
    imports and builds that command alone (the other six modules, the simulator's fault
    table among them, and typer's conversion of their parameters cost ~40 ms of every run)."""
    from analyzer.commands._common import Group

    app = typer.Typer(
        name="moetrace",
        cls=Group,
        help="Trace analysis and post-mortem diagnosis for MoE all-to-all kernels.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    app.callback()(_root)
    for name in (only,) if only else _COMMANDS:
        try:
            mod = importlib.import_module(f"analyzer.commands.{name}")
        except ModuleNotFoundError as e:  # a command still being built
            if e.name != f"analyzer.commands.{name}":
                raise
            continue
        mod.register(app)
    return app


def __getattr__(name: str):
    if name == "app":  # the whole app, for callers that want typer's object
        return _app()
    raise AttributeError(name)


@functools.cache
def _command(only: str | None = None):
    """The click command typer makes of the app, made once per command: typer remakes it on
    every call (~65 ms), which in-process callers (the tests, the fuzz campaign) paid per command."""
    return typer.main.get_command(_app(only))


def _invoked() -> str | None:
    """The module of the command ``sys.argv`` runs, when it names one (the root takes no
    options but --help); None for anything else, which gets every command (help, errors)."""
    first = sys.argv[1] if len(sys.argv) > 1 else None
    first = _MODULE_OF.get(first, first)
    return first if first in _COMMANDS else None


def main() -> None:
    from analyzer.exits import handle, interrupted

    try:
        # The tool's name whatever launched it (click's guess from sys.argv says "python -m pytest" under it)
        code = _command(_invoked())(standalone_mode=False, prog_name="moetrace")
    except SystemExit:  # a command's own exit: its code stands
        raise
    except BaseException as e:  # noqa: BLE001  (every error ends as one line and an exit code: analyzer.exits)
        sys.exit(handle(e))
    if code == 130:  # typer 0.29 turns Ctrl-C into Exit(130) and returns it, having said nothing
        sys.exit(interrupted())
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
