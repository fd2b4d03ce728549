"""``moetrace diagnose``: the post-mortem and the CI gate.

Exit codes: 0 no finding at or above --fail-on, 1 some, 2 bad usage,
unreadable input or bad config; a rule that crashed is an internal error
(``analyzer.exits``: exit 3, a crash report with its traceback).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Literal, Optional, Sequence, TextIO

import typer

from analyzer.config import FAIL_ON
from analyzer.output import write_output
from analyzer.report import FORMATS
from analyzer.windows import WINDOW_EVENTS

from ._common import Command

ENGINES = ("local", "ray")  # where the windows run: here (--jobs processes) or as Ray tasks


@dataclass(frozen=True)
class DiagnoseOptions:
    """What ``moetrace diagnose`` is asked for, one field per option (None: the config's, else its default)."""

    fmt: str = "text"
    fail_on: str | None = None          # None: the config's fail-on (default error)
    config_path: Path | None = None     # None: the nearest config from the input, then the current directory
    select: Sequence[str] | None = None
    ignore: Sequence[str] | None = None
    output: Path | None = None          # write the report to this file instead of ``out``
    progress: bool = True               # bars on stderr, where it is a terminal
    window_events: int | None = None
    jobs: int | None = None
    max_findings: int | None = None
    source_root: Path | None = None     # SARIF: where the manifest's relative source paths sit
    engine: str = "local"               # one of ENGINES
    address: str | None = None          # with engine ray: the cluster to join


def run_diagnose(inputs: Sequence[Path], options: DiagnoseOptions = DiagnoseOptions(),
                 out: TextIO | None = None) -> int:
    """Diagnose ``inputs`` and print the report; returns the exit code (never raises on bad input).

    ``out`` defaults to the current sys.stdout; ``options.output`` writes to a file instead.
    """
    from analyzer.config import ConfigError, load_config
    from analyzer.engine import diagnose
    from analyzer.report import render
    from ingest._jit import own_process
    from ingest.errors import TraceError
    from ingest.location import as_location

    from ._common import Bars

    own_process()  # the command line's process: numba's objects may leave the collector (ingest._jit.warm)
    o = options
    fmt, engine, address, output = o.fmt, o.engine, o.address, o.output

    err = sys.stderr
    if fmt not in FORMATS:
        print(f"moetrace: error: command line: --format: {fmt!r} is not one of "
              f"{', '.join(map(repr, FORMATS))}", file=err)
        return 2
    if engine not in ENGINES:
        print(f"moetrace: error: command line: --engine: {engine!r} is not one of "
              f"{', '.join(map(repr, ENGINES))}", file=err)
        return 2
    if address is not None and engine != "ray":
        print("moetrace: error: command line: --address: only with --engine ray", file=err)
        return 2
    inputs = [as_location(p) for p in inputs]
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
        local = [p for p in inputs[:1] if isinstance(p, Path)]  # a URL has no config beside it
        config = load_config(o.config_path, search_from=[*local, Path.cwd()])
        config = config.with_overrides(select=o.select, ignore=o.ignore, fail_on=o.fail_on,
                                       window_events=o.window_events, jobs=o.jobs, max_findings=o.max_findings)
        with Bars(enabled=o.progress) as bars:  # events read and written, windows and rules run
            if fmt == "html":
                report, extra = _with_facts(inputs, config, bars, executor)
            else:
                report, extra = diagnose(inputs, config, progress=bars, executor=executor), {}
    except (TraceError, ConfigError) as e:
        print(f"moetrace: error: {e}", file=err)
        return 2
    sink = out if out is not None else sys.stdout
    color = (fmt == "text" and output is None and _isatty(sink) and "NO_COLOR" not in os.environ)
    if fmt == "text":
        extra["max_findings"] = config.max_findings
    if fmt == "sarif" and o.source_root is not None:
        extra["source_root"] = o.source_root
    text = render(report, fmt, fail_on=config.fail_on, color=color, **extra)
    if output is not None:
        try:
            write_output(output, lambda target: target.write_text(text))
        except OSError as e:
            print(f"moetrace: error: {output}: cannot write report: {e.strerror or e}", file=err)
            return 2
    else:
        sink.write(text)
        sink.flush()
    return report.exit_code(config.fail_on)


def _with_facts(inputs: Sequence[Path], config, progress, executor=None):
    """The report and what the HTML page reads from the trace (the heatmap, where cores stopped)."""
    from dataclasses import replace

    from analyzer.engine import diagnose
    from analyzer.inputs import as_dataset
    from analyzer.report._html_facts import gather

    with as_dataset(inputs, progress=progress) as ds:
        report = diagnose([ds], config, progress=progress)
        facts = gather(ds)
    # The report names what the user gave, not the temporary dataset raw inputs were ingested into.
    report = replace(report, trace=replace(report.trace, inputs=tuple(str(p) for p in inputs)))
    return report, {"facts": facts}


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def register(app: typer.Typer) -> None:
    @app.command("diagnose", cls=Command)
    def diagnose_cmd(
        inputs: Annotated[list[str], typer.Argument(
            help="A dataset directory or URL (s3://, gs://, file://, ...: what pyarrow reads), or raw traces "
                 "(JSONL directories, .mtr dumps) to ingest on the fly.",
            show_default=False, metavar="INPUT")],
        fmt: Annotated[Literal[FORMATS], typer.Option("--format", "-f", help="The report's format.")] = "text",
        fail_on: Annotated[Optional[Literal[FAIL_ON]], typer.Option(
            "--fail-on", help="Exit 1 on findings at or above this level (default: the config's fail-on, "
                              "else error).")] = None,
        output: Annotated[Optional[Path], typer.Option("--output", "-o", metavar="FILE",
                                                              help="Write the report here.")] = None,
        config: Annotated[Optional[Path], typer.Option(
            "--config", metavar="FILE", help="Config file (default: nearest moetrace.toml or pyproject.toml "
                             "[tool.moetrace] from the input, then the current directory).")] = None,
        select: Annotated[Optional[list[str]], typer.Option(
            "--select", metavar="CODES", help="Only these rules: codes, prefixes (MT1) or families, comma-separated.")] = None,
        ignore: Annotated[Optional[list[str]], typer.Option(
            "--ignore", metavar="CODES", help="Skip these rules (added to the config's ignore).")] = None,
        no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bars on stderr (there are "
                                                                        "none unless it is a terminal).")] = False,
        window_events: Annotated[Optional[int], typer.Option(
            "--window-events", metavar="N", help="Diagnose a trace larger than N events a window of launches at "
                                                "a time, to bound memory (default: the config's window-events, "
                                                f"else {WINDOW_EVENTS}).")] = None,
        jobs: Annotated[Optional[int], typer.Option(
            "--jobs", "-j", metavar="N", help="Diagnose N windows at once, a process each (default: the "
                                             "config's jobs, else 1); memory grows with N.")] = None,
        max_findings: Annotated[Optional[int], typer.Option(
            "--max-findings", metavar="N", min=1, help="List at most N findings of each defect class (every "
                                                       "format; the text report also lists at most N classes); the "
                                                       "rest are counted exactly (default: the config's "
                                                       "max-findings, else 200).")] = None,
        source_root: Annotated[Optional[Path], typer.Option(
            "--source-root", metavar="DIR", help="SARIF: where the manifest's relative source paths sit in the "
                                                 "repository (the current directory), e.g. csrc.")] = None,
        engine: Annotated[Literal[ENGINES], typer.Option(
            "--engine", metavar="ENGINE", help="local: windows here (--jobs processes) | ray: each window a Ray "
                                               "task on a cluster; the dataset must be on storage every node "
                                               "sees (needs moetrace[ray]).")] = "local",
        address: Annotated[Optional[str], typer.Option(
            "--address", metavar="ADDR", help="With --engine ray: the cluster to join (host:port, ray://..., "
                                              "auto); default RAY_ADDRESS, else a new local cluster.")] = None,
    ) -> None:
        """Diagnose a trace: root causes first, then the symptoms they explain."""
        options = DiagnoseOptions(fmt, fail_on, config, select=select, ignore=ignore, output=output,
                                  progress=not no_progress, window_events=window_events, jobs=jobs,
                                  max_findings=max_findings, source_root=source_root, engine=engine,
                                  address=address)
        code = run_diagnose(inputs, options)
        raise typer.Exit(code)
