"""Resolve the INPUT arguments of ``moetrace ingest`` into sources.

An input is one of:

- a directory holding ``manifest.json`` and event files (``*.jsonl``,
  ``*.jsonl.gz``, ``*.jsonl.zst``, binary ring dumps ``*.mtr``);
- one event file (``.jsonl*`` or ``.mtr``) whose directory holds ``manifest.json``;
- a moetrace dataset, whose events are re-ingested (with what it knew was lost).

Every input must agree on one manifest: the parsed manifests must be equal
(compared in their normal form, so a dataset's rewritten manifest matches the
trace's own), else the ingest stops before it reads any event.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa

from .dataset import MANIFEST_FILE, Dataset, is_dataset
from .errors import TraceError
from .manifest import Manifest
from .parts import local_file

JSONL_SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.zst", ".jsonl.zstd")
RING_SUFFIXES = (".mtr",)


@dataclass
class Chunk:
    """Rows of one source: ``events_in`` = rows + sum(lost)."""

    table: pa.Table
    positions: np.ndarray
    lost: dict[tuple[int, int], int] = field(default_factory=dict)
    events_in: int = 0


@dataclass(frozen=True)
class Source:
    path: Path
    format: str  # 'jsonl', 'mtr' or 'dataset'
    manifest_path: Path

    @property
    def where_unit(self) -> str:
        return {"jsonl": "line", "mtr": "byte", "dataset": "row"}[self.format]

    def chunks(self, manifest: Manifest, careful_rings: bool = False) -> Iterator[Chunk]:
        """The source's rows; ``careful_rings``: decode a ring dump with the careful decoder alone."""
        if self.format == "jsonl":
            from .jsonl import read_jsonl

            c = read_jsonl(self.path, manifest)
            yield Chunk(c.table, c.positions, {}, c.table.num_rows)
        elif self.format == "mtr":
            try:
                from .rings import read_ring_file
            except ModuleNotFoundError as e:
                if e.name != "ingest.rings":
                    raise
                raise TraceError(self.path, "", "binary ring dumps are not supported by this build "
                                 "(ingest.rings is missing)") from None
            for c in read_ring_file(self.path, manifest, careful=careful_rings):
                yield Chunk(c.table, np.asarray(c.positions, dtype=np.int64), dict(c.lost), int(c.events_in))
        else:
            ds = Dataset(self.path)
            table = ds.table()
            lost = {(c.rank, c.core): c.lost for c in ds.report.cores if c.lost}
            yield Chunk(table, np.arange(table.num_rows, dtype=np.int64), lost,
                        table.num_rows + sum(lost.values()))


def _kind_of_file(p: Path) -> str | None:
    name = p.name.lower()
    if name.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if name.endswith(RING_SUFFIXES):
        return "mtr"
    return None


def _sources_of(arg: Path) -> list[Source]:
    if not arg.exists():
        raise TraceError(arg, "", "no such file or directory")
    if is_dataset(arg):  # its manifest is read only from inside it, as ``Dataset`` reads every file
        return [Source(arg, "dataset", Path(local_file(os.path.realpath(arg), arg / MANIFEST_FILE)))]
    if arg.is_dir():
        manifest = arg / MANIFEST_FILE
        if not manifest.is_file():
            raise TraceError(arg, "", f"no {MANIFEST_FILE} in this directory")
        found = [Source(p, k, manifest) for p in sorted(arg.iterdir())
                 if p.is_file() and (k := _kind_of_file(p)) is not None]
        if not found:
            raise TraceError(arg, "", "no event files here (expected *.jsonl, *.jsonl.gz, *.jsonl.zst or *.mtr)")
        return found
    kind = _kind_of_file(arg)
    if kind is None:
        raise TraceError(arg, "", "not an event file (expected .jsonl, .jsonl.gz, .jsonl.zst or .mtr), "
                         "a trace directory or a moetrace dataset")
    manifest = arg.parent / MANIFEST_FILE
    if not manifest.is_file():
        raise TraceError(arg, "", f"no {MANIFEST_FILE} beside this file")
    return [Source(arg, kind, manifest)]


def resolve(inputs: Sequence[str | Path]) -> tuple[Manifest, list[Source]]:
    """The one manifest every input agrees on, and the sources in argument order."""
    if not inputs:
        raise TraceError(None, "", "no inputs given")
    sources: list[Source] = []
    seen: set[Path] = set()
    for arg in inputs:
        for s in _sources_of(Path(arg)):
            key = s.path.resolve()
            if key in seen:  # the same file named twice is one source, not a seq clash
                continue
            seen.add(key)
            sources.append(s)
    manifest: Manifest | None = None
    first: Path | None = None
    normal: str | None = None
    loaded: dict[Path, str] = {}
    for s in sources:
        mp = s.manifest_path.resolve()
        if mp in loaded:
            continue
        m = Manifest.load(s.manifest_path)
        text = json.dumps(m.to_json(), sort_keys=True)
        loaded[mp] = text
        if manifest is None:
            manifest, first, normal = m, s.manifest_path, text
        elif text != normal:
            raise TraceError(s.manifest_path, "", f"manifest differs from {first}; all inputs must share one manifest")
    assert manifest is not None
    return manifest, sources
