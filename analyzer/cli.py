"""The ``moetrace`` command line.

Each command lives in its own module under ``analyzer/commands`` and imports
its heavy dependencies (pyarrow, duckdb, numba) inside the command body, so
``moetrace --help`` stays fast.  Exit codes: 0 clean, 1 findings at or above
--fail-on, 2 bad usage or unreadable input (one line on stderr, no traceback).
"""

from __future__ import annotations

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


def main() -> None:
    from ingest.errors import TraceError

    try:
        app()
    except TraceError as e:
        print(f"moetrace: error: {e}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("moetrace: interrupted", file=sys.stderr)
        sys.exit(130)


if __name__ == "__main__":
    main()
