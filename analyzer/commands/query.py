"""``moetrace query DATASET "SQL"``: run SQL with the views in place.

The dataset is only read: DuckDB runs in memory over its parquet files.
``query`` is run by CI jobs on uploaded traces, so by default it is
sandboxed: one SELECT statement, DuckDB's external access off with only the
dataset's own event files allowed (resolved inside the dataset: no link in it
leads out), DuckDB's temp directory a private one of the process (DuckDB lets
a query read its temp directory, by default ``.tmp`` in the working
directory), no extension loading or installing, and the configuration locked
so the SQL cannot lift any of it. ``--unsafe`` lifts the
sandbox for a local user who wants COPY, ATTACH or other files.
"""

from __future__ import annotations

import io
import math
import os
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Literal, Optional

import typer

from analyzer.output import write_output

from ._common import Command, die

FORMATS = ("table", "csv", "json", "parquet")
# The formats DuckDB writes itself (COPY ... TO), streaming: rows never pass through Python.
COPY_OPTIONS = {"csv": "FORMAT csv, HEADER true", "json": "FORMAT json, ARRAY true", "parquet": "FORMAT parquet"}
# DuckDB would write a tmp_ sibling and rename it: impossible on stdout; -o is renamed into place here.


def register(app: typer.Typer) -> None:
    @app.command("query", cls=Command)
    def query_cmd(
        dataset: str = typer.Argument(..., metavar="DATASET",
                                      help="a moetrace dataset (see `moetrace ingest`): a path, or a URL "
                                           "pyarrow reads (s3://, gs://, file://, ...)"),
        sql: str = typer.Argument(..., metavar="SQL",
                                  help="SQL over the views events, waits, writes, routes, last_event, ..."),
        fmt: Literal[FORMATS] = typer.Option("table", "--format", help="output format"),
        output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE",
                                              help="Write the result here (default: stdout)."),
        unsafe: bool = typer.Option(False, "--unsafe",
                                    help="lift the sandbox: allow any statement (COPY, ATTACH, SET, several "
                                         "statements) and files outside the dataset"),
    ) -> None:
        """Run a SQL query over a dataset with moetrace's views in place."""
        from ingest.dataset import Dataset
        from ingest.location import as_location

        ds = Dataset(as_location(dataset))
        # DuckDB spills to its temp directory, which it also lets a sandboxed query read: by default
        # '.tmp' in the working directory, where anything of the user's may lie. A private one instead,
        # empty but for DuckDB's own files, removed when the query is done.
        with tempfile.TemporaryDirectory(prefix="moetrace-duckdb-") as spill:
            _query(ds, dataset, sql, fmt, output, unsafe, spill)


def _query(ds, dataset: str, sql: str, fmt: str, output: Path | None, unsafe: bool, spill: str) -> None:
    import duckdb

    from rules.views import connect

    try:
        con = connect(ds)
    except (duckdb.Error, RuntimeError) as e:  # a damaged event file fails the views' creation
        raise die(f"cannot read the dataset {dataset}: {_one_line(str(e))}") from None
    try:
        con.execute(f"SET temp_directory = {_quoted(spill)}")
        if fmt in COPY_OPTIONS:
            try:
                statements = con.extract_statements(sql)
            except duckdb.Error as e:
                raise die(f"query failed: {_one_line(str(e))}") from None
            if statements and statements[-1].type == duckdb.StatementType.SELECT \
                    and (unsafe or len(statements) == 1):
                # Sandboxed, the one SELECT streams out through COPY with writes allowed to its
                # target alone (the configuration is locked before the COPY runs).
                lock = None if unsafe else (lambda target: _lock(con, ds, writable=(target,)))
                try:
                    for st in statements[:-1]:
                        con.execute(st)
                    _copy(con, statements[-1].query, fmt, output, lock)
                except duckdb.Error as e:
                    raise die(f"query failed: {_one_line(str(e))}") from None
                return
        try:
            if not unsafe:
                sql = _sandbox(con, ds, sql)
            cur = con.execute(sql)
            names = [d[0] for d in cur.description] if cur.description else []
            if fmt == "parquet":  # not a SELECT (PRAGMA, SHOW, ...): DuckDB's arrow, written by pyarrow
                table = cur.to_arrow_table() if names else None
                rows = []
            else:
                rows = cur.fetchall() if names else []
        except duckdb.Error as e:
            raise die(f"query failed: {_one_line(str(e))}") from None
    finally:
        con.close()
    if fmt == "parquet":
        _parquet(table, output)
    elif output is not None:
        _atomic(output, lambda target: target.write_text(render(names, rows, fmt)))
    else:
        typer.echo(render(names, rows, fmt), nl=False)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _copy(con, query: str, fmt: str, output: Path | None, lock=None) -> None:
    """DuckDB's own writer streams the result: to ``output`` (atomically), else to stdout.

    ``lock(target)``, where given, sandboxes the connection with writes allowed to ``target``
    alone, just before the COPY that writes it.
    """
    body = _without_final_semicolon(query)

    def copy(target) -> None:  # newlines: a trailing -- comment must not eat the paren
        if lock is not None:
            lock(str(target))
        con.execute(f"COPY (\n{body}\n) TO {_quoted(str(target))} "
                    f"({COPY_OPTIONS[fmt]}, USE_TMP_FILE false)")
    if output is not None:
        _atomic(output, copy)
        return
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, io.UnsupportedOperation):
        fd = None
    if fd is not None and not stat.S_ISREG(os.fstat(fd).st_mode):
        sys.stdout.flush()
        copy(f"/dev/fd/{fd}")  # a pipe or terminal: DuckDB writes straight into it
        return
    # A regular file (reopening it would truncate it, or lose an append's offset) or no file at all
    # (an in-process caller's buffer): let DuckDB write a file and pass its bytes on.
    with tempfile.TemporaryDirectory(prefix="moetrace-query-") as tmp:
        path = Path(tmp) / f"out.{fmt}"
        copy(path)
        _pass_on(path, fmt)


def _without_final_semicolon(sql: str) -> str:
    """The statement without its terminating ';' (kept comments after it end at the newline COPY adds)."""
    last, i, n = -1, 0, len(sql)
    while i < n:
        c = sql[i]
        if c in "'\"":  # a string or quoted name: '' / "" inside are doubled quotes, skipped alike
            j = sql.find(c, i + 1)
            i = n if j < 0 else j + 1
            continue
        if sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if c == ";":
            last = i
        elif not c.isspace():
            last = -1  # code after a ';': it was not the end
        i += 1
    return sql if last < 0 else sql[:last] + " " + sql[last + 1:]


def _pass_on(path: Path, fmt: str) -> None:
    sink = getattr(sys.stdout, "buffer", None)
    with open(path, "rb") as fh:
        if sink is not None:
            shutil.copyfileobj(fh, sink, 1 << 20)
            sink.flush()
        elif fmt == "parquet":
            raise die("--format parquet is binary: give -o FILE, or a pipe or file as stdout")
        else:
            while chunk := fh.read(1 << 20):
                sys.stdout.write(chunk.decode())
        sys.stdout.flush()


def _parquet(table, output: Path | None) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = table if table is not None else pa.table({})
    if output is not None:
        _atomic(output, lambda target: pq.write_table(table, target))
        return
    with tempfile.TemporaryDirectory(prefix="moetrace-query-") as tmp:
        path = Path(tmp) / "out.parquet"
        pq.write_table(table, path)
        _pass_on(path, "parquet")


def _atomic(output: Path, write) -> None:
    """``write(target)`` for ``output`` (``analyzer.output``): a reader never sees half a result."""
    output = Path(output)
    if not output.parent.is_dir():  # say it before the query runs, in our words, not the writer's
        raise die(f"{output}: cannot write: no such directory {output.parent}")
    try:
        write_output(output, write)
    except OSError as e:
        raise die(f"{output}: cannot write: {e.strerror or e}") from None


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
    _lock(con, dataset)
    return statements[0].query


def _lock(con, dataset, writable=()) -> None:
    """External access off but for the dataset's event files (and ``writable``: a COPY's target),
    no extension loads, the configuration locked."""
    local = [] if dataset.fs is not None else [str(p) for _, p in sorted(dataset.files.items())]
    files = local + [str(w) for w in writable]
    listed = ", ".join(_quoted(f) for f in files)
    for setting in (f"SET allowed_paths = [{listed}]" if files else None,
                    "SET enable_external_access = false",
                    "SET autoinstall_known_extensions = false",
                    "SET autoload_known_extensions = false",
                    "SET lock_configuration = true"):
        if setting:
            con.execute(setting)


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
