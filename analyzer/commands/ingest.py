"""``moetrace ingest INPUT... -o DATASET``: validate a trace and write the dataset."""

from __future__ import annotations

from pathlib import Path
from typing import List, Literal

import typer

from ._common import Command


def register(app: typer.Typer) -> None:
    @app.command("ingest", cls=Command)
    def ingest_cmd(
        inputs: List[Path] = typer.Argument(..., metavar="INPUT...",
                                            help="trace directories, .jsonl[.gz|.zst] files, .mtr ring dumps "
                                                 "or moetrace datasets"),
        out: Path = typer.Option(..., "-o", "--out", metavar="DATASET", help="dataset directory to write"),
        force: bool = typer.Option(False, "--force", help="replace DATASET if it exists"),
        no_progress: bool = typer.Option(False, "--no-progress", help="no progress bars on stderr (none unless it is a terminal)"),
        fmt: Literal["text", "json"] = typer.Option("text", "--format", help="report format"),
    ) -> None:
        """Validate a trace (manifest + events) and write it as a moetrace dataset."""
        import json

        from ingest._jit import own_process
        from ingest.run import ingest

        from ._common import Bars

        own_process()  # the command line's process: freed memory kept for reuse, in small pages

        with Bars(enabled=not no_progress) as bars:  # events read, rows written
            report = ingest(inputs, out, force=force, progress=bars)
        if fmt == "json":
            doc = {"dataset": str(out), **report.to_json()}
            typer.echo(json.dumps(doc, indent=2))
            return
        typer.echo(render_text(report, out))


def render_text(report, out: Path) -> str:
    lines = [f"dataset {out}: {report.rows_out:,} rows from {report.events_in:,} events in, "
             f"{report.lost:,} lost to ring wrap"]
    rows = [("source", "format", "events_in", "rows_out", "lost")]
    rows += [(s.path, s.format, f"{s.events_in:,}", f"{s.rows_out:,}", f"{s.lost:,}") for s in report.sources]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        lines.append("  " + "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                                      for i, (c, w) in enumerate(zip(r, widths))).rstrip())
    lost = [c for c in report.cores if c.lost]
    if lost:
        lines.append("  lost by (rank, core): " + ", ".join(f"({c.rank}, {c.core}): {c.lost:,}" for c in lost))
    missing = report.ranks_missing
    lines.append("  ranks missing: " + (", ".join(map(str, missing)) if missing else "none"))
    return "\n".join(lines)
