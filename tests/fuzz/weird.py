"""Small valid-but-weird traces for the diagnose fuzzer: every event passes ingest.

Shapes the issue saw break diagnose: 64 ranks with one event each and huge
values, timestamps shuffled, launch numbers with gaps, a random 3 ranks x 3
cores trace, 18 ranks x 1 core of 235 events; written as JSON lines or as one
ring dump. Values come from
the contract's data ranges (``Manifest.value_range``), edges included.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ingest.contract import ALLOWED, COLUMN, COMMON_OPTIONAL, FIELDS, Kind, json_name
from ingest.value_ranges import ADDRESS_LIMIT
from ingest.manifest import Manifest
from ingest.ring_layout import RECORD_DTYPE, slot_of

from . import gen

SHAPES = ("64x1-huge", "shuffled-ts", "launch-gaps", "3x3-random", "18x1-random")


def manifest_doc(ranks: int, cores: int) -> dict:
    return {"format": "moetrace-trace/1", "ranks": ranks, "cores": cores, "protocol": "fuzz",
            "params": {"tokens": 4, "topk": 2, "local_experts": 2, "capacity": 4},
            "regions": [{"name": "payload", "role": "payload", "elem_bytes": 2, "length": 4096},
                        {"name": "flags", "role": "flag", "elem_bytes": 4, "length": 64, "reset": 0, "slot_words": 8,
                         "index": "rank"},
                        {"name": "counts", "role": "counter", "elem_bytes": 4, "length": 32, "reset": 0,
                         "slot_words": 8, "index": "segment"},
                        {"name": "out", "role": "output", "elem_bytes": 2, "length": ADDRESS_LIMIT}],
            "sites": {"1": "k.cpp:1"}, "names": ["dispatch", "combine"]}


def _value(c: gen.Chooser, m: Manifest, kind: Kind, col: str, huge: bool, ring: bool):
    spec = COLUMN[col]
    if spec.enum is not None:
        return spec.enum(c.pick(sorted(ALLOWED.get((kind, col), frozenset(spec.enum))))).wire
    if spec.ref == "region":
        return c.pick([r.name for r in m.regions])
    if col == "name":
        return c.pick(list(m.names))
    lo, hi = m.value_range(kind, col)
    if ring:  # a ring dump's slot may be narrower than the column (nbytes, sig_offset: 32 bits)
        info = np.iinfo(RECORD_DTYPE[slot_of(kind, col)])  # the slot this kind keeps it in
        lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
    if huge and c.chance(60):
        return c.pick([v for v in (lo, hi, hi - 1, lo + 1, hi // 2, -1, 0) if lo <= v <= hi])
    return c.int(max(lo, -2), min(hi, 40))


def trace(c: gen.Chooser, shape: str, ring: bool = False) -> tuple[dict, list[dict]]:
    """(manifest doc, events) of one shape; every event is valid for the manifest."""
    ranks, cores = {"64x1-huge": (64, 1), "18x1-random": (18, 1)}.get(shape, (3, 3))
    doc = manifest_doc(ranks, cores)
    m = Manifest.from_json(doc)
    n = {"64x1-huge": ranks, "18x1-random": 235}.get(shape) or c.int(20, 150)
    evs, seq = [], {}
    for i in range(n):
        rank, core = (i, 0) if shape == "64x1-huge" else (c.int(0, ranks - 1), c.int(0, cores - 1))
        kind = c.pick(list(FIELDS))
        s = seq.get((rank, core), c.pick([0, 0, 3]))
        seq[(rank, core)] = s + c.pick([1, 1, 2])
        ev = {"rank": rank, "core": core, "seq": s, "ts": 100 + 10 * s, "launch": 0, "kind": kind.wire}
        if shape == "shuffled-ts":
            ev["ts"] = c.pick([c.int(0, 1000), 2**63 - 1, 0, -(2**63) + 1])
        if shape == "launch-gaps":
            ev["launch"] = c.pick([0, 1, 7, 2**30, 2**31 - 1, -(2**31) + 1])
        if shape == "64x1-huge":
            ev["ts"] = c.pick([0, 2**63 - 1, 2**40])
            ev["launch"] = c.pick([0, 2**31 - 1, 5])
        req, opt = FIELDS[kind]
        huge = shape == "64x1-huge" or c.chance(20)
        for col in req:
            ev[json_name(kind, col)] = _value(c, m, kind, col, huge, ring)
        for col in opt + COMMON_OPTIONAL:
            if c.chance(40):
                ev[json_name(kind, col)] = _value(c, m, kind, col, huge, ring)
        evs.append(ev)
    if shape != "64x1-huge":  # program order per (rank, core) is by seq: launches must not step back
        evs.sort(key=lambda e: (e["rank"], e["core"], e["seq"]))
    return doc, evs


def write(d: Path, doc: dict, evs: list[dict], ring: bool) -> Path:
    """The trace as manifest.json + events.jsonl, or + one events.mtr holding every ring."""
    d.mkdir(parents=True, exist_ok=True)
    (d / "manifest.json").write_text(json.dumps(doc))
    for old in d.glob("events.*"):
        old.unlink()
    if ring:
        from _readers import ring_bytes

        (d / "events.mtr").write_bytes(ring_bytes(evs, Manifest.from_json(doc)))
    else:
        (d / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    return d
