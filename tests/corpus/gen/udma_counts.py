"""A count exchange through UDMA scalar atomics (seed 004 sections 2.3 and 6.3, field notes DeepEP LL).

4 ranks x 2 cores, 2 local experts. Each launch the core serving peer d (d = core, core+2, self
included) announces its rows for each of d's local experts (``count``), adds them into d's
recv_count[e*P + my_rank] with ``aclshmemx_udma_atomic_add``, calls ``aclshmemx_udma_quiet(d)``
(the add is only submitted when the call returns) and sets done[my_rank] = 1 on d with an MTE
signal. Core 0 of each rank waits every done slot, reads the counts (``deliver``: requested =
delivered = the count it read) and resets recv_count and done to 0 for the next launch.
"""

from __future__ import annotations

from ._sched import RAN, Gate, Runner, wait
from ._trace import Trace
from .registry import case, clean, roots

P, C, L = 4, 2, 2
CAP = 8
NAME = "udma_count_exchange"


def rows(g, r, d, e):
    """Rows rank r sends to local expert e of rank d in launch g (1..4, never 0)."""
    return (r + 2 * d + 3 * e + g) % 4 + 1


class UdmaCounts:
    def __init__(self, rounds=2, *, no_quiet=(), late=0, annotated=False, keep_done=()):
        self.rounds, self.no_quiet, self.late = rounds, set(no_quiet), late
        self.keep_done = set(keep_done)  # (launch, rank): the done flags are not reset
        regs = [{"name": "recv_count", "role": "counter", "elem_bytes": 4, "length": L * P, "reset": 0,
                 "index": "segment"},
                {"name": "done", "role": "flag", "elem_bytes": 4, "length": P, "reset": 0, "index": "rank"}]
        self.tr = Trace(ranks=P, cores=C, regions=regs, protocol="udma_counts", annotated=annotated,
                        params={"local_experts": L, "num_experts": P * L, "capacity": CAP}, names=[NAME])
        self.host = [Gate(P * C) for _ in range(rounds)]

    def run(self):
        self.runner = Runner(self.tr)
        for r in range(P):
            for c in range(C):
                self.runner.start(r, c, self.core(r, c))
        self.hung = self.runner.run()
        return self.tr

    def core(self, r, c):
        tr = self.tr
        for g in range(self.rounds):
            if g:
                yield from self.host[g].pass_()
            tr.launch(g, [r])
            tr.kernel(r, c, NAME)
            for d in range(c, P, C):
                for e in range(L):
                    tr.count(r, c, d, e, rows(g, r, d, e), capacity=CAP if tr.annotated else None)
                    late = (g, r, c) in self.no_quiet
                    eff = tr.amo(r, c, d, "recv_count", e * P + r, rows(g, r, d, e), land=not late)
                    if late:  # no UDMA quiet: the add reaches d after d has read its counts
                        self.runner.land_after(self.late, eff)
                    yield RAN
                if (g, r, c) not in self.no_quiet:
                    tr.quiet(r, c, "udma", d)
                tr.signal(r, c, d, "done", r, 1)
                yield RAN
            if c == 0:
                for s in range(P):
                    yield from wait(tr, r, c, "done", s, "eq", 1)
                for e in range(L):
                    for s in range(P):
                        n = tr.read(r, "recv_count", e * P + s)
                        tr.deliver(r, c, e, s, n, n, CAP)
                tr.write(r, c, "recv_count", 0, L * P * 4, 0)
                if (g, r) not in self.keep_done:
                    tr.write(r, c, "done", 0, P * 4, 0)
            tr.kernel(r, c, NAME, False)
            yield RAN


@case
def udma_counts_clean():
    """Two clean launches: every UDMA add quieted before its done signal; written as ring dumps."""
    return UdmaCounts(2).run(), clean("two clean launches of the UDMA count exchange"), {"ring": {}}


@case
def udma_amo_before_quiet():
    """Issue 9 item 6: rank 1 core 0 (serving ranks 0 and 2) skips ``aclshmemx_udma_quiet``: its
    adds are still in flight when its done signals land, ranks 0 and 2 read 0 rows from rank 1
    (deliver requested 0 vs count announced 2-4: MT502) and the adds arrive after the reset."""
    u = UdmaCounts(1, no_quiet={(0, 1, 0)}, late=40)
    return u.run(), roots([("MT404", 1, 0)], "one root: the unquieted UDMA atomics of rank 1 core 0; "
                          "the count mismatches at ranks 0 and 2 are its symptoms")


@case
def udma_counts_clean_annotated():
    """The clean exchange as JSON lines with every annotation: recv_count declares reset 0, and
    each owner's reset of it follows the peers' adds only through happens-before (add, UDMA
    quiet, done signal, the owner's wait on done); by raw ts 24 of the 64 adds come after it."""
    return UdmaCounts(2, annotated=True).run(), clean("clean; a reset ordered after the adds by the "
                                                      "done flags, not by ts")
