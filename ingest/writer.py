"""The dataset writer: validated event tables in, one dataset out, atomically.

Everything is staged in a hidden sibling directory and renamed into place at
the end, so an interrupted or failed ingest leaves nothing behind (and one
killed outright leaves a staging directory the next ingest removes: see
``ingest.staging``); the layout and the report it writes are defined in
``ingest.dataset``.
"""

from __future__ import annotations

import json
import os
import shutil
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .contract import COLUMNS, SCHEMA
from .blocks import blocks_of, edges_from, launch_counts, merge_counts, row_cuts
from .dataset import BLOCK_EVENTS, EVENTS_DIR, MANIFEST_FILE, REPORT_FILE
from .ingest_report import CoreReport, IngestReport, SourceReport
from .errors import TraceError
from .manifest import Manifest
from .staging import check_replaceable, clean_stale, make_stage, os_error, swap_in

# Integer columns whose values are (near-)monotone within a core: delta-encode.
_DELTA = ("seq", "ts")
_ROW_GROUP = 1 << 20
_WORKERS = max(1, min(4, os.cpu_count() or 1))  # encoder threads (pyarrow and numpy release the GIL)

# Staging columns that travel with rows until commit, for precise errors.
_SRC = "_src"
_POS = "_pos"

class DatasetWriter:
    """Collects validated event tables and writes the dataset atomically.

    ``add`` takes a table with the contract's columns (any subset of the
    optional ones; missing columns are null) for rows of one source, plus the
    per-(rank, core) records lost to ring wrap. ``commit`` sorts each rank by
    (core, seq) where needed, checks seq strictly increases per (rank, core)
    across all sources, writes, and renames the staging directory into place.
    """

    def __init__(self, out: str | Path, manifest: Manifest, overwrite: bool = False,
                 block_events: int = BLOCK_EVENTS):
        self.out = Path(out)
        self.manifest = manifest
        self.overwrite = overwrite
        if block_events < 1:
            raise ValueError("block_events must be positive")
        self.block_events = block_events
        # Launches that end a block (the last block is open-ended), fixed by the first
        # rows added so every rank can be encoded as soon as it arrives (ingest.blocks.edges_from).
        self._edges: np.ndarray | None = None
        check_replaceable(self.out, overwrite)
        self._by_rank: dict[int, list[pa.Table]] = {}
        self._lost: dict[tuple[int, int], int] = {}
        self.report = IngestReport()
        # Ranks are encoded to parquet in worker threads (pyarrow and numpy
        # release the GIL): speculatively as soon as a source adds a rank, so
        # the next source decodes while this one compresses. A rank that gets
        # more rows later is encoded again at commit; results are used in rank
        # order, so errors are the same as a sequential write.
        self._pool: ThreadPoolExecutor | None = None
        self._spec: dict[int, tuple[int, Future]] = {}
        # Ranks the caller said get no more rows (``seal``), and those of them encoded: their tables are let
        # go, only the encoded file is kept. Without, every rank's rows stayed until commit (10.5 GiB for a
        # 99 M-event ring ingest).
        self._sealed: set[int] = set()
        self._encoded: dict[int, Future] = {}
        self._launches: list[tuple[np.ndarray, np.ndarray]] = []  # launch values and counts of each table added

    def _submit(self, rank: int) -> Future:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=_WORKERS, thread_name_prefix="moetrace-write")
        # Decoding may outrun encoding: past a few ranks waiting, wait for one, so that sealed ranks' rows go.
        while sum(not f.done() for _, f in self._spec.values()) >= 2 * _WORKERS:
            wait([f for _, f in self._spec.values() if not f.done()], return_when=FIRST_COMPLETED)
            self._release()
        parts = list(self._by_rank[rank])
        fut = self._pool.submit(self._encode_rank, rank, parts, self._edges)
        self._spec[rank] = (len(parts), fut)
        return fut

    def seal(self, ranks) -> None:
        """Say that ``ranks`` get no more rows: once encoded, their rows are let go (``add`` refuses more)."""
        for rank in ranks:
            rank = int(rank)
            self._sealed.add(rank)
            spec = self._spec.get(rank)
            if rank in self._by_rank and (spec is None or spec[0] != len(self._by_rank[rank])):
                self._submit(rank)  # its encode was dropped when more rows came: redo it now, not at commit
        self._release()

    def _release(self) -> None:
        for rank in list(self._sealed):
            spec = self._spec.get(rank)
            if spec is not None and spec[0] == len(self._by_rank[rank]) and spec[1].done():
                self._encoded[rank] = spec[1]
                del self._spec[rank], self._by_rank[rank]
                self._sealed.discard(rank)

    def __del__(self):
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def add(self, table: pa.Table, source: SourceReport,
            lost: dict[tuple[int, int], int] | None = None,
            positions: np.ndarray | None = None) -> None:
        """Stage one source's rows. ``positions``: the line / byte of each row, for errors."""
        src_id = len(self.report.sources)
        self.report.sources.append(source)
        n = table.num_rows
        table = conform(table)
        pos = positions if positions is not None else np.arange(n, dtype=np.int64)
        table = table.append_column(_SRC, pa.array(np.full(n, src_id, dtype=np.int32)))
        table = table.append_column(_POS, pa.array(np.asarray(pos, dtype=np.int64)))
        source.rows_out += n
        for (rank, core), k in (lost or {}).items():
            self._lost[(rank, core)] = self._lost.get((rank, core), 0) + int(k)
            source.lost += int(k)
        if n == 0:
            return
        ranks = table.column("rank").to_numpy()
        self._launches.append(launch_counts([table.column("launch")]))
        if self._edges is None:
            self._edges = edges_from(table.column("launch"), ranks, self.manifest.ranks, self.block_events)
        touched = []
        if ranks.min() == ranks.max():
            touched.append(int(ranks[0]))
            self._by_rank.setdefault(touched[0], []).append(table)
        else:
            # Rank-sorted input (ring dumps, most JSON lines) splits into zero-copy slices.
            in_order = bool((np.diff(ranks) >= 0).all())
            order = None if in_order else np.argsort(ranks, kind="stable")
            sorted_ranks = ranks if in_order else ranks[order]
            bounds = np.flatnonzero(np.diff(sorted_ranks)) + 1
            starts = np.concatenate(([0], bounds))
            ends = np.concatenate((bounds, [n]))
            for s, e in zip(starts, ends):
                r = int(sorted_ranks[s])
                part = table.slice(s, e - s) if in_order else table.take(order[s:e])
                self._by_rank.setdefault(r, []).append(part)
                touched.append(r)
        for r in touched:
            if r in self._encoded:
                raise ValueError(f"rows added for rank {r} after it was sealed")
            spec = self._spec.pop(r, None)
            if spec is None:
                self._submit(r)
            else:
                spec[1].cancel()  # more rows for a rank already encoding: redo it at commit
                self._spec[r] = (-1, spec[1])

    def commit(self, progress=None) -> IngestReport:
        """Write everything into a staging directory and swap it in (``ingest.staging``)."""
        try:
            self.out.parent.mkdir(parents=True, exist_ok=True)
            clean_stale(self.out)
            stage = make_stage(self.out)
        except OSError as e:
            raise os_error(self.out, e, "create the dataset here") from None
        try:
            self._write_all(stage, progress)
            check_replaceable(self.out, self.overwrite)  # something may have appeared there meanwhile
            swap_in(stage, self.out)
        except OSError as e:
            shutil.rmtree(stage, ignore_errors=True)
            raise os_error(self.out, e, "write the dataset") from None
        except BaseException:
            shutil.rmtree(stage, ignore_errors=True)
            raise
        return self.report

    # ------------------------------------------------------------------
    def _write_all(self, stage: Path, progress) -> None:
        # events/ exists even with no rows: an empty trace is still a dataset (every rank missing).
        (stage / EVENTS_DIR).mkdir()
        cores: dict[tuple[int, int], CoreReport] = {}
        ranks = sorted(set(self._by_rank) | set(self._encoded))
        edges = self._edges if self._edges is not None else np.zeros(0, np.int64)
        self.report.blocks = blocks_of(*merge_counts(self._launches), edges)
        futures = dict(self._encoded)
        self._encoded.clear()
        for rank in ranks:
            if rank in futures:
                continue
            spec = self._spec.get(rank)
            ok = spec is not None and spec[0] == len(self._by_rank[rank])
            futures[rank] = spec[1] if ok else self._submit(rank)
        try:
            for rank in ranks:
                buf, reports, rows = futures.pop(rank).result()
                self._by_rank.pop(rank, None)
                for rep in reports:
                    cores[(rep.rank, rep.core)] = rep
                d = stage / EVENTS_DIR / f"rank={rank}"
                d.mkdir(parents=True)
                with open(d / "part-0.parquet", "wb") as f:
                    f.write(buf)
                del buf
                if progress is not None:
                    progress(rows)
        finally:
            for fut in futures.values():
                fut.cancel()
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
            self._spec.clear()
        for (rank, core), k in self._lost.items():
            rep = cores.setdefault((rank, core), CoreReport(rank, core))
            rep.lost += k
        self.report.cores = [cores[k] for k in sorted(cores)]
        present = {r for r, _ in cores}
        self.report.ranks_missing = [r for r in range(self.manifest.ranks) if r not in present]
        self.manifest.dump(stage / MANIFEST_FILE)
        (stage / REPORT_FILE).write_text(json.dumps(self.report.to_json(), indent=2) + "\n")

    def _encode_rank(self, rank: int, parts: list[pa.Table],
                     edges: np.ndarray | None) -> tuple[pa.Buffer, list[CoreReport], int]:
        """Order, check and encode one rank (runs in a worker thread); a row group per (core, block)."""
        table = parts[0] if len(parts) == 1 else pa.concat_tables(parts)
        del parts
        table = self._order_and_check(table)
        core = _column_numpy(table, "core")
        seq = _column_numpy(table, "seq")
        bounds = np.flatnonzero(np.diff(core)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [len(core)]))
        reports = [CoreReport(rank, int(core[s]), int(e - s), 0, int(seq[s]), int(seq[e - 1]))
                   for s, e in zip(starts, ends)]
        table = table.drop_columns([_SRC, _POS])
        cuts = row_cuts(core, _column_numpy(table, "launch"), edges)
        sink = pa.BufferOutputStream()
        write_events(table, sink, cuts)
        return sink.getvalue(), reports, table.num_rows

    def _order_and_check(self, table: pa.Table) -> pa.Table:
        core = _column_numpy(table, "core")
        seq = _column_numpy(table, "seq")
        if not _is_sorted(core, seq):
            order = np.lexsort((seq, core))
            table = table.take(order)
            core = core[order]
            seq = seq[order]
        same = core[1:] == core[:-1]
        bad = np.flatnonzero(same & (seq[1:] <= seq[:-1]))
        if len(bad):
            i = int(bad[0]) + 1
            src = table.column(_SRC).to_numpy()
            pos = table.column(_POS).to_numpy()
            rank = int(table.column("rank")[i].as_py())
            s = self.report.sources[int(src[i])]
            other = self.report.sources[int(src[i - 1])]
            also = "" if other is s else f" (clashes with {other.path})"
            raise TraceError(s.path, f"{s.where_unit} {int(pos[i])}",
                             f"seq {int(seq[i])} of rank {rank} core {int(core[i])} does not increase "
                             f"past {int(seq[i - 1])}{also}")
        return table


def _column_numpy(table: pa.Table, name: str) -> np.ndarray:
    col = table.column(name)
    return col.chunk(0).to_numpy() if col.num_chunks == 1 else col.to_numpy()


def _is_sorted(core: np.ndarray, seq: np.ndarray) -> bool:
    if len(core) < 2:
        return True
    dc = np.diff(core.astype(np.int32))
    if (dc < 0).any():
        return False
    # Within a core, a seq step down means out of order; the strict check comes later.
    return not ((dc == 0) & (seq[1:] < seq[:-1])).any()


def conform(table: pa.Table) -> pa.Table:
    """Cast to the contract schema, adding null columns for absent optional fields."""
    n = table.num_rows
    cols = []
    for c in COLUMNS:
        if c.name in table.column_names:
            col = table.column(c.name)
            if col.type != c.type:
                col = col.cast(c.type)
            cols.append(col)
        else:
            cols.append(pa.nulls(n, c.type))
    return pa.Table.from_arrays(cols, schema=SCHEMA)


def write_events(table: pa.Table, path, cuts: np.ndarray | None = None) -> None:
    """Write events to a parquet file (a path or a pyarrow output stream).

    ``cuts``: rows where a new row group must start (block edges), besides
    every ``_ROW_GROUP`` rows.  The encoder, not the codec, is the cost
    (bench/RESULTS.md): lz4 is about 6% faster than zstd level 1 for 0.2 more
    bytes per event, far inside budget. No dictionaries: plain values under lz4
    encode ~8% faster and read ~7% faster (the 10 M trace: ingest 2.18-2.28 ->
    2.05-2.12 s, its 32 rule columns read 1.04-1.07 -> 0.97-0.99 s) for 3.5 ->
    4.0 bytes per event.
    """
    enc = {name: "DELTA_BINARY_PACKED" for name in _DELTA}
    opts = dict(compression="lz4", use_dictionary=False, column_encoding=enc,
                write_statistics=["rank", "core", "seq", "launch", "kind"])
    if cuts is None or not len(cuts):
        pq.write_table(table, path, row_group_size=_ROW_GROUP, **opts)
        return
    edges = np.concatenate(([0], cuts, [table.num_rows]))
    with pq.ParquetWriter(path, table.schema, **opts) as w:
        for s, e in zip(edges[:-1].tolist(), edges[1:].tolist()):
            w.write_table(table.slice(s, e - s), row_group_size=_ROW_GROUP)
