"""``ingest``: the one entry point from inputs to a dataset.

The CLI, the tests, the simulator and the fixtures all come through here, so
every path gets the same validation and the same all-or-nothing write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pyarrow as pa

from .dataset import BLOCK_EVENTS
from .ingest_report import IngestReport, SourceReport
from .writer import DatasetWriter, conform
from .sources import Chunk, Source, resolve
from .staging import check_not_an_input

# progress(phase, n): phase 'read' counts events read, 'write' rows written.
ProgressFn = Callable[[str, int], None]


def ingest(inputs: Sequence[Path | str], out: Path | str, *, force: bool = False,
           progress: ProgressFn | None = None, block_events: int = BLOCK_EVENTS) -> IngestReport:
    """Validate every input and write the dataset ``out`` atomically.

    ``block_events``: how many events of all ranks make a block (the unit the
    analyzer windows a large trace by; see ``ingest.dataset``).

    Raises ``TraceError`` on bad input, with nothing left at ``out`` (an
    existing dataset replaced with ``force`` survives a failed ingest).
    """
    manifest, sources = resolve(inputs)
    check_not_an_input(Path(out), [s.path for s in sources] + [Path(p) for p in inputs])
    writer = DatasetWriter(out, manifest, overwrite=force, block_events=block_events)
    careful_rings = _careful_rings(sources)
    seal = _seal_after(sources, manifest)
    for i, src in enumerate(sources):
        # One report per source even where a reader yields several chunks
        # (a ring dump holds one ring per core).
        chunks = []
        for chunk in src.chunks(manifest, careful_rings):
            chunks.append(chunk)
            if progress is not None:
                progress("read", chunk.events_in)
        table, positions, lost, events_in = _merge(chunks)
        rep = SourceReport(str(src.path), src.format, events_in=events_in, where_unit=src.where_unit)
        writer.add(table, rep, lost=lost, positions=positions)
        writer.seal(seal[i])
    write = None if progress is None else (lambda n: progress("write", n))
    return writer.commit(progress=write)


def _seal_after(sources: Sequence[Source], manifest) -> list[set[int]]:
    """Per source, the ranks no later source holds rows of: the writer lets their rows go once encoded.

    Only ring dumps say which ranks they hold (their headers): a source that does not may hold any
    rank, so no source before it seals one (their rows stay until commit, as without sealing). The
    headers are read here and again by the decoder: a few reads of 64 bytes per ring.
    """
    from .rings import ranks_in

    held = [ranks_in(src.path, manifest) if src.format == "mtr" else None for src in sources]
    seal: list[set[int]] = [set() for _ in sources]
    later: set[int] = set()
    for i in range(len(sources) - 1, -1, -1):
        if held[i] is None:
            break  # any rank may come later still
        seal[i] = set(held[i]) - later
        later |= held[i]
    return seal


def _careful_rings(sources: Sequence[Source]) -> bool:
    """Whether the input's ring dumps are too few records to pay for the fast decoder's start (``ring_fast``)."""
    dumps = [src.path for src in sources if src.format == "mtr"]
    if not dumps:
        return True
    from .ring_fast import worth_it
    from .ring_layout import RECORD_SIZE

    size = 0
    for path in dumps:
        try:
            size += path.stat().st_size
        except OSError:
            pass  # the reader words it
    return not worth_it(size // RECORD_SIZE)


def _merge(chunks: list[Chunk]):
    lost: dict[tuple[int, int], int] = {}
    for c in chunks:
        for k, v in c.lost.items():
            lost[k] = lost.get(k, 0) + int(v)
    events_in = sum(c.events_in for c in chunks)
    if len(chunks) == 1:
        return chunks[0].table, chunks[0].positions, lost, events_in
    if not chunks:
        return conform(pa.table({})), np.zeros(0, np.int64), lost, events_in
    table = pa.concat_tables([conform(c.table) for c in chunks])
    positions = np.concatenate([np.asarray(c.positions, dtype=np.int64) for c in chunks])
    return table, positions, lost, events_in
