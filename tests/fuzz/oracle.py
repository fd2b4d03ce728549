"""What every input must get: rows that read back whole, or one located TraceError, never anything else.

``readers`` runs the readers alone (fast, so the campaign can run millions):
a manifest either loads or is a TraceError; a JSON-lines file gives the same
verdict on the fast and the careful path, and so does a ring dump (it decodes or is a
TraceError); an accepted table holds only values its columns can hold as data.
``ingest_and_read_back`` writes the dataset and reads it back fully, also
through ``moetrace query "select * from events"``.
A violated promise raises ``Bug`` with its class.
"""

from __future__ import annotations

import traceback
from pathlib import Path

import numpy as np
import pyarrow as pa

from ingest.contract import COLUMNS, Kind
from ingest.errors import TraceError
from ingest.manifest import Manifest


class Bug(Exception):
    def __init__(self, cls: str, detail: str):
        super().__init__(f"{cls}: {detail}")
        self.cls = cls


def _guard(what: str, fn, *args):
    """fn(*args), or the TraceError it raised; any other exception is a crash."""
    try:
        return fn(*args)
    except TraceError as e:
        if "\n" in str(e) or not e.path:
            raise Bug("error-not-one-located-line", f"{what}: {e!r}") from None
        return e
    except Bug:
        raise
    except BaseException as e:  # noqa: BLE001 - the point: anything else is a bug
        if isinstance(e, KeyboardInterrupt):
            raise
        raise Bug(f"crash-{type(e).__name__}", f"{what}: {''.join(traceback.format_exception_only(e)).strip()}")


def check_table(table: pa.Table, manifest: Manifest, what: str) -> None:
    """An accepted table is valid arrow (UTF-8 included) and holds no value its column cannot hold as data."""
    try:
        table.validate(full=True)
    except pa.ArrowInvalid as e:
        raise Bug("accepted-invalid-arrow", f"{what}: {e}") from None
    if not table.num_rows:
        return
    kinds = table.column("kind").to_numpy(zero_copy_only=False)
    held = np.unique(kinds)
    rows_of = {int(k): kinds == k for k in held} if len(held) > 1 else None
    for c in COLUMNS:
        if c.type == pa.string() or c.enum is not None or c.ref is not None:
            continue
        col = table.column(c.name)
        if col.null_count == len(col):
            continue
        valid = None if not col.null_count else col.is_valid().to_numpy(zero_copy_only=False)
        vals = (col.fill_null(0) if col.null_count else col).to_numpy(zero_copy_only=False).astype(np.int64)
        for k in held:
            rows = rows_of[int(k)] if rows_of is not None else None
            mask = valid if rows is None else rows if valid is None else rows & valid
            sel = vals if mask is None else vals[mask]
            if not len(sel):
                continue
            lo, hi = manifest.value_range(Kind(int(k)), c.name)
            if sel.min() < lo or sel.max() > hi:
                raise Bug("accepted-out-of-range", f"{what}: {Kind(int(k)).wire}.{c.name} in "
                                                   f"[{sel.min()}, {sel.max()}] outside [{lo}, {hi}]")


def load_manifest(path: Path):
    return _guard("manifest", Manifest.load, path)


def jsonl_verdict(path: Path, manifest: Manifest) -> str:
    """'accepted' or 'rejected'; Bug on a crash or on the two JSON-lines paths disagreeing."""
    from ingest.jsonl import detect_compression, read_jsonl
    from ingest.jsonl_fast import read_fast

    careful = _guard("careful reader", lambda: read_jsonl(path, manifest, fast=False).table)
    fast = _guard("fast reader", lambda: read_fast(path, manifest, detect_compression(path)))
    if fast is not None and not isinstance(fast, TraceError):
        if isinstance(careful, TraceError):
            raise Bug("readers-disagree", f"fast path accepted what the careful one rejects: {careful}")
        if not fast[0].equals(careful):
            raise Bug("readers-disagree", "fast and careful paths give different rows")
    if isinstance(careful, TraceError):
        _first_bad_place(path, manifest, careful)
        return "rejected"
    check_table(careful, manifest, str(path))
    return "accepted"


def _first_bad_place(path: Path, manifest: Manifest, err: TraceError) -> None:
    """The reported line is the first bad one: the lines before it, alone, are accepted."""
    from ingest.jsonl import detect_compression, read_jsonl

    if not err.where.startswith("line ") or detect_compression(path) is not None:
        return
    line = int(err.where.split()[1])
    prefix = path.with_name(path.name + ".prefix.jsonl")
    data = path.read_bytes()
    cut = 0
    for _ in range(line - 1):
        cut = data.index(b"\n", cut) + 1
    prefix.write_bytes(data[:cut])
    try:
        got = _guard("careful reader on the prefix", lambda: read_jsonl(prefix, manifest, fast=False))
    finally:
        prefix.unlink()
    if isinstance(got, TraceError):
        raise Bug("not-the-first-bad-line", f"{err.where} reported, but the lines before fail: {got}")


def ring_verdict(path: Path, manifest: Manifest) -> str:
    """'accepted' or 'rejected'; Bug on a crash or on the fast and careful ring decoders disagreeing."""
    from ingest.rings import read_ring_file

    got = _guard("ring reader", read_ring_file, path, manifest)
    careful = _guard("careful ring reader", read_ring_file, path, manifest, True)
    if isinstance(got, TraceError) or isinstance(careful, TraceError):
        if str(got) != str(careful):
            raise Bug("readers-disagree", f"ring decoders: fast path {got}, careful {careful}")
        return "rejected"
    if len(got) != len(careful) or not all(a.table.equals(b.table) and (a.positions == b.positions).all()
                                           for a, b in zip(got, careful)):
        raise Bug("readers-disagree", "fast and careful ring decoders give different rows")
    for chunk in got:
        check_table(chunk.table, manifest, str(path))
        if chunk.events_in != chunk.table.num_rows + sum(chunk.lost.values()):
            raise Bug("ring-count-mismatch", f"{path}: events_in {chunk.events_in} != rows + lost")
    return "accepted"


def readers(trace_dir: Path) -> str:
    """The readers' verdict on one trace directory (manifest.json + one events file)."""
    m = load_manifest(trace_dir / "manifest.json")
    if isinstance(m, TraceError):
        return "rejected-manifest"
    verdict = "accepted"
    for p in sorted(trace_dir.iterdir()):
        if p.name == "manifest.json":
            continue
        v = ring_verdict(p, m) if p.suffix == ".mtr" else jsonl_verdict(p, m)
        if v == "rejected":
            verdict = "rejected"
    return verdict


def ingest_and_read_back(trace_dir: Path, out: Path, query: bool = True) -> str:
    """Ingest through the CLI (exit 0 or 2 with one line), read the dataset back whole."""
    from conftest import run_cli

    res = run_cli("ingest", trace_dir, "-o", out, "--no-progress", "--format", "json")
    if res.code == 2:
        if res.stderr.count("\n") != 1 or "Traceback" in res.stderr or not res.stderr.startswith("moetrace: error: "):
            raise Bug("cli-error-not-one-line", res.stderr[-400:])
        if out.exists() or any(p.name.startswith(f".{out.name}.") for p in out.parent.iterdir()):
            raise Bug("half-written", f"{out} left behind after a rejected ingest")
        return "rejected"
    if res.code != 0:
        raise Bug(f"cli-exit-{res.code}", res.stderr[-400:])
    import json

    from ingest.dataset import Dataset

    report = json.loads(res.stdout)
    ds = _guard("dataset read back", Dataset, out)
    table = _guard("dataset read back", ds.table) if not isinstance(ds, TraceError) else ds
    if isinstance(table, TraceError):
        raise Bug("unreadable-dataset", str(table))
    check_table(table, ds.manifest, str(out))
    if report["events_in"] != table.num_rows + report["lost"] or report["rows_out"] != table.num_rows:
        raise Bug("silent-loss", f"events_in {report['events_in']}, lost {report['lost']}, rows {table.num_rows}")
    if query:
        q = run_cli("query", out, "select * from events", "--format", "csv")
        if q.code != 0:
            raise Bug("query-failed", q.stderr[-400:])
        if q.stdout.count("\n") - 1 < table.num_rows:  # a header, then at least a line per row
            raise Bug("query-lost-rows", f"{q.stdout.count(chr(10)) - 1} lines for {table.num_rows} rows")
    return "accepted"
