"""One trace through every reader: JSON lines fast and careful, and a binary ring dump.

The three readers must give one verdict on the same events (the same rows,
or a TraceError at the first bad place); tests build a trace once as JSON
event dicts and ask each reader.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa

from ingest.contract import COLUMN, Kind
from ingest.errors import TraceError
from ingest.jsonl import read_jsonl
from ingest.manifest import Manifest
from ingest.ring_layout import RECORD_DTYPE, RECORD_SIZE, HEADER_SIZE
from ingest.rings import encode_rings, read_ring_file


def ring_columns(events: list[dict], manifest: Manifest) -> dict[str, np.ndarray]:
    """JSON event dicts as the encoder's arrays (codes for names, sentinels for nulls), seq renumbered."""
    cols: dict[str, list] = {}
    for i, ev in enumerate(events):
        kind = Kind.from_wire(ev["kind"])
        for key, v in ev.items():
            col = "pipe_op" if (kind == Kind.PIPE_SYNC and key == "op") else key
            spec = COLUMN[col]
            if col == "kind":
                v = int(kind)
            elif spec.enum is not None:
                v = int(spec.enum.from_wire(v))
            elif spec.ref == "region":
                v = manifest.region_id(v)
            cols.setdefault(col, [None] * len(events))[i] = v
    out = {}
    for col, vals in cols.items():
        spec = COLUMN[col]
        if spec.type == pa.string():
            out[col] = np.array(vals, dtype=object)
        else:
            null = spec.numpy_null
            out[col] = np.array([null if v is None else v for v in vals], dtype=np.int64)
    return out


def ring_bytes(events: list[dict], manifest: Manifest) -> bytes:
    return encode_rings(ring_columns(events, manifest), manifest, renumber=True)


def set_record_slot(data: bytes, record: int, slot: str, value: int) -> bytes:
    """``data`` (one ring) with one slot of record ``record`` overwritten: what no encoder would write."""
    buf = bytearray(data)
    rec = np.frombuffer(buf, dtype=RECORD_DTYPE, count=1, offset=HEADER_SIZE + record * RECORD_SIZE)
    rec[slot] = np.array(value).astype(RECORD_DTYPE[slot], casting="unsafe")
    return bytes(buf)


def write_manifest(d: Path, doc: dict) -> Manifest:
    d.mkdir(parents=True, exist_ok=True)
    (d / "manifest.json").write_text(json.dumps(doc))
    return Manifest.load(d / "manifest.json")


def jsonl_verdicts(path: Path, manifest: Manifest) -> dict[str, object]:
    """{'fast': table or TraceError, 'careful': ..., 'fast_only': table or None} for one JSON-lines file.

    'fast' is what ingest does (the fast path, the careful one where it is not
    sure); 'fast_only' is the fast path alone, None where it was not sure.
    """
    from ingest.jsonl import detect_compression
    from ingest.jsonl_fast import read_fast

    got = read_fast(path, manifest, detect_compression(path))
    out: dict[str, object] = {"fast_only": None if got is None else got[0]}
    for name, fast in (("fast", True), ("careful", False)):
        try:
            out[name] = read_jsonl(path, manifest, fast=fast).table
        except TraceError as e:
            out[name] = e
    return out


def ring_verdict(path: Path, manifest: Manifest):
    try:
        return pa.concat_tables([c.table for c in read_ring_file(path, manifest)])
    except TraceError as e:
        return e
