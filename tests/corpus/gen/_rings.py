"""Write a corpus trace as binary ring dumps, one ``rank<R>.mtr`` per rank, through ingest/ring_encode.py.

The one place the corpus uses moetrace's code: the ring layout is the device header's, and
its encoder is the reference for it. Events go in as the contract's columns with codes;
a ring given a capacity below its event count wraps exactly as the device ring would.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ingest.contract import COLUMN, JSON_NAME, Kind
from ingest.manifest import Manifest
from ingest.ring_encode import encode_rings

from ._trace import dump_json


def _columns(events: list[dict], manifest: Manifest) -> dict[str, np.ndarray]:
    region_id = {r.name: r.id for r in manifest.regions}
    json_to_col = {(k, j): c for (k, c), j in JSON_NAME.items()}
    cols: dict[str, list] = {name: [] for name in COLUMN}
    for ev in events:
        kind = Kind.from_wire(ev["kind"])
        row = {}
        for key, v in ev.items():
            col = json_to_col.get((kind, key), key)
            spec = COLUMN[col]
            if spec.enum is not None and col != "kind":
                v = int(spec.enum.from_wire(v))
            elif spec.ref == "region":
                v = region_id[v]
            row[col] = v
        row["kind"] = int(kind)
        for name in COLUMN:
            cols[name].append(row.get(name, None if name == "name" else COLUMN[name].numpy_null))
    out = {}
    for name, vals in cols.items():
        if name == "name":
            out[name] = np.array(vals, dtype=object)
        else:
            out[name] = np.array(vals, dtype=np.int64)
    return out


def write_rings(trace, out: Path, capacity: dict | None = None) -> None:
    """``capacity``: {(rank, core): records the ring holds} for rings that wrap; others hold all."""
    doc = trace.manifest()
    (out / "manifest.json").write_text(dump_json(doc))
    manifest = Manifest.from_json(doc)
    events = trace.kept_events()
    for r in range(trace.ranks):
        blob = b""
        for c in range(trace.cores):
            mine = [e for e in events if e["rank"] == r and e["core"] == c]
            if not mine:
                continue
            cap = (capacity or {}).get((r, c))
            blob += encode_rings(_columns(mine, manifest), manifest, capacity=cap)
        if blob:
            (out / f"rank{r}.mtr").write_bytes(blob)
