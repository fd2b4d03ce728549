"""Stale counts and flags behind a hang: the stale-flag facts a stuck wait's explanation cites.

What was never reset and which waits passed on a leftover are facts of the
word table (``_unreset``, ``_stale``), decided once per view; a hang cites them by the keys
the stale-flag rules give their findings (MT202 per unreset group, MT201 per
stale wait_end), so the graph reads no rule's hits and no finding's display.

``stale_waits`` is whole-array numpy over the completed waits of one
(rank, launch): a wait passed on a leftover when the last launch that wrote
its slot before this one left the slot off its reset value (MT202 says so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ingest.contract import Kind, Outcome

from . import _stale
from ._cache import cached
from ._unreset import offsets, unreset_index
from .stages import Stage

if TYPE_CHECKING:  # pragma: no cover - the builder imports these modules
    from ._waitfor_build import Builder


def _by_owner(trace) -> dict[int, list[tuple]]:
    """``unreset_index``'s entries by owner rank, (region, launch, offsets) in its order."""
    def build():
        out: dict[int, list[tuple]] = {}
        for (o, reg, L), (_, group) in unreset_index(trace).items():
            out.setdefault(o, []).append((reg, L, group))
        return out
    return cached(trace, "not_reset_by_owner", build, Stage.WORD_TABLE)


def _completed_waits(t, rank: int, launch: int) -> tuple[np.ndarray, np.ndarray]:
    """(wait_end rows, their wait_begin rows) of (rank, launch) that did not time out, row order.

    Paired once for the whole view and sliced per (rank, launch): a mask of the
    whole trace per stuck (rank, launch) would cost stuck cores x rows.
    """
    def build():
        kind = t["kind"]
        ends = np.flatnonzero((kind == Kind.WAIT_END) & (t["outcome"] != int(Outcome.TIMEOUT)))
        begins = np.flatnonzero(kind == Kind.WAIT_BEGIN)
        if not len(ends) or not len(begins):
            e = np.zeros(0, np.int64)
            return np.zeros((2, 0), np.int64), e, e
        j = np.searchsorted(begins, ends) - 1
        bg = begins[np.maximum(j, 0)]
        rank = t["rank"]
        ok = (j >= 0) & (rank[bg] == rank[ends]) & (t["core"][bg] == t["core"][ends])
        ends, bg = ends[ok], bg[ok]
        order = np.lexsort((t["launch"][ends], rank[ends]))  # stable: row order within a pair
        return np.stack((rank[ends[order]], t["launch"][ends[order]])).astype(np.int64), ends[order], bg[order]
    pairs, ends, bg = cached(t, "completed_waits", build, Stage.WAIT_FOR)
    lo = np.searchsorted(pairs[0], rank)
    hi = np.searchsorted(pairs[0], rank, "right")
    lo, hi = lo + np.searchsorted(pairs[1, lo:hi], launch), lo + np.searchsorted(pairs[1, lo:hi], launch, "right")
    return ends[lo:hi], bg[lo:hi]


def stale_waits(b: Builder, rank: int, launch: int, limit: int = 4) -> list[tuple]:
    """((code, key), text) for completed waits of (rank, launch) that passed on an unreset slot.

    The cause cited is the MT202 hit of the unreset slot (and the MT201 hit of
    the wait_end where that rule could order it).
    """
    t, tb = b.trace, b.tables
    table = unreset_index(t)
    mine = _by_owner(t).get(rank)
    if launch == 0 or not mine:
        return []
    ends, bg = _completed_waits(t, rank, launch)
    if not len(ends):
        return []
    region = t["region"][bg].astype(np.int64)
    ok = region >= 0
    ends, bg, region = ends[ok], bg[ok], region[ok]
    if not len(ends):
        return []
    slot = t["offset"][bg].astype(np.int64) // tb.sw[region]
    skey = tb.skey(rank, region, slot)
    # The last launch before this one that wrote the slot: the value the wait may have seen.
    lw = tb.last_launch_before(skey, launch)
    has = lw >= 0
    # The slots of this rank's words left unreset, per (region, launch).
    nl = tb.nlaunch
    slots = np.concatenate([(reg * nl + L) * tb.slots_per_rank + offsets(t, g) // int(tb.sw[reg])
                            for reg, L, g in mine])
    rl = region * nl + lw
    hit = has & np.isin(rl * tb.slots_per_rank + slot, slots)
    out = []
    stale_ends = _stale.stale_waits(t).ends  # ascending
    for i in np.flatnonzero(hit)[:limit].tolist():
        e, reg, L = int(ends[i]), int(region[i]), int(lw[i])
        key202 = table[(rank, reg, L)][0]
        ekey = b.key_of_row(e)
        name = t.manifest.regions[reg].name
        text = (f"rank {rank} core {ekey[1]}'s earlier wait on {name}[{int(slot[i])}] ended on a slot "
                f"never reset to {t.manifest.regions[reg].reset} after launch {L}: a stale count or flag")
        out.append((("MT202", key202), text))
        at = int(np.searchsorted(stale_ends, e))
        if at < len(stale_ends) and stale_ends[at] == e:  # MT201's finding on this wait_end
            out.append((("MT201", ekey), text))
    return out


def aliased_routes(b: Builder, p: int, launch: int, limit: int = 8, owner: int | None = None) -> list[tuple]:
    """(MT501, key, text, row) of the invalid-expert routes sent to rank p in ``launch``.

    A row whose expert is out of range still lands on a rank (a negative id
    aliases into the neighbouring segment), which then writes its combine
    slots one off: every slot it skips or writes twice traces back to it.
    A route that does not record its ``dst_rank`` may have gone to any rank,
    so every such invalid route of the launch is a candidate (the text says so).
    """
    t = b.trace
    bad = b.invalid_routes()
    dst = b.dst_rank[bad].astype(np.int64)
    bad = bad[((dst == p) | (dst == t.null("dst_rank"))) & (t["launch"][bad] == launch)]
    def sent(r: int) -> str:
        return "sent it" if int(b.dst_rank[r]) == p else "may have sent it (the route names no dst_rank)"

    return [("MT501", b.key_of_row(r),
             f"rank {int(t['rank'][r])} {sent(r)} route token {int(t['token'][r])} topk {int(t['topk'][r])} "
             f"with expert {int(b.expert[r])}, {b.outside}, which shifts the slots it writes", r)
            for r in bad[:limit].tolist()]
