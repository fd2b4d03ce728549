"""Windows: how a large trace is diagnosed a few blocks at a time.

A trace of more than ``window_events`` events, written in blocks (whole
launches of every rank, ``ingest.dataset``), is diagnosed window by window so
that memory follows the window, not the trace.  Each window's *main* blocks
hold about ``window_events`` events; it also reads one block before them and
one after, so a rule judging an event in the main blocks sees the round before
it (a reset that did not happen, a value left from the last round) and the
round after it (a peer one launch ahead, a reset made late).  A window keeps
the hits whose primary event (their first) lies in its main blocks: each hit
is reported by exactly one window, the one that saw it with its neighbours.
Windows are independent, so they can run in parallel.

What a window cannot see: history older than one block.  A word written
once and then read for more than a block of launches without being written
again is judged without its writer; the protocols this tool knows write every
flag they wait on each round, so this only matters for traces that do not.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate
from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

# Large enough that a typical training step's trace is one window; small
# enough that a 100 M event trace needs a few GiB, not tens.
WINDOW_EVENTS = 8 << 20


@dataclass(frozen=True)
class Window:
    """Blocks [read_lo, read_hi) are read; hits whose first event's launch is in [launch_lo, launch_hi] are kept.

    ``launch_lo`` None: the window is the whole trace and keeps every hit.
    """

    read_lo: int
    read_hi: int
    launch_lo: int | None
    launch_hi: int | None
    events: int  # rows read, context included
    last: bool = True  # the trace's last window: it keeps hits that name no event

    @property
    def blocks(self) -> tuple[int, int] | None:
        return None if self.launch_lo is None else (self.read_lo, self.read_hi)

    def owns(self, launch: int | None) -> bool:
        if self.launch_lo is None:
            return True
        if launch is None:
            return self.last
        return self.launch_lo <= launch <= self.launch_hi

    def owns_each(self, launch: np.ndarray, named: np.ndarray) -> np.ndarray:
        """``owns`` of many hits at once: their launches, ``named`` False where a hit names none."""
        import numpy as np  # here: the config imports this module, and ``moetrace --help`` no numpy

        if self.launch_lo is None:
            return np.ones(len(launch), bool)
        return np.where(named, (launch >= self.launch_lo) & (launch <= self.launch_hi), self.last)


def plan(blocks: Sequence, window_events: int, total: int) -> list[Window]:
    """Windows over ``blocks`` (``ingest.ingest_report.Block``), each with at least one main block.

    One window for the whole trace when it fits ``window_events`` or has no
    blocks (then ``total`` rows are read).
    """
    if len(blocks) <= 1 or total <= window_events:
        return [Window(0, max(len(blocks), 1), None, None, total)]
    # As many windows as the budget needs, evened out (two of 4.8 M, not 8 M and
    # 1.6 M): cut where the running count is nearest each share of the total.
    sizes = [b.events for b in blocks]
    total_b = sum(sizes)
    count = min(-(-total_b // window_events), len(blocks))
    cum = list(accumulate(sizes))
    cuts = [0]
    for i in range(1, count):
        share = total_b * i / count
        k = min(range(cuts[-1] + 1, len(blocks) - (count - i) + 1), key=lambda k: abs(cum[k - 1] - share))
        cuts.append(k)
    cuts.append(len(blocks))
    out: list[Window] = []
    for k, hi in zip(cuts[:-1], cuts[1:]):
        lo, top = max(k - 1, 0), min(hi + 1, len(blocks))
        out.append(Window(lo, top, blocks[k].launch_lo, blocks[hi - 1].launch_hi, sum(sizes[lo:top]),
                          hi == len(blocks)))
    return out
