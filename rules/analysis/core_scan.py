"""Stage CORE_SCAN: what one pass over each core's events in program order tells.

Rows are in (rank, core, seq) order, so every part is one numba pass per
(rank, core) segment with no sort: the end state of each core and its stuck
waits (``_scan``), each wait_begin's wait_end, each row's atomic-add window,
and the (rank, launch) pairs that are not at rest (``_passes``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from . import _passes
from ._cache import cached
from ._scan import FINISHED, IN_BARRIER, IN_WAIT, STOPPED, scanned  # noqa: F401 - the end states, public here
from .stages import Stage


@dataclass(frozen=True)
class CoreScan:
    """Per core (segment ``s`` of ``view.segments``): its end state and the row it ends in; the
    stuck waits as (begin row, timeout end row) pairs. Per-row parts are computed on first ask."""

    stage: ClassVar[Stage] = Stage.CORE_SCAN
    state: np.ndarray  # per segment: FINISHED, IN_WAIT, IN_BARRIER or STOPPED
    open_row: np.ndarray  # per segment: the wait, barrier or last event it ends in; -1 when finished
    last_row: np.ndarray  # per segment: its last row
    stuck_begin: np.ndarray  # stuck waits' wait_begin rows (-1: the begin was lost to ring wrap)
    stuck_end: np.ndarray  # their timeout wait_end rows (-1: the trace ends inside the wait)
    view: Any = field(repr=False, compare=False)

    def wait_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(begin_to_end, end_to_begin) row maps; -1 where unpaired (a begin with -1 never ended)."""
        return _passes.wait_pairs(self.view)

    def atomic_window(self) -> np.ndarray:
        """Per row, the atomic_mode add row whose window it lies in; -1 outside any add window."""
        return _passes.atomic_window(self.view)

    def incomplete_launches(self) -> set[tuple[int, int]]:
        """(rank, launch) pairs where some core did not reach kernel_end or sits in a wait."""
        return _passes.incomplete_launches(self.view)


def wait_pairs(view) -> tuple[np.ndarray, np.ndarray]:
    """``CoreScan.wait_pairs`` without the rest of the stage: for a reader of the dataset outside the
    rules (the timeline), which pairs waits and needs no end states."""
    return _passes.wait_pairs(view)


def core_scan(view) -> CoreScan:
    def build() -> CoreScan:
        state, open_row, last_row, begin, end = scanned(view)
        return CoreScan(state, open_row, last_row, begin, end, view)
    return cached(view, "core_scan", build, Stage.CORE_SCAN)
