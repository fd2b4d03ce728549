"""``moetrace timeline``: write a trace as Chrome JSON trace events (Perfetto UI, chrome://tracing)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ._common import Command, die


def parse_ranks(text: str, nranks: int | None = None) -> list[int]:
    """'0-3,7' -> [0, 1, 2, 3, 7]; ValueError with the bad part named."""
    out: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            a = int(lo)
            b = int(hi) if sep else a
        except ValueError:
            raise ValueError(f"--ranks: {part!r} is not a rank or a range like 0-3") from None
        if a < 0 or b < a:
            raise ValueError(f"--ranks: {part!r} is not a rank or a range like 0-3")
        if nranks is not None and b >= nranks:
            raise ValueError(f"--ranks: rank {b} is not in the trace (it has ranks 0-{nranks - 1})")
        out.update(range(a, b + 1))
    return sorted(out)


def register(app: typer.Typer) -> None:
    @app.command("timeline", cls=Command)
    def timeline_cmd(
        inputs: Annotated[list[Path], typer.Argument(
            help="A dataset directory, or raw traces (JSONL directories, .mtr dumps) to ingest on the fly.",
            show_default=False, metavar="INPUT")],
        output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE",
                                             help="Write the timeline here (Chrome JSON trace events).")],
        launch: Annotated[Optional[int], typer.Option("--launch", metavar="L",
                                                      help="Only this launch.")] = None,
        ranks: Annotated[Optional[str], typer.Option("--ranks", metavar="RANKS",
                                                     help="Only these ranks, e.g. 0-3,7.")] = None,
        no_causes: Annotated[bool, typer.Option("--no-causes",
                                                help="Skip the diagnosis (no root-cause arrows or marks).")] = False,
        config: Annotated[Optional[Path], typer.Option(
            "--config", metavar="FILE", help="Config file for the diagnosis (default: as diagnose finds it).")] = None,
    ) -> None:
        """Draw a trace for Perfetto UI or chrome://tracing: a process per rank, a track per core, flows."""
        from analyzer.config import ConfigError, load_config
        from analyzer.inputs import as_dataset
        from analyzer.timeline import build, write
        from ingest.dataset import Dataset
        from ingest.errors import TraceError

        try:
            cfg = load_config(config, search_from=[*(inputs[:1]), Path.cwd()])
            with as_dataset(inputs) as ds:
                try:  # only --ranks' ValueError is the user's: one from build is a bug (analyzer.exits)
                    wanted = None if ranks is None else parse_ranks(ranks, Dataset(ds).manifest.ranks)
                except ValueError as e:
                    raise die(str(e))
                doc = build(ds, launch=launch, ranks=wanted, causes=not no_causes, config=cfg)
        except (TraceError, ConfigError) as e:
            raise die(str(e))
        try:
            write(doc, output)
        except OSError as e:
            raise die(f"{output}: cannot write timeline: {e.strerror or e}")
        o = doc["otherData"]
        typer.echo(f"timeline: {output}: {o['events']:,} events, {o['stuck']} stuck, "
                   f"{o['flows']['released']['drawn']} release arrows, {o['flows']['explains']['drawn']} cause "
                   f"arrows; clock: {_clock_line(o['clock'])}")


def _clock_line(clock: dict) -> str:
    methods = {v["method"] for v in clock["ranks"].values()}
    if methods == {"barrier"}:
        return f"ranks aligned on launch {clock['aligned_on_launch']}'s first cross-rank barrier"
    if methods == {"first-event"}:
        return "no cross-rank barrier: each rank starts at its own first event"
    return "some ranks aligned on a cross-rank barrier, the others start at their own first event"
