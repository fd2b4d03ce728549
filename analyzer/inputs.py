"""A dataset for whatever the user named: a dataset directory, or raw traces ingested into a temporary one.

Every command that reads a dataset comes through here (diagnose, timeline, the
Python API), so raw inputs are validated by the same ingest, every bad input
gets one wording, and the temporary dataset is removed when the caller is done
with it.
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence


@contextmanager
def as_dataset(inputs: str | Path | Sequence[str | Path], progress=None) -> Iterator[Path]:
    """Yield a dataset directory for ``inputs``; a temporary one (removed afterwards) for raw traces."""
    from ingest.dataset import is_dataset
    from ingest.errors import TraceError
    from ingest.location import URL_NOT_A_DATASET, as_location, is_url

    paths = [as_location(inputs)] if isinstance(inputs, (str, Path)) else [as_location(p) for p in inputs]
    if not paths:
        raise TraceError(None, "", "no input given")
    if len(paths) == 1 and is_dataset(paths[0]):
        yield paths[0]
        return
    for p in paths:
        if is_url(p):
            raise TraceError(p, "", URL_NOT_A_DATASET)
        if not p.exists():
            raise TraceError(p, "", "no such file or directory")
        if is_dataset(p):
            raise TraceError(p, "", "a dataset cannot be read together with other inputs")
    from ingest.run import ingest

    tmp = Path(tempfile.mkdtemp(prefix="moetrace-"))
    try:
        out = tmp / "dataset"
        ingest(paths, out, progress=progress)
        yield out
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
