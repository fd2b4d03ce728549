"""The moetrace dataset: manifest + ingest report + parquet events by rank.

Layout::

    DATASET/
      manifest.json                 the trace manifest, unchanged
      ingest.json                   the ingest report (counts per source and per (rank, core))
      events/rank=R/part-0.parquet  rank R's events in (core, seq) order

A large trace is cut into *blocks*: runs of whole launches of about
``BLOCK_EVENTS`` events across all ranks, listed in the ingest report.  In a
trace of several blocks every row group holds one (core, block) run, so a
window of blocks reads exactly its row groups (by their launch statistics),
still in (core, seq) order.  That lets the analyzer hold a window of launches
in memory instead of the whole trace.

This module is the layout, the ingest report and the read side; the writer
(``ingest.writer``) stages everything in a hidden sibling directory and renames
it into place at the end, so an interrupted or failed ingest leaves nothing behind.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .column_read import _dtype, into, to_numpy
from .contract import COLUMN, COLUMNS
from .errors import TraceError
from .ingest_report import Block, IngestReport
from .location import Remote, inside, is_url, reason
from .manifest import Manifest
from .parts import check_parts, local_file

EVENTS_DIR = "events"
REPORT_FILE = "ingest.json"
MANIFEST_FILE = "manifest.json"
PART_FILE = "part-0.parquet"  # each rank's one file below events/rank=R/
# Events per block (all ranks): small enough that a window of a few blocks is a
# modest fraction of a 100 M event trace, large enough to keep row groups big.
BLOCK_EVENTS = 1 << 20


# --------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------


class Dataset:
    """A dataset opened read-only: a local directory, or a URL (``ingest.location``).

    Opening checks every file a reader will take (``ingest.parts``): each lies inside the
    dataset's real path, and each part file's footer is of the contract's schema.
    ``files`` holds the resolved paths: the only ones ever handed to a reader.
    """

    def __init__(self, root: str | Path):
        self.remote = Remote(root) if is_url(root) else None
        self.root = self.remote.url if self.remote else Path(root)
        self.fs = self.remote.fs if self.remote else None  # None: the local file system, by path
        if not (_holds_dataset(self.remote) if self.remote else is_dataset(self.root)):  # one URL resolve
            raise TraceError(self.root, "", "not a moetrace dataset (no ingest.json / events/)")
        real = None if self.remote else os.path.realpath(self.root)
        if self.remote:
            self.manifest = Manifest.from_bytes(self.remote.read_bytes(MANIFEST_FILE), self.remote.url_of(MANIFEST_FILE))
        else:
            self.manifest = Manifest.load(local_file(real, self.root / MANIFEST_FILE))
        report = self.remote.url_of(REPORT_FILE) if self.remote else self.root / REPORT_FILE
        try:
            text = self.remote.read_bytes(REPORT_FILE) if self.remote else Path(local_file(real, report)).read_text()
            self.report = IngestReport.from_json(json.loads(text))
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:  # any damage, not only bad JSON
            raise TraceError(report, "", f"unreadable ingest report: {e!r}") from None
        # rank -> its parquet file, resolved: a path, or a path in ``self.fs`` for a URL.
        self.files: dict[int, Path | str] = {}
        shown: dict[int, Path | str] = {}  # the same file as the user names it, for messages
        if self.remote:
            parts = self.remote.subdirs(EVENTS_DIR)
        else:
            events = inside(real, self.root / EVENTS_DIR)  # listed only once it is known to be ours
            parts = [d.name for d in Path(events).iterdir() if d.name.startswith("rank=")]
        for name in sorted(d for d in parts if d.startswith("rank=")):
            where = self.remote.url_of(EVENTS_DIR, name) if self.remote else self.root / EVENTS_DIR / name
            try:
                r = int(name.split("=", 1)[1])
            except ValueError:
                raise TraceError(where, "", "bad partition directory name") from None
            if self.remote:
                self.files[r] = self.remote.path(EVENTS_DIR, name, PART_FILE)
                shown[r] = self.remote.url_of(EVENTS_DIR, name, PART_FILE)
            else:
                shown[r] = self.root / EVENTS_DIR / name / PART_FILE
                self.files[r] = Path(local_file(real, shown[r]))
        self.ranks = sorted(self.files)
        # Every footer now, checked: a damaged or foreign part is refused before any reader starts.
        self._rows = check_parts({r: (str(p), shown[r]) for r, p in self.files.items()}, self.fs)

    def num_rows(self) -> int:
        return sum(self._rows.values())

    def table(self, columns: Sequence[str] | None = None, ranks: Iterable[int] | None = None) -> pa.Table:
        """Events as one arrow table, ranks ascending, each in (core, seq) order."""
        cols = list(columns) if columns is not None else [c.name for c in COLUMNS]
        parts = []
        for r in (self.ranks if ranks is None else ranks):
            p = self.files.get(r)
            if p is None:
                continue
            try:
                parts.append(pq.read_table(p, columns=cols, partitioning=None, filesystem=self.fs))
            except (OSError, pa.ArrowException) as e:
                raise TraceError(p, "", f"unreadable parquet: {reason(e)}") from None
        if not parts:
            return pa.Table.from_arrays([pa.array([], COLUMN[c].type) for c in cols], names=cols)
        return pa.concat_tables(parts)

    @property
    def blocks(self) -> list[Block]:
        """The trace's blocks; empty when it was written as one (small, or before blocks existed)."""
        return self.report.blocks if len(self.report.blocks) > 1 else []

    def arrays(self, columns: Sequence[str], ranks: Iterable[int] | None = None,
               blocks: tuple[int, int] | None = None, nulls: dict[str, int] | None = None) -> dict[str, np.ndarray]:
        """Columns as numpy arrays of the contract's types, nulls as each column's sentinel.

        ``blocks=(k0, k1)``: only the launches of blocks k0..k1-1, still in
        (rank, core, seq) order.  Filled file by file into preallocated
        arrays: only one rank's rows are ever held as arrow, where
        concatenating whole tables and then converting held the dataset twice.
        ``nulls``, where given, receives each column's count of nulls (arrow's, no pass).
        """
        cols = list(dict.fromkeys(columns))
        window = self._launch_window(blocks)
        plans = [self._plan(r, window) for r in (self.ranks if ranks is None else ranks) if r in self.files]
        n = sum(rows for *_, rows in plans)
        out = {c: np.empty(n, dtype=_dtype(c)) for c in cols}
        plans = [plan for plan in plans if plan[2]]
        pos = 0
        # The next file decodes (arrow, without the GIL) while this one is copied into the arrays
        def read(k: int):
            if k == len(plans):
                return None
            path, f, groups, mask, _ = plans[k]
            return pool.submit(_read_groups, path, f, groups, cols, mask)

        with ThreadPoolExecutor(1) as pool:
            ahead = read(0)
            for k in range(len(plans)):
                t = ahead.result()
                ahead = read(k + 1)
                end = pos + t.num_rows
                for c in cols:
                    into(t.column(c), c, out[c][pos:end])
                    if nulls is not None:
                        nulls[c] = nulls.get(c, 0) + t.column(c).null_count
                pos = end
                del t
        # What arrow's pool kept of the decoded files (~100 MB at 5.7 M events) serves no numpy
        # array: handed back, it is not held under everything a window computes after its read.
        pa.default_memory_pool().release_unused()
        return out

    def take(self, columns: Sequence[str], rows: np.ndarray, blocks: tuple[int, int] | None = None
             ) -> dict[str, np.ndarray]:
        """``arrays(columns, blocks=blocks)`` at ``rows`` alone (ascending, distinct positions in
        what ``arrays`` gives), reading only the row groups that hold them: the evidence of a
        few hundred listed findings, not a window's every column again."""
        cols = list(dict.fromkeys(columns))
        rows = np.asarray(rows, np.int64)
        window = self._launch_window(blocks)
        out = {c: np.empty(len(rows), dtype=_dtype(c)) for c in cols}
        first = 0  # the view's first row of the file at hand
        done = 0  # rows taken so far
        for p, f, groups, mask, n in (self._plan(r, window) for r in self.ranks if r in self.files):
            upto = int(np.searchsorted(rows, first + n))
            if upto > done:
                local = rows[done:upto] - first
                if mask is None:  # whole row groups: read only those holding a row asked for
                    sizes = np.array([f.metadata.row_group(g).num_rows for g in groups], np.int64)
                    starts = np.concatenate(([0], np.cumsum(sizes)))
                    group_of = np.searchsorted(starts, local, "right") - 1
                    need = np.unique(group_of)
                    offsets = np.concatenate(([0], np.cumsum(sizes[need])))
                    inside_ = offsets[np.searchsorted(need, group_of)] + local - starts[group_of]
                    t = _read_groups(p, f, [groups[g] for g in need.tolist()], cols, None)
                else:
                    inside_, t = local, _read_groups(p, f, groups, cols, mask)
                for c in cols:
                    whole = np.empty(t.num_rows, dtype=_dtype(c))
                    into(t.column(c), c, whole)
                    out[c][done:upto] = whole[inside_]
                done = upto
            first += n
        return out

    def _launch_window(self, blocks: tuple[int, int] | None) -> tuple[int, int] | None:
        if blocks is None or not self.blocks:
            return None
        k0, k1 = blocks
        if not 0 <= k0 < k1 <= len(self.blocks):
            raise ValueError(f"block window {blocks} outside 0..{len(self.blocks)}")
        if (k0, k1) == (0, len(self.blocks)):
            return None
        return self.blocks[k0].launch_lo, self.blocks[k1 - 1].launch_hi

    def _plan(self, rank: int, window: tuple[int, int] | None):
        """(path, file, row groups, row mask or None, rows): what of a rank's file a launch window needs.

        Kept for the window being read (rules load columns one by one, and
        planning walks every row group's statistics); each file is opened
        once: a blocked file's metadata runs to megabytes.
        """
        if self.__dict__.get("_plans_for", ()) != window:
            self._plans_for, self._plans = window, {}
        if rank not in self._plans:
            self._plans[rank] = self._plan_file(rank, window)
        return self._plans[rank]

    def _open(self, rank: int) -> pq.ParquetFile:
        files = self.__dict__.setdefault("_open_files", {})
        if rank not in files:
            p = self.files[rank]
            try:
                files[rank] = pq.ParquetFile(p, filesystem=self.fs)
            except (OSError, pa.ArrowException) as e:
                raise TraceError(p, "", f"unreadable parquet: {reason(e)}") from None
        return files[rank]

    def _plan_file(self, rank: int, window: tuple[int, int] | None):
        # The writer cuts groups at block edges, so a mask (over the rows of the chosen
        # groups) appears only for datasets written otherwise: it keeps the read correct.
        p, f = self.files[rank], self._open(rank)
        if window is None:
            return p, f, list(range(f.num_row_groups)), None, f.metadata.num_rows
        lo, hi = window
        li = f.schema_arrow.get_field_index("launch")
        groups, masks, rows = [], [], 0
        for g in range(f.num_row_groups):
            meta = f.metadata.row_group(g)
            st = meta.column(li).statistics
            if st is not None and st.has_min_max:
                if st.max < lo or st.min > hi:
                    continue
                if lo <= st.min and st.max <= hi:
                    groups.append(g)
                    masks.append(meta.num_rows)  # whole: a count stands for an all-true mask
                    rows += meta.num_rows
                    continue
            try:
                launch = to_numpy(f.read_row_group(g, columns=["launch"]).column(0), "launch")
            except (OSError, pa.ArrowException) as e:
                raise TraceError(p, f"row group {g}", f"unreadable parquet: {reason(e)}") from None
            groups.append(g)
            masks.append((launch >= lo) & (launch <= hi))
            rows += int(masks[-1].sum())
        if all(isinstance(m, int) for m in masks):
            return p, f, groups, None, rows
        mask = np.concatenate([np.ones(m, bool) if isinstance(m, int) else m for m in masks])
        return p, f, groups, mask, rows


def _read_groups(path, f: pq.ParquetFile, groups: list[int], cols: list[str], mask: np.ndarray | None) -> pa.Table:
    """Row groups ``groups`` of one rank's file (its rows in ``mask`` where given), in one call:
    per-group calls cost ~1 ms each, and blocked files have hundreds."""
    try:
        t = f.read_row_groups(groups, columns=cols)
    except (OSError, pa.ArrowException, KeyError) as e:
        raise TraceError(path, "", f"unreadable parquet: {reason(e)}") from None
    return t if mask is None else t.filter(pa.array(mask))


def is_dataset(path: str | Path) -> bool:
    if is_url(path):
        return _holds_dataset(Remote(path))
    p = Path(path)
    return p.is_dir() and (p / REPORT_FILE).is_file() and (p / EVENTS_DIR).is_dir()


def _holds_dataset(remote: Remote) -> bool:
    return remote.is_file(REPORT_FILE) and remote.is_dir(EVENTS_DIR)
