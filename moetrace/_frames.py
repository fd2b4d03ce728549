"""The SQL views as polars LazyFrames: one definition of each view (sql/), streamed through DuckDB.

Each frame is a polars IO source: when a query is collected, a cursor of the
trace's DuckDB connection runs ``SELECT <the columns polars needs> FROM
<view>`` and hands polars arrow batches, so a LazyFrame reads only the
columns its query uses and never materialises the view twice.  The filter
polars pushes down is applied to each batch here (polars expressions do not
translate to SQL); the cursor is closed when the scan ends or is dropped.
"""

from __future__ import annotations

from typing import Iterator

BATCH_ROWS = 1 << 17


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def view_frame(con, view: str):
    """A LazyFrame over ``view`` of the DuckDB connection ``con`` (which must outlive the frame's scans)."""
    import polars as pl
    from polars.io.plugins import register_io_source

    cur = con.cursor()
    try:
        schema = pl.from_arrow(cur.sql(f"SELECT * FROM {_quote(view)} LIMIT 0").to_arrow_table()).schema
    finally:
        cur.close()

    def source(with_columns, predicate, n_rows, batch_size) -> Iterator["pl.DataFrame"]:
        want = list(with_columns) if with_columns is not None else list(schema)
        need = list(dict.fromkeys(want + (predicate.meta.root_names() if predicate is not None else [])))
        sql = f"SELECT {', '.join(_quote(c) for c in need) or '*'} FROM {_quote(view)}"
        if n_rows is not None and predicate is None:
            sql += f" LIMIT {int(n_rows)}"
        left = n_rows
        c = con.cursor()
        try:
            reader = c.sql(sql).to_arrow_reader(batch_size or BATCH_ROWS)
            for batch in reader:
                df = pl.from_arrow(batch)
                if not isinstance(df, pl.DataFrame):  # a one-column batch may come back as a Series
                    df = df.to_frame()
                if predicate is not None:
                    df = df.filter(predicate)
                df = df.select(want)
                if left is not None:
                    df = df.head(left)
                    left -= df.height
                yield df
                if left is not None and left <= 0:
                    break
        finally:
            c.close()

    return register_io_source(source, schema=schema, is_pure=True)
