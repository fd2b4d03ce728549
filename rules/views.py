"""The SQL views over a dataset: one in-memory DuckDB connection per use.

``connect(dataset)`` registers the dataset's parquet files read-only as
``_raw_events`` (integer codes, exactly the stored columns), creates the
helpers that come from the contract and the manifest (``_regions``,
``_sites``, ``_manifest``, and per enum the macros ``_<enum>_name(code)`` and
``_<enum>_code(name)``), then runs every ``sql/*.sql`` file in dependency
order. Names live only in these helpers, derived from ``ingest.contract``:
the SQL files never spell a code.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from ingest.contract import COLUMNS, _Named
from ingest.dataset import Dataset

_REPO_SQL = Path(__file__).resolve().parent.parent / "sql"


def sql_dir() -> Path:
    """``<repo>/sql`` in a checkout or editable install; ``<prefix>/share/moetrace/sql`` from a wheel."""
    if _REPO_SQL.is_dir():
        return _REPO_SQL
    shared = Path(sys.prefix) / "share" / "moetrace" / "sql"
    if shared.is_dir():
        return shared
    raise FileNotFoundError(f"moetrace's sql directory is missing (looked in {_REPO_SQL} and {shared})")


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower()


def _list(items) -> str:
    return "[" + ", ".join(_quote(i) if i is not None else "NULL" for i in items) + "]::VARCHAR[]"


def enums() -> list[type[_Named]]:
    """Every enum a column names, once, in column order."""
    seen: list[type[_Named]] = []
    for c in COLUMNS:
        if c.enum is not None and c.enum not in seen:
            seen.append(c.enum)
    from ingest.contract import Role

    if Role not in seen:
        seen.append(Role)
    return seen


def _helpers(con, dataset: Dataset) -> None:
    m = dataset.manifest
    for enum in enums():
        names = [n or None for n in enum.wires()]
        stem = _snake(enum.__name__)
        con.execute(f"CREATE MACRO _{stem}_name(c) AS ({_list(names)})[c + 1]")
        con.execute(f"CREATE MACRO _{stem}_code(n) AS list_position({_list(names)}, n) - 1")
    region_names = [r.name for r in m.regions]
    if region_names:
        con.execute(f"CREATE MACRO _region_name(r) AS ({_list(region_names)})[r + 1]")
    else:
        con.execute("CREATE MACRO _region_name(r) AS CAST(NULL AS VARCHAR)")
    con.execute("""CREATE TABLE _regions (id SMALLINT, name VARCHAR, role VARCHAR, elem_bytes INTEGER,
                   length BIGINT, reset BIGINT, monotonic BOOLEAN, slot_words INTEGER, "index" VARCHAR,
                   base BIGINT)""")
    if m.regions:
        con.executemany("INSERT INTO _regions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [(r.id, r.name, r.role.wire, r.elem_bytes, r.length, r.reset, r.monotonic,
                          r.slot_words, r.index, r.base) for r in m.regions])
    con.execute("CREATE TABLE _sites (id INTEGER, text VARCHAR)")
    if m.sites:
        con.executemany("INSERT INTO _sites VALUES (?, ?)", sorted(m.sites.items()))

    def p(name):
        v = m.param(name)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    local = p("local_experts")
    num = m.num_experts if isinstance(m.num_experts, int) else None
    con.execute("""CREATE TABLE _manifest (ranks INTEGER, cores INTEGER, protocol VARCHAR,
                   num_experts BIGINT, local_experts BIGINT, tokens BIGINT, topk BIGINT, capacity BIGINT,
                   expert_sentinel BIGINT, words_per_rank BIGINT, clock_hz DOUBLE)""")
    con.execute("INSERT INTO _manifest VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (m.ranks, m.cores, m.protocol, num, local, p("tokens"), p("topk"), p("capacity"),
                 p("expert_sentinel"), m.words_per_rank, m.clock_hz))


def _raw(con, dataset: Dataset) -> None:
    files = [str(p) for _, p in sorted(dataset.files.items())]
    if files and dataset.fs is not None:
        # A dataset behind a URL: DuckDB scans it through pyarrow's file system (no DuckDB
        # extension, no credentials of its own; external access can stay off).
        import pyarrow.dataset as pads

        con.register("_remote_events", pads.dataset(files, filesystem=dataset.fs, format="parquet"))
        con.execute("CREATE VIEW _raw_events AS SELECT * FROM _remote_events")
    elif files:
        listed = ", ".join(_quote(f) for f in files)
        con.execute(f"CREATE VIEW _raw_events AS SELECT * FROM read_parquet([{listed}], hive_partitioning = false)")
    else:
        import pyarrow as pa

        from ingest.contract import SCHEMA

        con.register("_no_events", pa.Table.from_batches([], schema=SCHEMA))
        con.execute("CREATE VIEW _raw_events AS SELECT * FROM _no_events")


def _strip_comments(text: str) -> str:
    return re.sub(r"--[^\n]*", "", text)


def view_files(directory: Path | None = None) -> list[Path]:
    """The sql files in dependency order: a file naming another file's view runs after it."""
    directory = directory or sql_dir()
    files = {p.stem: p for p in sorted(directory.glob("*.sql"))}
    deps = {}
    for stem, p in files.items():
        body = _strip_comments(p.read_text())
        deps[stem] = {o for o in files if o != stem and re.search(rf"\b{re.escape(o)}\b", body)}
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(s: str, path: tuple[str, ...]) -> None:
        if state.get(s) == 2:
            return
        if state.get(s) == 1:
            raise RuntimeError(f"sql views depend on each other in a cycle: {' -> '.join(path + (s,))}")
        state[s] = 1
        for d in sorted(deps[s]):
            visit(d, path + (s,))
        state[s] = 2
        order.append(s)

    for s in files:
        visit(s, ())
    return [files[s] for s in order]


def connect(dataset: Dataset, threads: int | None = None):
    """An in-memory DuckDB connection with every view over ``dataset`` in place."""
    import duckdb

    con = duckdb.connect(":memory:")
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    _helpers(con, dataset)
    _raw(con, dataset)
    for p in view_files():
        try:
            con.execute(p.read_text())
        except duckdb.Error as e:
            raise RuntimeError(f"{p}: {e}") from e
    return con
