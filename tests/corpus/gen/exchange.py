"""A row + count exchange with completion counters (DeepEP notify / low-latency count style),
written for the unusual-but-legal corpus cases: any number of ranks and cores, 1..3 launches.

Per launch, the core serving peer d announces n rows (``count``), puts them to its slot of d's
inbox, drains them (``drain``: a quiet, a quiet naming d, a fence naming d, or no drain at all
because rows and count travel in ONE put_signal WQE), sets cnt[my_rank] on d to n (or to -n-1,
DeepEP's encoding that tells "0 rows" from "not yet"), fences, and adds 1 to d's ``arrived``
completion counter (signal add). Peers are dealt to cores round-robin, each rank starting at its
own index, so no two ranks send in the same order. The receiving core waits arrived, then each
cnt[s] (``cmp``: ge 0 or gt -1 over a -1 fill, ne 0 over the -n-1 encoding), records the deliver,
and resets: cnt by ONE write that fills every word (-1, or 0 for the encoding), arrived to 0; or,
``monotonic``, arrived is never reset and the wait is arrived ge P*(g+1).

The -1 the cnt words start from is the host's memset (``init`` host: not recorded) or the
kernel's own fill in launch 0 before a barrier_all every core records (``init`` kernel).
Cores that serve no peer and do not receive only begin and end the kernel; ``silent_cores``
are cores the kernel was not launched on (no events at all). ``put_signal_add``: the count goes
first (fenced), then the rows and the arrived add travel in ONE put_signal WQE.
"""

from __future__ import annotations

from ._sched import RAN, Barrier, Gate, Runner, stall, wait
from ._trace import Trace

H = 4  # words per row


class Exchange:
    def __init__(self, ranks, cores, launches, *, cap=3, drain="quiet", engine="mte", cmp="ge",
                 monotonic=False, init="host", recv_core=0, send_cores=None, stall=None, rows=None,
                 annotated=False, clocks=None, faults=None, protocol="exchange", counter=True,
                 silent_cores=()):
        self.P, self.C, self.G = ranks, cores, launches
        self.cap, self.drain, self.engine, self.cmp = cap, drain, engine, cmp
        self.monotonic, self.init, self.recv_core = monotonic, init, recv_core
        self.send_cores = send_cores if send_cores is not None else cores
        self.stall = stall or {}  # (launch, rank, core) -> passes spent before sending / receiving
        self.rows_fn = rows or (lambda g, r, d: (3 * r + 5 * d + 7 * g) % (cap + 1))
        self.f = faults or {}
        self.counter = counter  # False: no arrived counter, the cnt words alone say a peer is done
        self.silent = set(silent_cores)  # cores the kernel was not launched on: they record nothing
        self.encoded = cmp == "ne"  # -n-1 encoding: 0 means "not yet"
        empty = 0 if self.encoded else -1
        self.empty = empty
        arrived = {"name": "arrived", "role": "counter", "elem_bytes": 4, "length": 1}
        arrived.update({"monotonic": True} if monotonic else {"reset": 0})
        regs = [
            {"name": "inbox", "role": "payload", "elem_bytes": 4, "length": ranks * cap * H,
             "slot_words": cap * H},
            {"name": "cnt", "role": "counter", "elem_bytes": 4, "length": ranks, "reset": empty,
             "index": "rank"},
            arrived,
        ]
        self.tr = Trace(ranks=ranks, cores=cores, regions=regs, protocol=protocol, annotated=annotated,
                        names=["notify_dispatch"], clocks=clocks)
        if init == "host" and empty:
            for r in range(ranks):
                self.tr.memset(r, "cnt", empty)
        live = ranks * (cores - len(set(silent_cores)))
        self.host = [Gate(live) for _ in range(launches)]
        self.init_bar = Barrier(self.tr, live, "all")

    def rows(self, g, r, d):
        return self.f.get("rows", {}).get((g, r, d), self.rows_fn(g, r, d))

    def peers(self, r, c):
        order = [(r + i) % self.P for i in range(self.P)]
        return order[c::self.send_cores] if c < self.send_cores else []

    def run(self):
        self.runner = Runner(self.tr)
        for r in range(self.P):
            for c in range(self.C):
                if c not in self.silent:
                    self.runner.start(r, c, self.core(r, c))
        self.hung = self.runner.run()
        return self.tr

    def core(self, r, c):
        tr = self.tr
        for g in range(self.G):
            if g:
                yield from self.host[g].pass_()
            tr.launch(g, [r])
            tr.kernel(r, c, "notify_dispatch")
            yield RAN
            if g == 0 and self.init == "kernel":
                if c == self.recv_core:
                    tr.write(r, c, "cnt", 0, self.P * 4, self.empty)
                yield from self.init_bar.enter(r, c)
            yield from stall(self.stall.get((g, r, c), 0))
            for d in self.peers(r, c):
                yield from self.send(g, r, c, d)
            if c == self.recv_core:
                yield from stall(self.stall.get((g, r, "recv"), 0))
                yield from self.receive(g, r, c)
            tr.kernel(r, c, "notify_dispatch", False)
            yield RAN

    def send(self, g, r, c, d):
        tr, n = self.tr, self.rows(g, r, d)
        word = -n - 1 if self.encoded else n
        tr.count(r, c, d, 0, n)
        late = (g, r, d) in self.f.get("no_drain", ())
        if n and self.drain == "put_signal_add":
            # The count first (fenced), then rows + the completion add in ONE WQE.
            tr.signal(r, c, d, "cnt", r, word)
            tr.fence(r, c, self.engine, peer=d)
            tr.put_signal(r, c, d, "inbox", r * self.cap * H, n * H * 4, "arrived", 0, 1, op="add",
                          engine=self.engine)
            yield RAN
            tr.quiet(r, c, self.engine, peer=d)
            return
        if n and self.drain == "put_signal":
            tr.put_signal(r, c, d, "inbox", r * self.cap * H, n * H * 4, "cnt", r, word, engine=self.engine)
        else:
            if n:
                eff = tr.put(r, c, d, "inbox", r * self.cap * H, n * H * 4, engine=self.engine, land=not late)
                if late:  # no drain: the rows are still in flight when the count lands
                    self.runner.land_after(self.f.get("late", 30), eff)
                elif self.drain == "quiet":
                    tr.quiet(r, c, self.engine)
                elif self.drain == "quiet_peer":
                    tr.quiet(r, c, self.engine, peer=d)
                elif self.drain == "fence":
                    tr.fence(r, c, self.engine, peer=d)
            tr.signal(r, c, d, "cnt", r, word)
        yield RAN
        if not self.counter:
            return
        if self.drain == "put_signal" and n:
            tr.quiet(r, c, self.engine, peer=d)  # the WQE completes before the counter announces it
        else:
            tr.fence(r, c, "mte", peer=d)
        tr.signal(r, c, d, "arrived", 0, 1, op="add")
        yield RAN

    def receive(self, g, r, c):
        tr, P = self.tr, self.P
        target = P * (g + 1) if self.monotonic else P
        if self.counter:
            yield from wait(tr, r, c, "arrived", 0, "ge" if self.monotonic else "eq", target)
        for i in range(P):
            s = (r + 1 + i) % P
            value = {"ge": 0, "gt": -1, "ne": 0}[self.cmp]
            yield from wait(tr, r, c, "cnt", s, self.cmp, value)
            word = tr.read(r, "cnt", s)
            n = -word - 1 if self.encoded else word
            clamp = (g, r) not in self.f.get("no_clamp", ())
            tr.deliver(r, c, 0, s, n, min(n, self.cap) if clamp else n, self.cap)
            yield RAN
        if (g, r) not in self.f.get("no_reset", ()):
            tr.write(r, c, "cnt", 0, P * 4, self.empty)
        if self.counter and not self.monotonic:
            tr.write(r, c, "arrived", 0, 4, 0)
        yield RAN
