"""Ring-buffer indices, told from the manifest's own words: which regions are a queue's head or tail.

DeepEP-style rings (kernels/deepep_normal.py, docs/instrumenting-deepep.md) keep, per queue, a
tail the producer advances after its rows and a head the consumer returns after draining them;
each side waits on the other's index with a threshold (>= or >), and only when it must (a sender
with free space never waits for the head). A kernel names these words in its manifest; the
rules read that name (a region whose name has the word ``head`` or ``tail``, role counter or
flag), never a kernel's layout, so a rule's message can say "the channel's head" in the
protocol's own words, and a rule that expects every written slot to be waited on (MT105's wrong
peer) knows a ring index is not such a slot.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ingest.contract import Cmp, Role

from . import codes as C
from ._cache import cached
from .stages import Stage

if TYPE_CHECKING:  # pragma: no cover - the builder imports these modules
    from ._waitfor_build import Builder

HEAD, TAIL = "head", "tail"
_WORD = re.compile(r"(?:^|[^a-z])(head|tail)(?:[^a-z]|$)")
THRESHOLD_CMPS = (int(Cmp.GE), int(Cmp.GT))


def ring_role(region) -> str | None:
    """``"head"`` / ``"tail"`` where the region's name says it is a ring index, else None."""
    if region.role not in (Role.COUNTER, Role.FLAG):
        return None
    m = _WORD.search(region.name.lower())
    return m.group(1) if m else None


def ring_regions(manifest) -> dict[int, str]:
    """region id -> "head" / "tail" for every ring index the manifest names."""
    out = {}
    for r in manifest.regions:
        role = ring_role(r)
        if role is not None:
            out[r.id] = role
    return out


def _heads_and_tails(manifest) -> tuple[list[int], list[int]]:
    """The region ids of the ring heads and of the ring tails."""
    rings = ring_regions(manifest)
    return [r for r, role in rings.items() if role == HEAD], [r for r, role in rings.items() if role == TAIL]


def channel_words(region, slot: int, ranks: int) -> str:
    """A ring index slot in the protocol's words: queue ``slot // ranks`` (the channel) of peer ``slot % ranks``."""
    role = ring_role(region)
    if role is None:
        return f"{region.name}[{slot}]"
    return f"the {role} of channel {slot // ranks}'s queue with rank {slot % ranks} ({region.name}[{slot}])"


def ring_producer(b: Builder, w) -> int:
    """The rank that advances ring index w's slot, learned from the trace where no index says it:
    the one remote rank that writes this slot of the region on the other ranks (a queue's tail is
    the sender's, its head the receiver's, whatever the slot formula). -1 when they disagree."""
    if ring_role(b.trace.manifest.regions[w.region]) == HEAD:
        p = _filled_peer(b.trace, w.row)
        if p >= 0:  # a sender waits for the head of the queue it fills: that queue's consumer returns it
            return p
    tb = b.tables
    sel = (tb.w_region == w.region) & (tb.w_slot == w.slot) & _one_sided(b)
    writers = np.unique(tb.w_rank[sel])
    if len(writers) == 1:
        return int(writers[0])
    if len(writers):
        return -1
    return learned_writer(b, w)


def learned_writer(b: Builder, w) -> int:
    """Where every remote write of w's region in w's launch went to a slot ``group*P + writer``
    (a ring's channel*P + peer, a count's local_expert*P + src), the writer of w's slot is slot
    mod P, though it never wrote it (it died, or took another path); -1 where the launch's writes
    do not show that layout."""
    tb = b.tables
    ranks = int(b.trace.manifest.ranks)
    rem = (tb.w_region == w.region) & _one_sided(b) & (tb.w_launch == w.launch)
    slots, who = tb.w_slot[rem], tb.w_rank[rem]
    if len(np.unique(slots)) >= 2 and (who == slots % ranks).all():
        return int(w.slot % ranks)
    return -1


def _one_sided(b: Builder) -> np.ndarray:
    """Per write-table entry: a one-sided store (put, signal, amo; to a peer or to itself), not a
    local write (a clean or a reset of the kernel's own words)."""
    return b.trace["kind"][b.tables.w_row] != C.K_WRITE


@dataclass(frozen=True)
class Withheld:
    """A sender stuck waiting for free space whose consumer took the rows and kept the head."""

    wait: int  # the sender's stuck wait_begin on the head
    tail_write: int  # the sender's last tail write before it (the queue it fills)
    consumer: int  # the consumer's last wait_end on that tail (what it saw)
    head_write: int  # the consumer's last head write to the sender for that slot, or -1
    need: int  # the head value the sender waits for
    seen: int  # the tail the consumer saw
    returned: int | None  # the largest head it returned, None for none


def withheld_heads(trace) -> dict[int, Withheld]:
    """Stuck head waits (row -> Withheld) that the consumer's own trace explains: it saw a tail
    at or past the head the sender waits for, and returned no head that far."""
    return cached(trace, "withheld_heads", lambda: _withheld(trace), Stage.PRODUCERS)


def _withheld(trace) -> dict[int, Withheld]:
    heads, tails = _heads_and_tails(trace.manifest)
    if trace.n == 0 or not heads or not tails:
        return {}
    kind, region, seg = trace["kind"], trace["region"], trace.segments
    last = seg[1:] - 1  # the last event of every core: a wait_begin there never ended
    stuck = last[(kind[last] == C.K_WBEGIN) & C.one_of(region[last], heads)
                 & C.one_of(trace["cmp"][last], THRESHOLD_CMPS)]
    if not len(stuck):
        return {}
    rank, peer, offset, value, launch = trace["rank"], trace["peer"], trace["offset"], trace["value"], trace["launch"]
    remote = C.one_of(kind, (C.K_SIGNAL, C.K_AMO, C.K_PUT))
    tail_w = np.flatnonzero(remote & C.one_of(region, tails))
    ends = np.flatnonzero((kind == C.K_WEND) & C.one_of(region, tails))
    head_w = np.flatnonzero(remote & C.one_of(region, heads))
    starts = seg[:-1]
    out = {}
    for row in stuck.tolist():  # a loop over stuck waits, not events
        s, lc = int(rank[row]), int(launch[row])
        first = int(starts[np.searchsorted(starts, row, side="right") - 1])
        mine = tail_w[(tail_w >= first) & (tail_w < row)]
        if not len(mine):
            continue
        tw = int(mine[-1])
        d, q = int(peer[tw]), int(offset[tw])
        need = int(value[row]) + (1 if int(trace["cmp"][row]) == int(Cmp.GT) else 0)
        saw = ends[(rank[ends] == d) & (region[ends] == region[tw]) & (offset[ends] == q) & (launch[ends] == lc)]
        if not len(saw):
            continue
        obs = trace["observed"][saw]
        seen = int(obs.max())
        if seen < need:
            continue  # the consumer has not seen the rows that would free the space
        back = head_w[(rank[head_w] == d) & (peer[head_w] == s) & (region[head_w] == region[row])
                      & (offset[head_w] == offset[row]) & (launch[head_w] == lc)]
        vals = value[back]
        returned = int(vals.max()) if len(back) else None
        if returned is not None and returned >= need:
            continue  # it returned the head: that write was lost or overtaken, not withheld
        out[row] = Withheld(row, tw, int(saw[np.argmax(obs)]), int(back[-1]) if len(back) else -1,
                            need, seen, returned)
    return out


def _filled_peer(trace, row: int) -> int:
    """The peer of the last tail write of ``row``'s core before it (-1 for none)."""
    tails = [r for r, role in ring_regions(trace.manifest).items() if role == TAIL]
    starts = trace.segments[:-1]
    first = int(starts[np.searchsorted(starts, row, side="right") - 1])
    kind, region = trace["kind"][first:row], trace["region"][first:row]
    mine = np.flatnonzero(C.one_of(kind, (C.K_SIGNAL, C.K_AMO, C.K_PUT)) & C.one_of(region, tails))
    return int(trace["peer"][first + mine[-1]]) if len(mine) else -1


@dataclass(frozen=True)
class WrongPoll:
    """A consumer core that polls one channel's tails and returns another channel's heads."""

    first: int  # its first poll of a tail of the other channel (the hit's row)
    polled: tuple  # channels whose tails it polls
    returned: tuple  # channels whose heads it returns
    head_write: int  # one of its head writes


def wrong_polls(trace) -> dict[int, WrongPoll]:
    """Every tail poll (wait_begin row) of a consumer core whose polled channels and returned
    channels are disjoint -> that core's WrongPoll. A ring index slot is channel*P + peer
    (docs/instrumenting-deepep.md), so a slot's channel is slot // P."""
    return cached(trace, "wrong_polls", lambda: _wrong_polls(trace), Stage.PRODUCERS)


def _wrong_polls(trace) -> dict[int, WrongPoll]:
    heads, tails = _heads_and_tails(trace.manifest)
    if trace.n == 0 or not heads or not tails:
        return {}
    kind, region, offset = trace["kind"], trace["region"], trace["offset"]
    ranks = max(1, int(trace.manifest.ranks))
    polls = np.flatnonzero((kind == C.K_WBEGIN) & C.one_of(region, tails) & C.one_of(trace["cmp"], THRESHOLD_CMPS))
    backs = np.flatnonzero(C.one_of(kind, (C.K_SIGNAL, C.K_AMO, C.K_PUT)) & C.one_of(region, heads))
    if not len(polls) or not len(backs):
        return {}
    seg = trace.segments
    pseg = np.searchsorted(seg, polls, side="right") - 1
    bseg = np.searchsorted(seg, backs, side="right") - 1
    rank_of, core_of = trace["rank"][seg[:-1]], trace["core"][seg[:-1]]
    out = {}
    # A pair of (tail region, head region) per ring: the i-th tail with the i-th head, in manifest order.
    for t_reg, h_reg in zip(sorted(tails), sorted(heads)):
        pm, bm = region[polls] == t_reg, region[backs] == h_reg
        polled = {int(s): set((offset[polls[pm & (pseg == s)]] // ranks).tolist()) for s in np.unique(pseg[pm])}
        returned = {int(s): set((offset[backs[bm & (bseg == s)]] // ranks).tolist()) for s in np.unique(bseg[bm])}
        for s, pc in polled.items():  # a loop over consumer cores, not events
            bc = returned.get(s)
            if not bc:
                # Stuck before it returned a head: the same core of the other ranks (SPMD) says
                # which channel it drains, where they agree on one.
                like = [polled[o] for o in polled if o != s and core_of[o] == core_of[s] and rank_of[o] != rank_of[s]]
                if not like or any(x != like[0] for x in like):
                    continue
                bc = like[0]
            if pc & bc:
                continue
            p = polls[pm & (pseg == s)]
            b = backs[bm & (bseg == s)]
            w = WrongPoll(int(p[0]), tuple(sorted(pc)), tuple(sorted(bc)), int(b[0]) if len(b) else -1)
            for row in p.tolist():
                out[row] = w
    return out
