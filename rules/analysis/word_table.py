"""Stage WORD_TABLE: every word write into a flag-like region, one entry per word (per slot where a
region is only written and waited on whole slots), in happens-before order.

The table itself is ``_words_table.Words`` (built by ``_words``: packed keys
where they fit, lexsort otherwise). What is decided from it: the flag-sync
edge between a write and a later read (a wait that observed a value only a
later write of the writer's rank could give), the data-race pairs (reads of a
peer's memory with a write no barrier, quiet or flag orders), and the stale
flags (``_stale``: waits a leftover satisfied; ``_unreset``: words left off reset).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from . import _flag_edges, _race_pairs, _stale, _unreset
from ._cache import cached
from ._stale import StaleWaits
from ._unreset import Unreset
from ._words import expand, words
from ._words_table import Words
from .stages import Stage


@dataclass(frozen=True)
class WordTable:
    """The word table (``table``) and the orders read from it."""

    stage: ClassVar[Stage] = Stage.WORD_TABLE
    table: Words
    view: Any = field(repr=False, compare=False)

    expand = staticmethod(expand)  # keys first_key[i] .. first_key[i]+count[i]-1 with their sources

    def flag_edge(self, write: int, read: int) -> str | None:
        """'ordered' when a flag the reader waited on proves ``write`` happened before ``read``;
        'unknown' when the trace cannot tell; None when no flag relates them."""
        return _flag_edges.flag_edge(self.view, write, read)

    def races(self):
        """(reads, a concurrent write each, how many, the write ordered before each or -1)."""
        return _race_pairs.races(self.view)

    def stale_waits(self) -> StaleWaits:
        """Completed waits that only an earlier launch's value can have satisfied."""
        return _stale.stale_waits(self.view)

    def unreset(self) -> Unreset:
        """Flag words left off reset at the end of a launch, per (owner, region, launch)."""
        return _unreset.unreset(self.view)

    def not_reset(self) -> dict:
        """``unreset`` by (owner rank, region id, launch) -> (its MT202 key, its group number)."""
        return _unreset.unreset_index(self.view)

    def not_reset_offsets(self, group: int) -> np.ndarray:
        """The word offsets (within its region) of ``not_reset``'s group ``group``."""
        return _unreset.offsets(self.view, group)

    def done_of(self, rows: np.ndarray, is_read: bool) -> np.ndarray:
        """The row where each access is done (its quiet, drain or own row; -1: not in the launch)."""
        return _race_pairs.done_of(self.view, rows, is_read)


def word_table(view) -> WordTable:
    return cached(view, "word_table", lambda: WordTable(words(view), view), Stage.WORD_TABLE)
