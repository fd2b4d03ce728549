"""One fuzz input: a trace directory's files (manifest.json + one events file), as bytes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from ingest.errors import TraceError
from ingest.manifest import Manifest

from . import gen
from .gen_rings import ring_dump

FORMATS = ("jsonl", "mtr")


def make_case(c: gen.Chooser, fmt: str | None = None) -> dict[str, bytes]:
    """{file name: bytes}; ``fmt`` 'jsonl' (plain, gzip or zstd) or 'mtr', else chosen."""
    doc = gen.manifest(c)
    text = json.dumps(doc, ensure_ascii=c.chance(80))
    files = {"manifest.json": text.encode("utf-8", "surrogatepass")}
    if c.chance(3):
        files["manifest.json"] = gen.mutate_bytes(c, files["manifest.json"])
    fmt = fmt or c.pick(FORMATS)
    if fmt == "mtr":
        try:
            m = Manifest.from_json(doc)
        except TraceError:
            m = None
        if m is not None:
            files["events.mtr"] = ring_dump(c, m)
            return files
    data, suffix = gen.compress(c, gen.jsonl(c, gen.events(c, doc)))
    files["events" + suffix] = data
    return files


def write_case(d: Path, files: dict[str, bytes]) -> Path:
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for name, data in files.items():
        (d / name).write_bytes(data)
    return d
