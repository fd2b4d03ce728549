"""Who should have released a stuck wait, and what they did instead.

The region's ``index`` (``ingest.manifest.SLOT_INDEX``) maps a slot to its
producer without knowing the kernel; the routes of the launch resolve
token_topk slots; earlier launches' writers stand in where a region has no
index.  Each producer then gets one ``Verdict``: what the trace says it did.
A verdict either points outside the wait-for graph (``causes``: hits of
other rules, cited as (code, (rank, core, seq))) or at other stuck nodes
(``edges``), or at nothing (the wait itself is then the root cause).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ingest.contract import Cmp, Op

from ._counts import not_encoded
from ._rings import (
    learned_writer,
    ring_producer,
    ring_role,
    withheld_heads,
    wrong_polls,
)
from ._scan import IN_BARRIER, IN_WAIT, STOPPED

if TYPE_CHECKING:  # pragma: no cover - the builder imports these modules
    from ._waitfor_build import Builder


@dataclass(frozen=True)
class Verdict:
    rank: int | None  # the expected producer; None where no rank can write the slot
    via: str  # how we know it should: index | route | history
    status: str
    text: str
    causes: tuple = ()
    edges: tuple = ()  # ids of the stuck nodes this producer is itself stuck in
    rows: tuple = ()
    gap: str | None = None  # the missing part of the trace that weakens this verdict
    blocker: bool = True  # False: this producer did its part

    def to_json(self) -> dict:
        return {"rank": self.rank, "via": self.via, "status": self.status, "text": self.text,
                "causes": [list(c[:1]) + [list(c[1])] for c in self.causes], "gap": self.gap}


_CMP = {Cmp.EQ: np.equal, Cmp.NE: np.not_equal, Cmp.GT: np.greater,
        Cmp.GE: np.greater_equal, Cmp.LT: np.less, Cmp.LE: np.less_equal}


def satisfies(cmp: int, value: int, target: int) -> bool:
    return bool(_CMP[Cmp(cmp)](value, target))


def expected(b: Builder, w) -> tuple[list[tuple[int, str, str]], list[Verdict]]:
    """(rank, via, why) of each expected producer, plus verdicts that need no producer."""
    region = b.trace.manifest.regions[w.region]
    hist = b.history_writers(w)
    if region.index == "token_topk" and b.topk and b.local_experts:
        token, topk = divmod(w.slot, b.topk)
        r = b.tables.route(w.rank, w.launch, token, topk)
        if r < 0:
            if hist:
                return [(p, "history", f"wrote it in launch {lw}") for p, lw in hist], []
            gap = b.gap_of_core(w.rank, w.core)
            return [], [Verdict(None, "route", "unknown",
                                f"no route event for token {token} topk {topk} on rank {w.rank} "
                                f"in launch {w.launch}, so its producer is unknown", gap=gap)]
        e = int(b.expert[r])
        key = b.key_of_row(r)
        if not b.expert_valid(np.int64(e)):
            if b.sentinel is not None and e == b.sentinel:
                return [], [Verdict(None, "route", "sentinel-route",
                                    f"route token {token} topk {topk} carries the sentinel expert {e}: "
                                    f"no rank sends it, yet the wait is not guarded", rows=(("route", r),))]
            return [], [Verdict(None, "route", "invalid-route",
                                f"route token {token} topk {topk} on rank {w.rank} has expert {e}, "
                                f"{b.outside}: no rank owns it, so nobody will ever write this slot",
                                causes=(("MT501", key),), rows=(("dropped route", r),))]
        p = int(b.slot_producers(w.region, w.rank, w.slot, w.launch))
        if p < 0:  # an id below num_experts that the manifest's ranks x local experts do not reach
            return [], [Verdict(None, "route", "invalid-route",
                                f"route token {token} topk {topk} on rank {w.rank} has expert {e}, past the "
                                f"{b.ranks} ranks x {b.local_experts} local experts: no rank owns it",
                                rows=(("route", r),))]
        return [(p, "route", f"owns expert {e} of route token {token} topk {topk}")], []
    if region.index is not None and b.ranks:
        p = int(b.slot_producers(w.region, w.rank, w.slot, w.launch))
        if p >= 0:
            return [(p, "index", f"writes {region.name}[{w.slot}] by its {region.index} index")], []
    if not hist:
        raw = [int(b.tables.w_rank[i]) for i in b.tables.writes_to(w.skey, w.launch)
               if not_encoded(b.trace, int(b.tables.w_row[i]))]
        if raw:  # a count stored raw into this very word (MT106): its writer is the producer
            return [(raw[-1], "write", f"stored {region.name}[{w.slot}] in launch {w.launch}")], []
    role = ring_role(region)
    if role is not None and not hist:
        p = ring_producer(b, w)
        if p >= 0:
            return [(p, "ring", f"advances the ring {role} {region.name}[{w.slot}] on the other ranks")], []
    if region.index is None and not hist and w.cmp == Cmp.NE and w.target == 0:
        # A "0 = not yet" count (DeepEP's -n-1): its senders' slots are laid out group*P + src.
        p = learned_writer(b, w)
        if p >= 0:
            return [(p, "layout", f"writes slot {w.slot} mod {b.ranks} of {region.name} (this launch's "
                     f"writes all go to slot group*ranks + writer)")], []
    return [(p, "history", f"wrote it in launch {lw}") for p, lw in hist], []


def classify(b: Builder, w, p: int, via: str, why: str) -> Verdict:
    """What producer ``p`` did in the wait's launch instead of releasing it."""
    t = b.trace
    name = t.manifest.regions[w.region].name
    who = f"rank {p} ({why})"
    wrong = wrong_polls(t).get(w.row)
    if wrong is not None:  # it polls another channel's tail than the ring it drains (MT108)
        return Verdict(p, via, "wrong-channel", f"the wait polls channel {', '.join(map(str, wrong.polled))}'s "
                       f"tail, but its core drains channel {', '.join(map(str, wrong.returned))}",
                       causes=(("MT108", b.key_of_row(wrong.first)),))
    kept = withheld_heads(t).get(w.row)
    if kept is not None:  # its consumer took the rows and kept the head (MT107)
        return Verdict(p, via, "head-withheld", f"{who} saw the tail reach {kept.seen} and never returned the "
                       f"head to {kept.need}", causes=(("MT107", b.key_of_row(kept.consumer)),),
                       rows=(("consumer saw the tail", kept.consumer),))
    if p in b.missing:
        return Verdict(p, via, "missing", f"{who}: its dump is missing",
                       causes=(("MT103", b.stop_key(p)),), gap=f"no events from rank {p}")
    gap = b.gap_of_rank(p)
    tb = b.tables
    ws = tb.writes_to(w.skey, w.launch)
    ws = ws[tb.w_rank[ws] == p]
    region = t.manifest.regions[w.region]
    if region.monotonic and w.cmp == Cmp.EQ:
        # A generation written past the target, in this launch or a later one, never equals it
        # again: that (MT204 on this wait) explains the wait, whatever p wrote in the launch.
        mine = tb.history(w.skey, tb.nlaunch)
        mine = mine[(tb.w_rank[mine] == p) & (tb.w_value[mine] != t.null("value"))]
        ahead = mine[tb.w_value[mine] > w.target]
        if len(ahead):
            v = int(tb.w_value[ahead].max())
            return Verdict(p, via, "generation-ahead",
                           f"{who} is already at generation {v}, past the target {w.target}: the wait "
                           f"compares with == where >= was needed", causes=(("MT204", w.key),),
                           rows=(("write beyond target", int(tb.w_row[ahead[-1]])),))
    if len(ws):
        rows = tuple(("producer write", int(tb.w_row[i])) for i in ws[-4:])
        raw = [i for i in ws.tolist() if not_encoded(t, int(tb.w_row[i]))]
        if raw:  # a count stored raw where it is encoded -n-1 (MT106): its 0 reads as "not yet"
            v = int(tb.w_value[raw[-1]])
            return Verdict(p, via, "raw-count", f"{who} stored the count {v} raw, not encoded -n-1",
                           causes=tuple(("MT106", b.key_of_row(int(tb.w_row[i]))) for i in raw[-1:]), rows=rows,
                           gap=gap)
        if (tb.w_op[ws] == Op.ADD).any():
            return Verdict(p, via, "contributed", f"{who} added its share", rows=rows, blocker=False)
        v = int(tb.w_value[ws[-1]])
        if v == t.null("value") or satisfies(w.cmp, v, w.target):
            shown = "a value" if v == t.null("value") else f"{v}"
            return Verdict(p, via, "wrote-unseen",
                           f"{who} wrote {shown} into {name}[{w.slot}], which should release it, yet the "
                           f"wait never saw it (not delivered: no completing quiet?)", rows=rows, gap=gap)
        stuck = _stuck_in(b, w, p)
        if stuck:
            # An old value from a producer that is itself stuck is no wrong value: the write
            # this wait needs comes after the wait the producer sits in, so follow the edge.
            return Verdict(p, via, "stuck", f"{who} wrote {v} so far (not {Cmp(w.cmp).wire} {w.target}) and "
                           f"is itself stuck: " + "; ".join(b.node_text(n) for n in stuck[:2]),
                           edges=tuple(stuck), rows=rows, gap=gap)
        if b.stopped_in(p, w.launch):  # it died before the write this wait needs
            return Verdict(p, via, "stopped", f"{who} wrote {v} so far (not {Cmp(w.cmp).wire} {w.target}) and "
                           f"its trace ends mid-kernel in launch {w.launch}", causes=(("MT103", b.stop_key(p)),),
                           rows=rows, gap=gap)
        # A count stored raw where the protocol encodes it (-n-1, 0 = not yet): MT106's hit on it.
        raw = tuple(("MT106", b.key_of_row(int(tb.w_row[i]))) for i in ws[-1:] if not_encoded(b.trace, int(tb.w_row[i])))
        return Verdict(p, via, "wrote-other-value",
                       f"{who} wrote {v}, which does not satisfy {Cmp(w.cmp).wire} {w.target} "
                       f"(stale or wrong value)", causes=raw, rows=rows, gap=gap)
    mis = b.misdirected(w, p)
    if mis:
        where = ", ".join(b.write_text(i) for i in mis[:3])
        return Verdict(p, via, "wrote-elsewhere", f"{who} never wrote {name}[{w.slot}] of rank {w.rank}; "
                       f"it wrote {where} instead", causes=tuple(("MT105", b.key_of_row(int(tb.w_row[i])))
                                                                 for i in mis),
                       rows=tuple(("misdirected write", int(tb.w_row[i])) for i in mis[:4]))
    return _state(b, w, p, via, who, gap)


def _state(b: Builder, w, p: int, via: str, who: str, gap: str | None) -> Verdict:
    raw = b.raw_count_candidates(w, p)
    if raw:  # p decoded a raw count from the waiter's rank: it took no rows, so owes nothing back
        return Verdict(p, via, "raw-count", f"{who} never wrote {t_name(b, w)}[{w.slot}] of rank {w.rank}: "
                       + "; ".join(txt for _, txt in raw[:2]), causes=tuple(c for c, _ in raw), gap=gap)
    segs = b.cores_for(p, w)
    last = b.seg_last_launch[segs]
    done = b.wrote_others(p, w)
    # Every verdict below but stuck/stopped/not-started rests on p NOT having written the slot:
    # where p's launch is not whole, that write may be in the lost part of a ring.
    whole = b.trace.launch_intact(p, w.launch)
    # A ring index slot is its own queue: the other queues p advanced owe nothing to this one.
    if done and whole and ring_role(b.trace.manifest.regions[w.region]) is None:
        # p already wrote its share of this region to the waiter and moved on: the slot was
        # never due from it (the waiter counts more rows than p sent). Its later waits are no
        # edge back, or every stale-count hang would read as a deadlock.
        stale = b.stale_candidates(w) or b.stale_candidates(w, p)
        dropped = b.dropped_routes(w, p)
        stray = [] if stale or dropped else b.stray_writes(w, p)
        if stray:
            # p owed this slot and wrote one beside it that nobody waits on: the slot is off.
            name = t_name(b, w)
            where = ", ".join(b.write_text(i) for i in stray[:3])
            return Verdict(p, via, "wrote-elsewhere", f"{who} never wrote {name}[{w.slot}] of rank {w.rank}; it "
                           f"wrote {where}, which nobody waits on in launch {w.launch}, instead",
                           causes=tuple(("MT105", b.key_of_row(int(b.tables.w_row[i]))) for i in stray),
                           rows=tuple(("misdirected write", int(b.tables.w_row[i])) for i in stray[:4]), gap=gap)
        causes = tuple((d[0], d[1]) for d in dropped) + tuple(c for c, _ in stale)
        extra = "; ".join([d[2] for d in dropped[:2]] + [txt for _, txt in stale[:2]])
        return Verdict(p, via, "moved-on", f"{who} wrote {done} other slot(s) of {t_name(b, w)} to rank "
                       f"{w.rank} in launch {w.launch}, never this one" + (f": {extra}" if extra else ""),
                       causes=causes, gap=gap)
    now = segs[last == w.launch]
    edges = [n for n in _stuck_in(b, w, p, self_edge=True) if b.nodes[n].core in set(b.seg_core[segs].tolist())]
    stopped = [int(s) for s in now if b.seg_state[s] == STOPPED]
    timeouts = [n for n in b.timeouts_of(p, w.launch) if n not in edges]
    causes = (("MT103", b.stop_key(p)),) if stopped else ()
    if edges or stopped:
        texts = [b.node_text(n) for n in edges[:2]]
        if stopped:
            texts.append(f"its trace ends mid-kernel on core {int(b.seg_core[stopped[0]])}")
        status = "stuck" if edges else "stopped"
        return Verdict(p, via, status, f"{who} is {'itself stuck: ' if edges else 'dead: '}" + "; ".join(texts),
                       causes=causes, edges=tuple(edges + timeouts), gap=gap)
    if len(segs) == 0 or (last < w.launch).all():
        seen = int(last.max()) if len(segs) else -1
        return Verdict(p, via, "not-started", f"{who}: its trace ends after launch {seen}, before "
                       f"launch {w.launch} (rank stopped or its dump is cut)",
                       causes=(("MT103", b.stop_key(p)),), gap=gap)
    if not whole:
        return Verdict(p, via, "unknown", f"{who}: unknown: {gap or f'rank {p} lost events'}, so whether "
                       f"it wrote the slot in launch {w.launch} is not in the trace", gap=gap)
    if timeouts:
        return Verdict(p, via, "stuck", f"{who} finished launch {w.launch} without writing it after "
                       f"timing out: {b.node_text(timeouts[0])}", edges=tuple(timeouts), gap=gap)
    dropped = b.dropped_routes(w, p)
    if dropped:
        return Verdict(p, via, "dropped-route", f"{who} finished launch {w.launch} without writing it: "
                       + "; ".join(d[2] for d in dropped[:3]),
                       causes=tuple((d[0], d[1]) for d in dropped), rows=tuple(("dropped", d[3]) for d in dropped[:4]),
                       gap=gap)
    # The waiter's stale count (it expects rows nobody sends), else the producer's (it ran on
    # rows of the previous launch and never came to this slot).
    stale = b.stale_candidates(w) or b.stale_candidates(w, p)
    return Verdict(p, via, "finished-without-writing",
                   f"{who} finished launch {w.launch} without ever writing it"
                   + "".join(f"; {txt}" for _, txt in stale[:2]),
                   causes=tuple(c for c, _ in stale), gap=gap)


def _stuck_in(b: Builder, w, p: int, self_edge: bool = False) -> list[int]:
    """Stuck nodes of rank p in w's launch or before (w itself only with ``self_edge``: a core
    that waits for its own write is a deadlock of one)."""
    segs = np.flatnonzero(b.seg_rank == p)
    # A core stuck in an earlier launch never reaches this one: it is stuck for this wait too.
    now = segs[b.seg_last_launch[segs] <= w.launch]
    out = [b.node_at_row.get(int(b.seg_open[s])) for s in now if b.seg_state[s] in (IN_WAIT, IN_BARRIER)]
    return [n for n in out if n is not None and (self_edge or n != w.id)]


def t_name(b: Builder, w) -> str:
    return b.trace.manifest.regions[w.region].name
