"""A dataset's files as a reader may take them: inside the dataset, regular, and of the contract.

``Dataset`` opens a dataset through these checks before any reader (pyarrow,
DuckDB, polars) sees a path of it: every file is resolved inside the
dataset's real path (``ingest.location.inside``), must be a regular file (a
FIFO or device would block or never end), and every part file's footer is
read once and its schema compared with the contract's ``SCHEMA`` (names,
order, types, and no nulls where the contract requires a value).  A part
whose ``kind`` column was dropped or whose ``seq`` became text is refused
here, in one line naming the file and the column, instead of failing half
way through a rule or a view.  Only the footer is read (bench/RESULTS.md
"Opening a dataset" has the cost on many-part datasets).
"""

from __future__ import annotations

import os
import stat
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from .contract import SCHEMA
from .errors import TraceError
from .location import inside, reason

_THREADS = 8  # footers read at once


def local_file(real_root: str, path, shown=None) -> str:
    """``path`` resolved inside the dataset at ``real_root``, refused unless it is a regular file
    (or does not exist: the reader then says so in its own words)."""
    real = inside(real_root, path, shown)
    try:
        mode = os.stat(real).st_mode
    except OSError:
        return real
    if not stat.S_ISREG(mode):
        raise TraceError(shown if shown is not None else path, "", "not a regular file: refused")
    return real


def check_parts(parts: dict[int, tuple[str, object]], fs) -> dict[int, int]:
    """Rows of each part ``{rank: (path, shown)}``, every footer checked (``check_part``).

    Footers are read by a few threads: on an object store each is a round trip. The first bad part
    in rank order is the one reported, whichever thread found it first.
    """
    ranks = sorted(parts)
    if len(ranks) <= 1:
        return {r: check_part(*parts[r], fs) for r in ranks}
    with ThreadPoolExecutor(min(_THREADS, len(ranks))) as pool:
        return dict(zip(ranks, pool.map(lambda r: check_part(*parts[r], fs), ranks)))


def check_part(path: str, shown, fs) -> int:
    """The part file's rows, once its footer is read and its schema checked against the contract;
    ``shown`` names it in errors. The parsed footer is dropped: a blocked file's runs to megabytes
    in memory (6 MiB for 200 row groups), the readers that need it parse it again."""
    try:
        meta = pq.read_metadata(path, filesystem=fs)
        schema = meta.schema.to_arrow_schema()
    except (OSError, pa.ArrowException, ValueError) as e:
        raise TraceError(shown, "", f"unreadable parquet: {reason(e)}") from None
    check_schema(schema, shown)
    return meta.num_rows


def check_schema(schema: pa.Schema, shown) -> None:
    """A TraceError naming ``shown`` and the first column where ``schema`` departs from the contract's."""
    if len(set(schema.names)) != len(schema.names):
        twice = next(n for n in schema.names if schema.names.count(n) > 1)
        raise TraceError(shown, f"column {twice}", "appears more than once")
    have = {f.name: f for f in schema}
    for want in SCHEMA:
        got = have.get(want.name)
        if got is None:
            raise TraceError(shown, f"column {want.name}", f"missing (the contract's {want.type} column)")
        if got.type != want.type:
            raise TraceError(shown, f"column {want.name}", f"is {got.type}, the contract's type is {want.type}")
        if got.nullable and not want.nullable:
            raise TraceError(shown, f"column {want.name}", "may hold nulls; the contract requires a value in every row")
    for got in schema:
        if got.name not in SCHEMA.names:
            raise TraceError(shown, f"column {got.name}", "is not a column of the contract")
    if schema.names != SCHEMA.names:  # the same columns in another order: readers match by position too
        at = next(a for a, b in zip(schema.names, SCHEMA.names) if a != b)
        raise TraceError(shown, f"column {at}", "out of the contract's column order")

