"""Writing small traces for the ingest / view / query tests."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pyarrow as pa


def manifest(ranks: int = 2, cores: int = 2, **extra) -> dict:
    doc = {
        "format": "moetrace-trace/1",
        "ranks": ranks,
        "cores": cores,
        "protocol": "test",
        "params": {"tokens": 2, "topk": 2, "local_experts": 2},
        "regions": [
            {"name": "payload", "role": "payload", "elem_bytes": 2, "length": 1024},
            {"name": "flags", "role": "flag", "elem_bytes": 4, "length": 64, "reset": 0, "slot_words": 8,
             "index": "rank"},
            {"name": "counts", "role": "counter", "elem_bytes": 4, "length": 32, "reset": -1},
        ],
        "sites": {"1": "k.cpp:10", "2": "k.cpp:20"},
    }
    doc.update(extra)
    return doc


def lines_of(events) -> str:
    return "".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events)


def write_trace(d: Path, events, *, name: str = "events.jsonl", doc: dict | None = None,
                compression: str | None = None) -> Path:
    """manifest.json + one events file in ``d``; events are dicts or raw line strings."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "manifest.json").write_text(json.dumps(doc if doc is not None else manifest()))
    data = lines_of(events).encode()
    p = d / name
    if compression == "gzip":
        p.write_bytes(gzip.compress(data))
    elif compression == "zstd":
        with pa.CompressedOutputStream(str(p), "zstd") as f:
            f.write(data)
    else:
        p.write_bytes(data)
    return p


class Core:
    """Emits one core's events with increasing seq and ts."""

    def __init__(self, rank: int, core: int, launch: int = 0):
        self.rank, self.core, self.launch = rank, core, launch
        self.seq = 0
        self.ts = 100

    def __call__(self, kind: str, **fields) -> dict:
        self.seq += 1
        self.ts += 10
        return {"rank": self.rank, "core": self.core, "seq": self.seq, "ts": self.ts, "launch": self.launch,
                "kind": kind, **fields}
