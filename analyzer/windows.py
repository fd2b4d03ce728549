"""Windows: how a large trace is diagnosed a few blocks at a time.

A trace of more than ``window_events`` events, written in blocks (whole
launches of every rank, ``ingest.dataset``), is diagnosed window by window so
that memory follows the window, not the trace.  There are as many windows as
``window_events`` asks (the trace's events over it), each with *main* blocks of
about ``window_events`` events, cut so that the largest window read is as
small as it can be.  A window also reads one block before its main blocks and
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

# Small enough that a window's read, analyses and hits stay under 2 GiB even where a million
# findings pile up; large enough that the one block of context either side costs little.
# Measured against 8 Mi (bench/RESULTS.md, ninth session): the 20 M many-findings trace 2.21 ->
# 1.88 GiB peak (5 windows, not 3), 100 M events 3.05 -> 2.39 GiB for 3% more time, a 6.2 M
# trace two windows instead of one in the same time at 1.10 GiB, not 1.34; 10 M is two either way.
WINDOW_EVENTS = 5_000_000


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
    # As many windows as the budget needs, cut so that the largest read (main blocks and one block
    # either side) is as small as it can be: memory follows the largest window, and evening the main
    # blocks alone left a middle window, which reads two blocks of context, the largest (9.6 M
    # events of the 20 M many-findings trace's 7.4, 9.6 and 7.3).
    sizes = [b.events for b in blocks]
    cuts = _least_largest_read(sizes, min(-(-sum(sizes) // window_events), len(blocks)))
    out: list[Window] = []
    for k, hi in zip(cuts[:-1], cuts[1:]):
        lo, top = max(k - 1, 0), min(hi + 1, len(blocks))
        out.append(Window(lo, top, blocks[k].launch_lo, blocks[hi - 1].launch_hi, sum(sizes[lo:top]),
                          hi == len(blocks)))
    return out


def _least_largest_read(sizes: list[int], count: int) -> list[int]:
    """Cut points (0 first, ``len(sizes)`` last) of ``count`` runs of at least one block, whose
    largest read (a run's blocks and the block either side) is the least possible."""
    n = len(sizes)
    cum = [0, *accumulate(sizes)]

    def read(k: int, hi: int) -> int:  # blocks k..hi-1 and one block either side
        return cum[min(hi + 1, n)] - cum[max(k - 1, 0)]

    def within(limit: int) -> list[int] | None:
        # Greedy: each run as long as the limit allows, which needs the fewest runs.
        cuts = [0]
        while cuts[-1] < n:
            k = hi = cuts[-1]
            while hi < n and read(k, hi + 1) <= limit:
                hi += 1
            if hi == k or len(cuts) > count:
                return None
            cuts.append(hi)
        return cuts

    # A run holding block k reads at least k's neighbours; one run reads everything.
    lo, hi = max(read(k, k + 1) for k in range(n)), cum[n]
    while lo < hi:
        mid = (lo + hi) // 2
        if within(mid) is None:
            lo = mid + 1
        else:
            hi = mid
    cuts = within(lo)
    # The greedy runs may be fewer than asked: split the largest reads (a part never reads more than
    # its run) until there are ``count``, so the windows are as many, and as small, as the budget says.
    while len(cuts) - 1 < count:
        runs = [j for j in range(len(cuts) - 1) if cuts[j + 1] - cuts[j] > 1]
        j = max(runs, key=lambda j: read(cuts[j], cuts[j + 1]))
        a, b = cuts[j], cuts[j + 1]
        cuts.insert(j + 1, min(range(a + 1, b), key=lambda c: max(read(a, c), read(c, b))))
    return cuts
