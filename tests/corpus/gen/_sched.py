"""Run the cores' programs in one real-time interleaving, as the hardware would.

A program is a generator per (rank, core) that records its events through a
``Trace`` and yields after each step: ``RAN`` when it did something,
``BLOCKED`` when it polls a word (or a barrier) that does not let it pass yet.
The runner steps every live program in turn, in (rank, core) order; a core
that stalls (computing, a slow link) yields ``RAN`` without recording. When a
whole pass makes no progress, every live program is hung: the run ends there,
as a hung job's dump does.  Delayed effects (a write still in flight) land
after the number of passes the script gives.
"""

from __future__ import annotations

RAN, BLOCKED = "ran", "blocked"


class Runner:
    def __init__(self, trace):
        self.trace = trace
        self.programs: dict[tuple[int, int], object] = {}
        self.later: list[tuple[int, int, list]] = []  # (pass, order, effects)
        self.passes = 0

    def start(self, rank: int, core: int, program) -> None:
        self.programs[(rank, core)] = program

    def land_after(self, passes: int, effects: list) -> None:
        self.later.append((self.passes + passes, len(self.later), effects))

    def run(self) -> list[tuple[int, int]]:
        """Run to completion or hang; the (rank, core) of the programs left hung."""
        while self.programs or self.later:
            progress = False
            for key in sorted(self.programs):
                try:
                    if next(self.programs[key]) != BLOCKED:
                        progress = True
                except StopIteration:
                    del self.programs[key]
                    progress = True
            self.passes += 1
            due = [x for x in self.later if x[0] <= self.passes]
            for x in sorted(due):
                self.trace.land(x[2])
                self.later.remove(x)
                progress = True
            if not progress and not self.later:
                break
        for _, _, effects in self.later:  # still in flight when the job died: never landed
            effects.clear()
        self.trace.finish()
        return sorted(self.programs)


def wait(tr, r, c, region, offset, cmp, value, words=1, timeout=None, site=None, epoch=None):
    """Poll until the word satisfies cmp; with ``timeout`` (polls), give up and end with outcome timeout.

    Returns (via StopIteration) True when satisfied, False on timeout.
    """
    w = tr.wait_begin(r, c, region, offset, cmp, value, words, site=site, epoch=epoch)
    polls = 0
    while not tr.holds(w):
        if timeout is not None and polls >= timeout:
            tr.wait_end(w, timeout=True, site=site, epoch=epoch)
            return False
        polls += 1
        yield RAN if timeout is not None else BLOCKED
    tr.wait_end(w, site=site, epoch=epoch)
    return True


def stall(passes: int):
    for _ in range(passes):
        yield RAN


class Gate:
    """A rendezvous of n participants that records nothing (host sync, stream order)."""

    def __init__(self, n: int):
        self.n, self.arrived = n, 0

    def pass_(self):
        self.arrived += 1
        if self.arrived < self.n:
            yield RAN  # arriving is progress: the others may pass now
        while self.arrived < self.n:
            yield BLOCKED


class Barrier(Gate):
    """A recorded barrier: barrier_begin on arrival, barrier_end once all n arrived."""

    def __init__(self, tr, n: int, scope: str, value=None):
        super().__init__(n)
        self.tr, self.scope, self.value = tr, scope, value

    def enter(self, r, c):
        self.tr.barrier(r, c, self.scope, True, self.value)
        yield from self.pass_()
        self.tr.barrier(r, c, self.scope, False, self.value)
