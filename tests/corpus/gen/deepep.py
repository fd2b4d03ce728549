"""DeepEP's two protocols (reference/protocols.md §2.1 and §2.3), written from the notes alone.

Intranode normal dispatch (``Ring``): 3 ranks x 4 cores, 2 channels; core 2ch sends channel ch,
core 2ch+1 receives it. Each (channel, src) queue lives on the receiver: its count
(channel_count[ch*P + src], stored -n-1 so that 0 means "not written yet"), its tail
(channel_tail[ch*P + src], advanced by the sender after each row) and a 2-row ring
(channel_x); its head lives on the sender (channel_head[ch*P + dst]), returned by the receiver
after it drains rows. Each launch every core zeroes the words it waits on, then all meet in a
barrier (notify). The sender stores its counts, then per row waits for space (head >= row + 1 -
2), copies the row, completes it (p2p quiet: the release) and advances the tail; the receiver
polls the counts != 0, decodes them, and per source waits for the tail to pass its head, takes
the rows and returns the head.

Low-latency dispatch and combine (``LowLatency``): 3 ranks x 2 cores, 2 local experts; every
call is a launch (dispatch 2g, combine 2g+1). recv_signal has two halves: dispatch polls half 0
(counts at local_expert*P + src, added -n-1 by the sender after its rows, on the same IBGDA queue
pair: no quiet between), combine half 1 (a flag per expert, added 1 after the results). Each
launch's core 0 zeroes the other half for the next launch (next_clean).
"""

from __future__ import annotations

from ._sched import RAN, Barrier, Gate, Runner, wait
from ._trace import Trace
from .registry import case, clean, roots

P, NC, ROWS, H = 3, 2, 2, 2  # ranks, channels, ring rows, words per row


def flow(g, s, ch, d):
    """Rows rank s sends to rank d on channel ch in launch g (0 included: the encoding's reason)."""
    return (s + 2 * d + 3 * ch + g) % 4


class Ring:
    def __init__(self, launches=1, *, raw=(), keep_head=None, wrong_channel=None, no_release=None,
                 late=0, annotated=False):
        self.launches, self.raw, self.keep_head = launches, set(raw), keep_head
        self.wrong_channel, self.no_release, self.late = wrong_channel, no_release, late
        q = NC * P
        regs = [{"name": "channel_count", "role": "counter", "elem_bytes": 4, "length": q, "reset": 0,
                 "index": "segment"},
                {"name": "channel_tail", "role": "counter", "elem_bytes": 4, "length": q, "index": "segment"},
                {"name": "channel_head", "role": "counter", "elem_bytes": 4, "length": q, "index": "segment"},
                {"name": "channel_x", "role": "payload", "elem_bytes": 4, "length": q * ROWS * H, "slot_words": H}]
        self.tr = Trace(ranks=P, cores=2 * NC, regions=regs, protocol="deepep_normal", annotated=annotated,
                        names=["dispatch_normal"])
        self.host = [Gate(P * 2 * NC) for _ in range(launches)]
        self.notify = [Barrier(self.tr, P * 2 * NC, "all") for _ in range(launches)]

    def run(self):
        self.runner = Runner(self.tr)
        for r in range(P):
            for c in range(2 * NC):
                self.runner.start(r, c, self.core(r, c))
        self.hung = self.runner.run()
        return self.tr

    def core(self, r, c):
        tr = self.tr
        ch = c // 2
        for g in range(self.launches):
            if g:
                yield from self.host[g].pass_()
            tr.launch(g, [r])
            tr.kernel(r, c, "dispatch_normal")
            if c % 2 == 0:
                tr.write(r, c, "channel_head", ch * P, P * 4, 0)
                yield from self.notify[g].enter(r, c)
                yield from self.send(r, c, g, ch)
            else:
                tr.write(r, c, "channel_count", ch * P, P * 4, 0)
                tr.write(r, c, "channel_tail", ch * P, P * 4, 0)
                yield from self.notify[g].enter(r, c)
                yield from self.receive(r, c, g, ch)
            tr.kernel(r, c, "dispatch_normal", False)
            yield RAN

    def send(self, s, c, g, ch):
        tr = self.tr
        for d in range(P):
            n = flow(g, s, ch, d)
            tr.signal(s, c, d, "channel_count", ch * P + s, n if (g, s) in self.raw else -n - 1, engine="p2p")
            yield RAN
        for d in range(P):
            q = ch * P + s
            for i in range(flow(g, s, ch, d)):
                if i + 1 - ROWS > 0:  # the ring is full: wait for the receiver to hand rows back
                    yield from wait(tr, s, c, "channel_head", ch * P + d, "ge", i + 1 - ROWS)
                off = (q * ROWS + i % ROWS) * H
                late = (g, s, c) == self.no_release
                eff = tr.put(s, c, d, "channel_x", off, H * 4, engine="p2p", land=not late)
                if late:  # no release: the row is still in flight when the tail lands
                    self.runner.land_after(self.late, eff)
                else:
                    tr.quiet(s, c, "p2p")
                tr.signal(s, c, d, "channel_tail", q, i + 1, engine="p2p")
                yield RAN
        if (g, s, c) == self.no_release:
            tr.quiet(s, c, "p2p")

    def receive(self, r, c, g, ch):
        tr = self.tr
        counts = []
        for s in range(P):
            yield from wait(tr, r, c, "channel_count", ch * P + s, "ne", 0)
            counts.append(max(-tr.read(r, "channel_count", ch * P + s) - 1, 0))
        polled = ch if (g, r, c) != self.wrong_channel else (ch + 1) % NC
        for s in range(P):
            head = 0
            while head < counts[s]:
                yield from wait(tr, r, c, "channel_tail", polled * P + s, "gt", head)
                head = max(head, min(tr.read(r, "channel_tail", polled * P + s), counts[s]))
                if (g, r, c, s) != self.keep_head:
                    tr.signal(r, c, s, "channel_head", ch * P + r, head, engine="p2p")
                yield RAN


def _full_queue():
    """The first (src, channel, dst) whose flow overfills the 2-row ring, with the receiver's core."""
    for s in range(P):
        for ch in range(NC):
            for d in range(P):
                if flow(0, s, ch, d) > ROWS:
                    return s, ch, d
    raise AssertionError("no flow overfills the ring")


@case
def deepep_ring_clean():
    """DeepEP intranode dispatch, one clean launch: counts -n-1, rows through 2-row channel rings
    whose senders really wait for the head; bare manifest and events."""
    return Ring(1).run(), clean("one clean launch of the ring dispatch")


@case
def deepep_ring_clean_annotated():
    """Two clean launches with every annotation (index segment on the counts, heads and tails);
    each launch starts by zeroing the words its cores wait on, then a notify barrier."""
    return Ring(2, annotated=True).run(), clean("two clean launches, annotated")


@case
def deepep_ring_count_raw():
    """Rank 1 stores its counts raw: its 0 to rank 2 on channel 0 reads as "not yet" (rank 2 core 1
    polls forever), its counts n > 0 decode to -n-1 rows, so their receivers take nothing and the
    rank 1 senders wait for heads that never come back."""
    return Ring(1, raw={(0, 1)}).run(), roots([("MT106", 1, None)], "one root: the raw counts of rank 1 "
                                             "(one finding per raw store); every stuck wait is its symptom")


@case
def deepep_ring_head_kept():
    """A receiver drains a full queue but never returns its head: the sender waits for free space,
    the receiver for the row behind it; every other core behind them hangs too."""
    s, ch, d = _full_queue()
    tr = Ring(1, keep_head=(0, d, 2 * ch + 1, s)).run()
    return tr, roots([("MT107", d, 2 * ch + 1)], f"one root: rank {d} core {2 * ch + 1} saw the tail of "
                     f"channel {ch} from rank {s} and kept the head; the cycle with the sender is its symptom")


@case
def deepep_ring_wrong_channel():
    """Rank 0's channel 1 receiver (core 3) polls channel 0's tails, returning channel 1's heads."""
    return Ring(1, wrong_channel=(0, 0, 3)).run(), roots([("MT108", 0, 3)], "one root: rank 0 core 3 polls "
                                                        "another channel's tail than the ring it drains")


@case
def deepep_ring_tail_before_payload():
    """Rank 2's channel 0 sender (core 0) advances the tail before its row copy completes (no
    release): each row lands a few passes after its tail, so the receiver may read it stale."""
    return Ring(1, no_release=(0, 2, 0), late=3).run(), roots([("MT401", 2, 0)], "one root: the tail "
                                                             "stores of rank 2 core 0 overtake their rows")


# ---- low latency ---------------------------------------------------------------------------
LP, LC, LL_E = 3, 2, 2  # ranks, cores, local experts
NE, CAP = LP * LL_E, 4


def tokens(g, s, e):
    """Rows rank s sends to global expert e in round g (0..2)."""
    return (s + e + g) % 3


class LowLatency:
    def __init__(self, rounds=1, *, skip_clean=None, raw=None, stop=None):
        self.rounds, self.skip_clean, self.raw, self.stop = rounds, skip_clean, raw, stop
        regs = [{"name": "recv_signal", "role": "counter", "elem_bytes": 4, "length": 2 * NE},
                {"name": "recv_x", "role": "payload", "elem_bytes": 4, "length": NE * CAP * H, "slot_words": H},
                {"name": "combine_x", "role": "payload", "elem_bytes": 4, "length": NE * CAP * H, "slot_words": H}]
        self.tr = Trace(ranks=LP, cores=LC, regions=regs, protocol="deepep_ll",
                        names=["dispatch_ll", "combine_ll"])
        self.host = [Gate(LP * LC) for _ in range(2 * rounds)]
        self.grid = {(r, g): Gate(LC) for r in range(LP) for g in range(rounds)}
        self.taken: dict = {}

    def run(self):
        self.runner = Runner(self.tr)
        for r in range(LP):
            for c in range(LC):
                self.runner.start(r, c, self.core(r, c))
        self.hung = self.runner.run()
        return self.tr

    def core(self, r, c):
        tr = self.tr
        for g in range(self.rounds):
            for phase, name in ((0, "dispatch_ll"), (1, "combine_ll")):
                launch = 2 * g + phase
                if launch:
                    yield from self.host[launch].pass_()
                tr.launch(launch, [r])
                tr.kernel(r, c, name)
                if c == 0 and (r, launch) != self.skip_clean:  # next_clean: the other half, for the next launch
                    tr.write(r, c, "recv_signal", (1 - phase) * NE, NE * 4, 0)
                step = self.dispatch(r, c, g) if phase == 0 else self.combine(r, c, g)
                if not (yield from step):
                    return  # the rank died mid-dispatch
                tr.kernel(r, c, name, False)
                yield RAN

    def dispatch(self, s, c, g):
        tr = self.tr
        for e in range(c, NE, LC):
            d, le = divmod(e, LL_E)
            n = tokens(g, s, e)
            if n:
                tr.put(s, c, d, "recv_x", (le * LP + s) * CAP * H, n * H * 4, engine="ibgda")
            if (g, s) == self.stop:
                return False
            v = n if (g, s) == self.raw else -n - 1
            tr.amo(s, c, d, "recv_signal", le * LP + s, v, engine="ibgda")  # same queue pair: after the rows
            yield RAN
        tr.quiet(s, c, "ibgda")
        for le in range(c, LL_E, LC):
            for src in range(LP):
                yield from wait(tr, s, c, "recv_signal", le * LP + src, "ne", 0)
                self.taken[(g, s, le, src)] = max(-tr.read(s, "recv_signal", le * LP + src) - 1, 0)
        return True

    def combine(self, r, c, g):
        tr = self.tr
        for le in range(c, LL_E, LC):
            e = r * LL_E + le
            for src in range(LP):
                n = min(self.taken.get((g, r, le, src), 0), CAP)
                if n:
                    tr.put(r, c, src, "combine_x", e * CAP * H, n * H * 4, engine="ibgda")
                tr.amo(r, c, src, "recv_signal", NE + e, 1, engine="ibgda")
                yield RAN
        tr.quiet(r, c, "ibgda")
        for e in range(c, NE, LC):
            yield from wait(tr, r, c, "recv_signal", NE + e, "ne", 0)
        yield from self.grid[(r, g)].pass_()
        return True


@case
def deepep_ll_clean():
    """DeepEP low-latency, two clean rounds (4 launches): IBGDA rows then the count amo on one
    queue pair with no quiet between, parity halves cleaned one launch ahead; bare manifest."""
    return LowLatency(2).run(), clean("two clean rounds of the low-latency dispatch + combine")


@case
def deepep_ll_parity_not_cleaned():
    """Rank 1's combine (launch 1) skips next_clean of half 0: its dispatch of launch 2 polls counts
    that still hold launch 0's, passes at once and takes rows that have not landed."""
    return LowLatency(2, skip_clean=(1, 1)).run(), roots([("MT205", 1, None)], "one root: rank 1's count "
                                                        "words entered launch 2 uncleaned")


@case
def deepep_ll_count_raw():
    """Rank 2 adds its counts raw: its 0 to expert 1 reads as "not yet" and its receiver hangs;
    its other counts decode to no rows."""
    return LowLatency(1, raw=(0, 2)).run(), roots([("MT106", 2, None)], "one root: the raw counts of rank 2")


@case
def deepep_ll_rank_stops():
    """Rank 0 dies after the rows of its first expert, before any count: every receiver polls a
    count from rank 0 forever."""
    return LowLatency(1, stop=(0, 0)).run(), roots([("MT103", 0, None)], "one root: rank 0 stopped "
                                                  "mid-dispatch; the count waits on it are symptoms")
