"""Stage PRODUCERS: who writes which slot, and the protocol facts a slot's producer is read from.

Counts stored raw where the protocol encodes them (``_counts``), counts a
receiver kept from an earlier launch (``_kept``), ring heads a consumer kept
and ring slots polled on the wrong channel (``_rings``). Words left unreset
are the word table's (``WordTable.not_reset``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from . import _counts, _kept, _rings
from ._cache import cached
from ._counts import RawCounts
from ._kept import Kept
from ._rings import Withheld, WrongPoll, channel_words  # noqa: F401 - channel_words: public here (a ring slot in the protocol's words)
from .stages import Stage


@dataclass(frozen=True)
class Producers:
    """The producer facts, each computed on first ask and held for the window."""

    stage: ClassVar[Stage] = Stage.PRODUCERS
    view: Any = field(repr=False, compare=False)

    def raw_counts(self) -> RawCounts:
        return _counts.raw_counts(self.view)

    def kept_counts(self) -> dict[int, Kept]:
        return _kept.kept_counts(self.view)

    def withheld_heads(self) -> dict[int, Withheld]:
        return _rings.withheld_heads(self.view)

    def wrong_polls(self) -> dict[int, WrongPoll]:
        return _rings.wrong_polls(self.view)


def producers(view) -> Producers:
    return cached(view, "producers", lambda: Producers(view), Stage.PRODUCERS)
