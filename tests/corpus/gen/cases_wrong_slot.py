"""A two-rank flag handshake (a ping and its pong) whose ping goes to the wrong slot.

2 ranks x 1 core; one flag region, a slot per writer (slot = the writer's rank, as the ``rank``
index says). Each launch rank 0 pings: it signals flag[0] of rank 1 and waits for flag[1] of its
own; rank 1 waits for the ping on its flag[0], resets it, then pongs: it signals flag[1] of rank
0. Rank 0 resets its flag[1] after the pong. The host syncs both ranks between launches.
"""

from __future__ import annotations

from ._sched import RAN, Gate, Runner, wait
from ._trace import Trace
from .registry import case, roots

P = 2
NAME = "flag_handshake"


class Handshake:
    def __init__(self, rounds: int, *, ping_slot: dict | None = None, annotated: bool = False):
        """``ping_slot``: launch -> the slot rank 0 pings instead of its own (0)."""
        self.rounds, self.ping_slot = rounds, ping_slot or {}
        regs = [{"name": "flag", "role": "flag", "elem_bytes": 4, "length": P, "reset": 0, "index": "rank"}]
        self.tr = Trace(ranks=P, cores=1, regions=regs, annotated=annotated, names=[NAME])
        self.host = [Gate(P) for _ in range(rounds)]

    def run(self) -> Trace:
        runner = Runner(self.tr)
        runner.start(0, 0, self.pinger())
        runner.start(1, 0, self.ponger())
        runner.run()
        return self.tr

    def pinger(self):
        tr = self.tr
        for g in range(self.rounds):
            if g:
                yield from self.host[g].pass_()
            tr.launch(g, [0])
            tr.kernel(0, 0, NAME)
            tr.signal(0, 0, 1, "flag", self.ping_slot.get(g, 0), 1)
            yield RAN
            yield from wait(tr, 0, 0, "flag", 1, "eq", 1)
            tr.write(0, 0, "flag", 1, 4, 0)
            tr.kernel(0, 0, NAME, False)
            yield RAN

    def ponger(self):
        tr = self.tr
        for g in range(self.rounds):
            if g:
                yield from self.host[g].pass_()
            tr.launch(g, [1])
            tr.kernel(1, 0, NAME)
            yield from wait(tr, 1, 0, "flag", 0, "eq", 1)
            tr.write(1, 0, "flag", 0, 4, 0)
            tr.signal(1, 0, 0, "flag", 1, 1)
            tr.kernel(1, 0, NAME, False)
            yield RAN


@case
def handshake_wrong_slot():
    """Issue 18 item 1: one clean launch, then rank 0 pings flag[1] of rank 1 (the peer's slot, not
    its own flag[0]); rank 1's wait on flag[0] never ends, so it never pongs and rank 0's wait on
    flag[1] never ends either. Bare manifest: the slot index is inferred from the clean launch."""
    return Handshake(2, ping_slot={1: 1}).run(), roots(
        [("MT105", 0, 0)], "one root: rank 0's misdirected ping; both ranks' stuck waits are its symptoms")
