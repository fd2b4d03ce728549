"""The ``moetrace`` command line.

Each command lives in its own module under ``analyzer/commands`` and imports
its heavy dependencies (pyarrow, duckdb, numba) inside the command body, so
``moetrace --help`` stays fast.  Exit codes: 0 clean, 1 findings at or above
--fail-on, 2 bad usage or unreadable input (one line on stderr, no traceback).
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
    app = typer.Typer(
        name="moetrace",
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


def usage_line(e) -> str:
    """A usage error in one line, worded as config errors are: 'command line: --format: 'x' is not one of ...'.

    No usage block: every error moetrace prints is one line (the help is one --help away).
    """
    where = e.ctx.command_path if getattr(e, "ctx", None) is not None else "moetrace"
    param = getattr(e, "param", None)
    if param is not None and getattr(e, "message", None):
        opts = [o for o in getattr(param, "opts", []) if o.startswith("--")] or [param.human_readable_name]
        text = e.message.replace("Value error, ", "").rstrip(".")
        return f"command line: {opts[0]}: {' '.join(text.split())} (see '{where} --help')"
    return f"{' '.join(e.format_message().split())} (see '{where} --help')"


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
    from typer._click import exceptions as click_errors

    from ingest.errors import TraceError

    try:
        code = _command(_invoked())(standalone_mode=False)
    except TraceError as e:
        print(f"moetrace: error: {e}", file=sys.stderr)
        sys.exit(2)
    except click_errors.NoArgsIsHelpError as e:  # `moetrace` or `moetrace simulate` alone: the help
        e.show()
        sys.exit(e.exit_code)
    except click_errors.UsageError as e:
        print(f"moetrace: error: {usage_line(e)}", file=sys.stderr)
        sys.exit(e.exit_code)
    except click_errors.ClickException as e:
        print(f"moetrace: error: {' '.join(e.format_message().split())}", file=sys.stderr)
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, click_errors.Abort):
        print("moetrace: interrupted", file=sys.stderr)
        sys.exit(130)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    main()
