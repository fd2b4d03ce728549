"""moetrace from Python: a trace's views as polars LazyFrames, its diagnosis as a polars DataFrame.

    import moetrace
    t = moetrace.open("trace.ds")            # a dataset, or raw traces (ingested into a temporary one)
    t.waits().filter(pl.col("stuck")).collect()
    report = t.diagnose(select=["MT1", "MT5"])
    report.findings()                        # polars DataFrame, one row per finding
    report.roots                             # the root causes, as Finding values

The frames have the columns and meaning of the SQL views of the same name
(sql/*.sql, documented there and in docs/trace-format.md); docs/python-api.md
has a worked example.
"""

from __future__ import annotations

import weakref
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ingest.errors import TraceError  # the one error type for bad input, CLI and API alike (tiny import)

if TYPE_CHECKING:  # pragma: no cover
    import polars as pl

    from analyzer.engine import Report as EngineReport
    from analyzer.finding import Finding

__all__ = ["open", "Trace", "Diagnosis", "TraceError"]

def open(path: str | Path | Sequence[str | Path], config: str | Path | None = None) -> "Trace":  # noqa: A001
    """Open a dataset directory, or raw traces (JSONL directories, .mtr dumps) ingested on the fly.

    ``config``: a moetrace.toml / pyproject.toml for ``diagnose`` (default: found from the input
    upward, as the command line does).  Raises ``moetrace.TraceError`` (``ingest.errors.TraceError``)
    on any bad input: a missing or damaged dataset, a part file of the wrong schema, a link out of the
    dataset, raw traces that do not ingest.
    """
    return Trace(path, config)


class Trace:
    """An open trace. Close it (or use ``with``) to release a temporary dataset of raw inputs."""

    def __init__(self, path, config=None):
        from analyzer.config import load_config
        from analyzer.inputs import as_dataset
        from ingest.dataset import Dataset
        from rules.views import connect

        from ingest.location import as_location

        inputs = [as_location(path)] if isinstance(path, (str, Path)) else [as_location(p) for p in path]
        self._stack = ExitStack()
        try:
            self.path = self._stack.enter_context(as_dataset(inputs))
            self.dataset = Dataset(self.path)
            self.config = load_config(config, search_from=[*(p for p in inputs[:1] if isinstance(p, Path)), Path.cwd()])
            self._con = connect(self.dataset)
            self._stack.callback(self._con.close)
        except BaseException:
            self._stack.close()
            raise
        # A trace dropped without close() still removes its temporary dataset (at collection or exit).
        self._finalizer = weakref.finalize(self, self._stack.close)
        self.inputs = tuple(str(p) for p in inputs)

    @property
    def manifest(self):
        return self.dataset.manifest

    def view(self, name: str) -> "pl.LazyFrame":
        """Any view of sql/ (events, waits, writes, routes, last_event) as a LazyFrame; ValueError for another name."""
        from ._frames import view_frame

        views = self.sql("SELECT view_name FROM duckdb_views() WHERE NOT internal "
                         "AND view_name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY 1")["view_name"].to_list()
        if name not in views:
            raise ValueError(f"no view {name!r}; the views are {', '.join(views)}")
        return view_frame(self._con, name)

    def events(self) -> "pl.LazyFrame":
        """Every event, names in place of codes (sql/events.sql)."""
        return self.view("events")

    def waits(self) -> "pl.LazyFrame":
        """Every wait_begin paired with its wait_end; ``stuck`` where none followed (sql/waits.sql)."""
        return self.view("waits")

    def routes(self) -> "pl.LazyFrame":
        """The router's decisions with the expert id checked against the manifest (sql/routes.sql)."""
        return self.view("routes")

    def sql(self, query: str) -> "pl.DataFrame":
        """Run SQL over the views; the result as a polars DataFrame."""
        import polars as pl

        cur = self._con.cursor()
        try:
            return pl.from_arrow(cur.sql(query).to_arrow_table())
        finally:
            cur.close()

    def diagnose(self, select: str | Sequence[str] | None = None,
                 ignore: str | Sequence[str] | None = None, max_findings: int | None = None) -> "Diagnosis":
        """Run the rules (the config's, narrowed by ``select`` / ``ignore``: codes, prefixes or families).
        ``max_findings``: findings listed per defect class (the config's max-findings, else 200); the
        counts stay exact."""
        from dataclasses import replace

        from analyzer.engine import diagnose

        config = self.config.with_overrides(select=_codes(select), ignore=_codes(ignore), max_findings=max_findings,
                                            where="moetrace.diagnose")
        report = diagnose([self.path], config)
        return Diagnosis(replace(report, trace=replace(report.trace, inputs=self.inputs)))

    def close(self) -> None:
        self._finalizer()

    def __enter__(self) -> "Trace":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        m = self.manifest
        return f"<moetrace.Trace {', '.join(self.inputs)}: {m.protocol or '?'}, {m.ranks} ranks x {m.cores} cores>"


def _codes(value: str | Sequence[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else list(value)


class Diagnosis:
    """A diagnosis: ``findings()`` as a DataFrame, ``roots`` as findings, ``render(fmt)`` as any report format."""

    def __init__(self, report: "EngineReport"):
        self.report = report

    @property
    def roots(self) -> list["Finding"]:
        """Findings with no cause: the root causes (the JSON report's ``root_cause``)."""
        return self.report.roots

    def finding(self, fid: str) -> "Finding":
        return self.report.by_id(fid)

    def findings(self) -> "pl.DataFrame":
        """One row per listed finding (each class's first ``max_findings``), in report order (roots first);
        ``class`` its defect class, ``root`` true for a root cause."""
        import polars as pl

        rows = [(f.id, f.code, f.family, f.name, f.severity, f.confidence, f.location.rank, f.location.core,
                 f.location.launch, f.location.region, f.location.offset, f.location.source, f.message,
                 f.defect_class, f.is_root, list(f.caused_by), list(f.explains)) for f in self.report.findings]
        schema = {"id": pl.String, "code": pl.String, "family": pl.String, "name": pl.String,
                  "severity": pl.String, "confidence": pl.String, "rank": pl.Int16, "core": pl.Int16,
                  "launch": pl.Int32, "region": pl.String, "offset": pl.Int64, "source": pl.String,
                  "message": pl.String, "class": pl.String, "root": pl.Boolean, "caused_by": pl.List(pl.String),
                  "explains": pl.List(pl.String)}
        return pl.DataFrame(rows, schema=schema, orient="row")

    def exit_code(self, fail_on: str | None = None) -> int:
        return self.report.exit_code(fail_on)

    def render(self, fmt: str = "text", **extra) -> str:
        """The report as the command line prints it: text, json, sarif, junit or html."""
        from analyzer.report import render

        return render(self.report, fmt, **extra)

    def __len__(self) -> int:
        return len(self.report.findings)

    def __repr__(self) -> str:
        c = self.report.counts()
        return f"<moetrace.Diagnosis {c['findings']} findings, {c['root_causes']} root causes>"
