"""Stage HAPPENS_BEFORE: the order the trace proves between events, never from clocks.

Program order within a core; barrier phases across cores and ranks (both
recording layouts: every core, or core 0 with core barriers); completion (the
first later row of a core that completes a one-sided op: a quiet of its
engine and peer, kernel_end for MTE and local work; with fences also what
orders it); and what a flag write overtook (payload puts still outstanding at
it, with the user's ``ordered_engines``). Flag-sync edges (a wait that
observed a write) come from the word table: ``WordTable.flag_edge``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from . import _passes, _phases, _race_pairs, _unfenced
from ._cache import cached
from ._unfenced import Unfenced
from .stages import Stage


@dataclass(frozen=True)
class HappensBefore:
    """Barrier phases per row; completion, drains and unfenced flag writes computed on first ask."""

    stage: ClassVar[Stage] = Stage.HAPPENS_BEFORE
    phase_all: np.ndarray  # per row: cross-rank barriers its core has left in this launch
    phase_core: np.ndarray  # per row: barriers of any scope and sync_alls its core has left in this launch
    view: Any = field(repr=False, compare=False)

    def completed_at(self, fences: bool = False, ends: bool = True, transport: bool = False,
                     peers: bool = True) -> np.ndarray:
        """Per one-sided op row, the first later row of its core that completes it (-1: none in the trace).

        A quiet of its engine and peer; ``ends``: kernel_end for MTE and local work;
        ``fences``: a fence too (it orders); ``transport``: an amo's engine is the one it
        took (``regions.amo_transport``); ``peers=False``: a quiet completes its engine
        whatever peer it names (a pipe drain). Every question "does this quiet complete that
        op" reads this one pass (``_passes.completed_at`` says why the parameters exist)."""
        return _passes.completed_at(self.view, fences, ends, transport, peers)

    def drains(self) -> np.ndarray:
        """Per row, the MTE pipe drain that completes an MTE get's local write (-1: none)."""
        return _race_pairs.drains(self.view)

    def unfenced(self, ordered_names=None) -> Unfenced:
        """Flag writes with payload puts outstanding at them (``ordered_names``: the run's option)."""
        return _unfenced.unfenced(self.view, ordered_names)

    def put_flag(self, ordered_names=None) -> np.ndarray:
        """Per payload put row, the first flag write it is still outstanding at (-1: none)."""
        return _unfenced.put_flag(self.view, ordered_names)


def happens_before(view) -> HappensBefore:
    def build() -> HappensBefore:
        phase_all, phase_core = _phases.phases(view)
        return HappensBefore(phase_all, phase_core, view)
    return cached(view, "happens_before", build, Stage.HAPPENS_BEFORE)
