"""Where each rank's events go on the timeline's one time axis.

Ranks' clocks are not aligned (each ``ts`` counts its own device's cycles),
so the timeline places each rank by an offset.  A rank that reached the end
of the first cross-rank barrier (``barrier_end`` scope ``all``, in the
earliest drawn launch every drawn rank has one) is shifted so that its
earliest exit from that barrier lines up with every other such rank's: all
ranks left that barrier at about the same moment, whatever their clocks say.
A rank without that barrier starts at its own first drawn event.  The
offsets are a placement for the eye, never an ordering: nothing here (or in
the flows) compares the ts of two ranks to decide what happened first.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.contract import Kind, Scope

BARRIER = "barrier"
FIRST_EVENT = "first-event"


@dataclass(frozen=True)
class Placement:
    """shift[rank]: cycles added to the rank's ts; method[rank]: BARRIER or FIRST_EVENT."""

    shift: dict[int, int]
    method: dict[int, str]
    launch: int | None  # the launch whose first barrier aligned the ranks, None if none did

    def to_json(self) -> dict:
        return {"unit": "1 ns on the time axis = 1 device cycle",
                "rule": ("ranks shifted so that their exits from the first cross-rank barrier line up; "
                         "a rank without that barrier starts at its own first event"),
                "aligned_on_launch": self.launch,
                "ranks": {str(r): {"shift_cycles": self.shift[r], "method": self.method[r]}
                          for r in sorted(self.shift)}}


def place(rank: np.ndarray, ts: np.ndarray, kind: np.ndarray, scope: np.ndarray,
          launch: np.ndarray) -> Placement:
    """Offsets for the drawn rows (all arrays of the drawn rows only)."""
    ranks = np.unique(rank).tolist()
    first = {r: int(ts[rank == r].min()) for r in ranks}
    exits = (kind == Kind.BARRIER_END) & (scope == Scope.ALL)
    anchor: dict[int, int] = {}
    aligned_launch = None
    if exits.any():
        launches = np.unique(launch[exits])
        # The earliest launch every rank passes a full barrier in; else the launch most ranks do.
        best, best_n = None, 0
        for L in launches.tolist():
            on = exits & (launch == L)
            n = len(np.unique(rank[on]))
            if n == len(ranks):
                best, best_n = L, n
                break
            if n > best_n:
                best, best_n = L, n
        if best_n > 1:
            aligned_launch = best
            on = exits & (launch == best)
            for r in np.unique(rank[on]).tolist():
                anchor[r] = int(ts[on & (rank == r)].min())
    # Everyone's barrier exit lands at B, late enough that no aligned rank starts before 0.
    lead = max((anchor[r] - first[r] for r in anchor), default=0)
    shift, method = {}, {}
    for r in ranks:
        if r in anchor:
            shift[r], method[r] = lead - anchor[r], BARRIER
        else:
            shift[r], method[r] = -first[r], FIRST_EVENT
    return Placement(shift, method, aligned_launch)
