"""``moetrace diagnose``: the post-mortem and the CI gate.

Exit codes: 0 no finding at or above --fail-on, 1 some, 2 bad usage,
unreadable input, bad config, or a rule that crashed (an internal error).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional, Sequence, TextIO

import typer

FORMATS = ("text", "json", "sarif", "junit")
ENGINES = ("local", "ray")  # where the windows run: here (--jobs processes) or as Ray tasks


def run_diagnose(inputs: Sequence[Path], fmt: str = "text", out: TextIO | None = None,
                 fail_on: str | None = None, config_path: Path | None = None, *,
                 select: Sequence[str] | None = None, ignore: Sequence[str] | None = None,
                 output: Path | None = None, progress: bool = True,
                 window_events: int | None = None, jobs: int | None = None,
                 engine: str = "local", address: str | None = None) -> int:
    """Diagnose ``inputs`` and print the report; returns the exit code (never raises on bad input).

    ``fail_on`` None takes the config's ``fail-on`` (default error).  ``out``
    defaults to the current sys.stdout; ``output`` writes to a file instead.
    """
    from analyzer.config import ConfigError, load_config
    from analyzer.engine import RuleError, diagnose
    from analyzer.report import render
    from ingest.errors import TraceError

    from ._common import progress as progress_line

    err = sys.stderr
    if fmt not in FORMATS:
        print(f"moetrace: error: --format: {fmt!r} is not one of {', '.join(FORMATS)}", file=err)
        return 2
    if engine not in ENGINES:
        print(f"moetrace: error: --engine: {engine!r} is not one of {', '.join(ENGINES)}", file=err)
        return 2
    if address is not None and engine != "ray":
        print("moetrace: error: --address: only with --engine ray", file=err)
        return 2
    inputs = [Path(p) for p in inputs]
    executor = None
    if engine == "ray":
        from analyzer.ray_engine import RayUnavailable, RayWindows, import_ray

        try:
            import_ray()
        except RayUnavailable as e:
            print(f"moetrace: error: {e}", file=err)
            return 2
        executor = RayWindows(address)
    try:
        config = load_config(config_path, search_from=[*(inputs[:1]), Path.cwd()])
        config = config.with_overrides(select=select, ignore=ignore, fail_on=fail_on, window_events=window_events,
                                       jobs=jobs)
        with progress_line("ingest", enabled=progress) as bar:
            # Count events read; the write phase is quick next to reading and the rules.
            report = diagnose(inputs, config, progress=lambda phase, n: bar(n) if phase == "read" else None,
                              executor=executor)
    except (TraceError, ConfigError) as e:
        print(f"moetrace: error: {e}", file=err)
        return 2
    except RuleError as e:  # a bug in a rule, not in the input: say so, without a traceback
        print(f"moetrace: internal error: {e} (please report this bug)", file=err)
        return 2
    sink = out if out is not None else sys.stdout
    color = (fmt == "text" and output is None and _isatty(sink) and "NO_COLOR" not in os.environ)
    text = render(report, fmt, fail_on=config.fail_on, color=color)
    if output is not None:
        try:
            _write_atomic(Path(output), text)
        except OSError as e:
            print(f"moetrace: error: {output}: cannot write report: {e.strerror or e}", file=err)
            return 2
    else:
        sink.write(text)
        sink.flush()
    return report.exit_code(config.fail_on)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _write_atomic(path: Path, text: str) -> None:
    # A CI step must never read half a report: write beside it, then rename.
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def register(app: typer.Typer) -> None:
    @app.command("diagnose")
    def diagnose_cmd(
        inputs: Annotated[list[Path], typer.Argument(
            help="A dataset directory, or raw traces (JSONL directories, .mtr dumps) to ingest on the fly.",
            show_default=False, metavar="INPUT")],
        fmt: Annotated[str, typer.Option("--format", "-f", metavar="FORMAT", help="text | json | sarif | junit")] = "text",
        fail_on: Annotated[Optional[str], typer.Option(
            "--fail-on", metavar="LEVEL", help="Exit 1 on findings at or above: error | warning | note | never "
                              "(default: the config's fail-on, else error).")] = None,
        output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE",
                                                              help="Write the report here.")] = None,
        config: Annotated[Optional[Path], typer.Option(
            "--config", metavar="FILE", help="Config file (default: nearest moetrace.toml or pyproject.toml "
                             "[tool.moetrace] from the input, then the current directory).")] = None,
        select: Annotated[Optional[list[str]], typer.Option(
            "--select", metavar="CODES", help="Only these rules: codes, prefixes (MT1) or families, comma-separated.")] = None,
        ignore: Annotated[Optional[list[str]], typer.Option(
            "--ignore", metavar="CODES", help="Skip these rules (added to the config's ignore).")] = None,
        no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress line on stderr.")] = False,
        window_events: Annotated[Optional[int], typer.Option(
            "--window-events", metavar="N", help="Diagnose a trace larger than N events a window of launches at "
                                                "a time, to bound memory (default: the config's window-events, "
                                                "else 8388608).")] = None,
        jobs: Annotated[Optional[int], typer.Option(
            "--jobs", "-j", metavar="N", help="Diagnose N windows at once, a process each (default: the "
                                             "config's jobs, else 1); memory grows with N.")] = None,
        engine: Annotated[str, typer.Option(
            "--engine", metavar="ENGINE", help="local: windows here (--jobs processes) | ray: each window a Ray "
                                               "task on a cluster; the dataset must be on storage every node "
                                               "sees (needs moetrace[ray]).")] = "local",
        address: Annotated[Optional[str], typer.Option(
            "--address", metavar="ADDR", help="With --engine ray: the cluster to join (host:port, ray://..., "
                                              "auto); default RAY_ADDRESS, else a new local cluster.")] = None,
    ) -> None:
        """Diagnose a trace: root causes first, then the symptoms they explain."""
        code = run_diagnose(inputs, fmt, None, fail_on, config, select=select, ignore=ignore,
                            output=output, progress=not no_progress, window_events=window_events, jobs=jobs,
                            engine=engine, address=address)
        raise typer.Exit(code)
