"""The dataset's physical layout: the contract's named columns against the ring record's dense slots.

Issue 13 asks whether storing events the way the ring record does (every field
of every kind in one of a dozen generic slots, a presence mask for the
optional ones) beats the contract's 37 mostly-null named columns, for ingest
(parquet encode) and for diagnose (parquet decode of what the rules read).
This measures both layouts side by side in one run on the same events:

- contract: the dataset writer's own file (``ingest.writer.write_events``).
- dense: the ring record's slots as columns (rank and core added; every slot
  non-null), written with the same codec and encodings; reading it back to
  contract columns costs a parquet decode of the slots plus the ring decoder's
  gather per column (``ingest.rings``), measured here as a ring dump read.

    uv run python bench/dense_bench.py [--events 10000000] [--repeat 3] [--results]

The events are the first ranks of bench/_traces.py's 100 M classic trace
(built on first use; ``--dataset`` for another), as many as reach ``--events``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from ingest.contract import COLUMN, COLUMNS  # noqa: E402
from ingest.dataset import Dataset  # noqa: E402
from ingest.ring_encode import encode_rings  # noqa: E402
from ingest.ring_layout import HEADER_DTYPE, HEADER_SIZE, PLANS, RECORD_DTYPE, RECORD_SLOTS  # noqa: E402
from ingest.rings import read_ring_file  # noqa: E402
from ingest.writer import write_events  # noqa: E402

BEGIN, END = "<!-- dense:begin -->", "<!-- dense:end -->"
_DENSE_DELTA = ("seq", "ts")  # as the contract writer: sorted per core, deltas are tiny


def events(n: int, path: Path | None) -> tuple[pa.Table, Dataset, str]:
    if path is None:
        import _traces

        path = _traces.build("classic", 100_000_000) / "dataset"
    ds = Dataset(path)
    parts, rows = [], 0
    for r in ds.ranks:
        parts.append(ds.table(ranks=[r]))
        rows += parts[-1].num_rows
        if rows >= n:
            break
    what = f"ranks 0-{len(parts) - 1} of {path.parent.name if path.name == 'dataset' else path.name}"
    return pa.concat_tables(parts), ds, what


def dense_table(table: pa.Table, ds: Dataset) -> tuple[pa.Table, bytes]:
    """The ring record's slots as columns, from a ring dump of the same events (the dump is returned too)."""
    dump = encode_rings(table, ds.manifest)
    data = np.frombuffer(dump, np.uint8)
    recs, ranks, cores, pos = [], [], [], 0
    while pos < len(data):
        head = data[pos:pos + HEADER_SIZE].view(HEADER_DTYPE)[0]
        stored = int(head["stored"])
        body = data[pos + HEADER_SIZE:pos + HEADER_SIZE + stored * RECORD_DTYPE.itemsize].view(RECORD_DTYPE)
        recs.append(body)
        ranks.append(np.full(stored, head["rank"], np.int32))
        cores.append(np.full(stored, head["core"], np.int32))
        pos += HEADER_SIZE + stored * RECORD_DTYPE.itemsize
    rec = np.concatenate(recs)
    cols = {"rank": np.concatenate(ranks), "core": np.concatenate(cores)}
    for s in RECORD_SLOTS:
        cols["seq" if s.name == "seq_lo" else s.name] = np.ascontiguousarray(rec[s.name])
    return pa.table(cols), dump


def write_dense(table: pa.Table, path: str) -> None:
    enc = {name: "DELTA_BINARY_PACKED" for name in _DENSE_DELTA}
    pq.write_table(table, path, row_group_size=1 << 20, compression="lz4",
                   use_dictionary=[c for c in table.column_names if c not in enc], column_encoding=enc)


def timed(fn, repeat: int) -> tuple[float, float]:
    secs = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        secs.append(time.perf_counter() - t)
    return min(secs), statistics.median(secs)


def read_contract(path: str, names: list[str]) -> None:
    t = pq.read_table(path, columns=names)
    for c in names:
        col = t.column(c)
        if COLUMN[c].type != pa.string():
            col.fill_null(COLUMN[c].numpy_null).to_numpy()


def read_dense(path: str) -> None:
    t = pq.read_table(path)
    for c in t.column_names:
        t.column(c).to_numpy()


def _gather_kernel():
    import numba

    @numba.njit(cache=True, nogil=True)
    def gather(kind, present, slots, slot_of, required, bit, nulls, out):
        # out[j, i] = slots[slot_of[j], i] where row i's
        # kind carries column j (always, or by its presence bit), else column j's null.
        # Column by column: each output row is written contiguously.
        for j in range(out.shape[0]):
            src = slots[slot_of[j]]
            for i in range(kind.shape[0]):
                k = kind[i]
                if required[j, k] or (present[i] & bit[j, k]) != 0:
                    out[j, i] = src[i]
                else:
                    out[j, i] = nulls[j]
    return gather


def dense_to_columns(path: str, names: list[str]) -> np.ndarray:
    """What a reader of a dense dataset would do: read the slots the wanted columns live in, then
    per column keep the slot's value where the row's kind carries the field (a presence bit where
    optional), the column's null elsewhere, in one compiled pass (int64 out: a real reader would
    narrow per column). No validation: ingest checked the values. Columns a kind keeps in a second
    slot (``SLOT_OF_KIND``) are left out of this sketch, as are the envelope columns (stored as is)."""
    plans = {}
    for pl in PLANS:
        if pl.column in names:
            plans.setdefault(pl.column, pl)
    plans = list(plans.values())
    slot_names = sorted({pl.slot for pl in plans})
    t = pq.read_table(path, columns=slot_names + ["kind", "present"])
    slots = np.stack([t.column(s).to_numpy().astype(np.int64) for s in slot_names])
    out = np.empty((len(plans), t.num_rows), np.int64)
    _gather_kernel()(t.column("kind").to_numpy(), t.column("present").to_numpy(), slots,
                     np.array([slot_names.index(pl.slot) for pl in plans], np.int64),
                     np.stack([pl.required for pl in plans]), np.stack([pl.bit for pl in plans]),
                     np.array([COLUMN[pl.column].numpy_null for pl in plans], np.int64), out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dataset", type=Path, default=None, help="another dataset's first ranks")
    ap.add_argument("--results", action="store_true", help="write the section of bench/RESULTS.md")
    args = ap.parse_args()
    table, ds, what = events(args.events, args.dataset)
    n = table.num_rows
    dense, dump = dense_table(table, ds)
    numeric = [c.name for c in COLUMNS if c.type != pa.string()]
    present = [c for c in numeric if table.column(c).null_count < n]  # what the rules' prefetch reads
    work = Path(tempfile.mkdtemp(prefix="mt-dense-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    a, b, ring = str(work / "contract.parquet"), str(work / "dense.parquet"), work / "dump.mtr"
    ring.write_bytes(dump)
    rows = {}
    rows["encode"] = (timed(lambda: write_events(table, a), args.repeat),
                      timed(lambda: write_dense(dense, b), args.repeat))
    size = (os.path.getsize(a), os.path.getsize(b))
    rows["read the columns of the kinds present"] = (timed(lambda: read_contract(a, present), args.repeat),
                                                     timed(lambda: read_dense(b), args.repeat))
    rows["read every numeric column"] = (timed(lambda: read_contract(a, numeric), args.repeat),
                                         rows["read the columns of the kinds present"][1])
    dense_to_columns(b, present)  # compile outside the timing
    rows["read the columns of the kinds present, as contract columns"] = (
        rows["read the columns of the kinds present"][0], timed(lambda: dense_to_columns(b, present), args.repeat))
    ring_decode = timed(lambda: read_ring_file(ring, ds.manifest), args.repeat)
    for p in (a, b, ring):
        os.unlink(p)
    os.rmdir(work)
    load = os.getloadavg()[0]
    us = lambda s: s / n * 1e6  # noqa: E731
    lines = [BEGIN, "## Dataset layout: named columns or the ring's dense slots", "",
             f"`uv run python bench/dense_bench.py --events {args.events}`: {n:,} events ({what}), "
             f"{len(present)} of {len(numeric)} numeric contract columns non-null, against "
             f"{dense.num_columns} dense slot columns; best (median) of {args.repeat}, in one run, on 2 cores "
             f"(1-minute load average {load:.1f} at the end: shared machine).", "",
             "| step | contract columns | dense slots | dense / contract |", "|---|---|---|---|"]
    for step, ((ab, am), (bb, bm)) in rows.items():
        lines.append(f"| {step} | {ab:.2f} s ({am:.2f}); {us(ab):.3f} us/event | {bb:.2f} s ({bm:.2f}); "
                     f"{us(bb):.3f} us/event | {bb / ab:.2f} |")
    lines.append(f"| bytes on disk | {size[0] / n:.2f} B/event | {size[1] / n:.2f} B/event | "
                 f"{size[1] / size[0]:.2f} |")
    lines += ["", "The dense read, \"as contract columns\": the slots those columns live in, then one compiled "
              "pass gathering every column (`dense_to_columns`: what a dense dataset's reader would do, values already "
              f"checked at ingest). For scale, the ring decoder (which also validates every value) reads the same "
              f"records from a dump in memory in {ring_decode[0]:.2f} s ({us(ring_decode[0]):.3f} us/event).", END]
    block = "\n".join(lines)
    print(block)
    if args.results:
        from _results import write_section

        write_section(block, BEGIN, END)


if __name__ == "__main__":
    main()
