"""Window jobs for tests/test_pool.py: module-level, so spawned pool workers can import them.

``dataset`` is a folder the jobs write markers into: ``W.pid`` when window W starts (its worker's
pid inside), ``W.done`` when it ends. A window blocks until its ``W.release`` file appears or
a minute passes; ``fail`` and ``pair`` say how theirs differ.
"""

from __future__ import annotations

import os
import time
from pathlib import Path


def _wait_for(path: Path, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


def _started(folder: Path, window: int) -> None:
    part = folder / f"{window}.pid.part"
    part.write_text(str(os.getpid()))
    part.rename(folder / f"{window}.pid")  # whole when seen: the test reads it as soon as it exists


def blocking(dataset: str, window: int, config, codes) -> list:
    """Window ``window`` runs until released."""
    folder = Path(dataset)
    _started(folder, window)
    _wait_for(folder / f"{window}.release")
    (folder / f"{window}.done").touch()
    return [window]


def fail(dataset: str, window: int, config, codes) -> list:
    """Window 0 raises once window 1 runs; the others run a second and a half."""
    folder = Path(dataset)
    _started(folder, window)
    if window == 0:
        _wait_for(folder / "1.pid")
        raise RuntimeError("window 0 failed")
    time.sleep(1.5)  # longer than the parent takes to read window 0's failure
    (folder / f"{window}.done").touch()
    return [window]


def pair(dataset: str, window: int, config, codes) -> list:
    """Window 0 returns once window 1 runs (so on the other worker); window 1 runs until released."""
    folder = Path(dataset)
    if window == 0:
        _started(folder, window)
        _wait_for(folder / "1.pid")
        return [window]
    return blocking(dataset, window, config, codes)
