"""The environment of a subprocess whose numba kernels check every index (NUMBA_BOUNDSCHECK=1).

numba's disk cache (``cache=True``, ``ingest._jit.kernel``) does not key its
entries on the bounds-check flag: a process with NUMBA_BOUNDSCHECK=1 loads the
unchecked machine code an earlier ordinary run cached, and checks nothing.
So a bounds-checked process keeps its own cache directory, which only such
processes write (kept across runs: compiling every kernel again costs tens of
seconds).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(tempfile.gettempdir()) / f"moetrace-numba-boundscheck-{os.getuid()}"


def boundscheck_env(**extra: str) -> dict[str, str]:
    """os.environ plus bounds checking, its own numba cache and the repository on the path."""
    return {**os.environ, "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(CACHE),
            "PYTHONPATH": f"{ROOT}:{ROOT / 'tests'}", **extra}
