"""``moetrace query DATASET "SQL"``: run SQL with the views in place.

The dataset is only read: DuckDB runs in memory over its parquet files.
``query`` is run by CI jobs on uploaded traces, so by default it is
sandboxed: one SELECT statement, DuckDB's external access off with only the
dataset's own event files allowed, no extension loading or installing, and the
configuration locked so the SQL cannot lift any of it. ``--unsafe`` lifts the
sandbox for a local user who wants COPY, ATTACH or other files.
"""

from __future__ import annotations

import math
from pathlib import Path

import typer

from ._common import die

FORMATS = ("table", "csv", "json")


def register(app: typer.Typer) -> None:
    @app.command("query")
    def query_cmd(
        dataset: Path = typer.Argument(..., help="a moetrace dataset (see `moetrace ingest`)"),
        sql: str = typer.Argument(..., help="SQL over the views events, waits, writes, routes, last_event, ..."),
        fmt: str = typer.Option("table", "--format", help="table, csv or json"),
        unsafe: bool = typer.Option(False, "--unsafe",
                                    help="lift the sandbox: allow any statement (COPY, ATTACH, SET, several "
                                         "statements) and files outside the dataset"),
    ) -> None:
        """Run a SQL query over a dataset with moetrace's views in place."""
        if fmt not in FORMATS:
            raise die(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        import duckdb

        from ingest.dataset import Dataset
        from rules.views import connect

        ds = Dataset(dataset)
        try:
            con = connect(ds)
        except (duckdb.Error, RuntimeError) as e:  # a damaged event file fails the views' creation
            raise die(f"cannot read the dataset {dataset}: {_one_line(str(e))}") from None
        try:
            if not unsafe:
                sql = _sandbox(con, ds, sql)
            cur = con.execute(sql)
            names = [d[0] for d in cur.description] if cur.description else []
            rows = cur.fetchall() if names else []
        except duckdb.Error as e:
            raise die(f"query failed: {_one_line(str(e))}") from None
        finally:
            con.close()
        typer.echo(render(names, rows, fmt), nl=False)


def _sandbox(con, dataset, sql: str) -> str:
    """Lock ``con`` down to reading the dataset; the one SELECT statement of ``sql``, or a usage error."""
    import duckdb

    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as e:
        raise die(f"query failed: {_one_line(str(e))}") from None
    if len(statements) != 1:
        raise die(f"query takes exactly one SQL statement, got {len(statements)} (--unsafe allows several)")
    kind = statements[0].type
    if kind != duckdb.StatementType.SELECT:
        raise die(f"query only reads: {kind.name} statements need --unsafe")
    files = [str(p) for _, p in sorted(dataset.files.items())]
    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)
    for setting in (f"SET allowed_paths = [{listed}]" if files else None,
                    "SET enable_external_access = false",
                    "SET autoinstall_known_extensions = false",
                    "SET autoload_known_extensions = false",
                    "SET lock_configuration = true"):
        if setting:
            con.execute(setting)
    return statements[0].query


def _one_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " ".join(lines[:3]) if lines else "unknown error"


def render(names: list[str], rows: list[tuple], fmt: str) -> str:
    if fmt == "json":
        import json

        doc = [{n: _jsonable(v) for n, v in zip(names, r)} for r in rows]
        return json.dumps(doc, indent=None, separators=(",", ":"), allow_nan=False) + "\n"
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(names)
        for r in rows:
            w.writerow(["" if v is None else _text(v) for v in r])
        return buf.getvalue()
    return _table(names, rows)


def _jsonable(v):
    """Exact JSON for a DuckDB value: ints stay ints, decimals keep their digits."""
    import datetime
    import decimal
    import uuid

    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, decimal.Decimal):
        if v == v.to_integral_value():
            return int(v)
        f = float(v)  # a JSON number where that is exact, else the digits as text
        return f if decimal.Decimal(repr(f)) == v else str(v)
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).hex()
    if isinstance(v, (datetime.date, datetime.time, datetime.datetime)):
        return v.isoformat()
    if isinstance(v, (datetime.timedelta, uuid.UUID)):
        return str(v)
    return str(v)


def _text(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple, dict)):
        import json

        return json.dumps(_jsonable(v))
    return str(v)


def _table(names: list[str], rows: list[tuple]) -> str:
    if not names:
        return ""
    cells = [["NULL" if v is None else _text(v) for v in r] for r in rows]
    widths = [max([len(n)] + [len(c[i]) for c in cells]) for i, n in enumerate(names)]
    numeric = [all(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows if r[i] is not None)
               for i in range(len(names))]

    def line(vals):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(vals, widths, numeric)).rstrip()

    out = [line(names), "  ".join("-" * w for w in widths)]
    out += [line(c) for c in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out) + "\n"
