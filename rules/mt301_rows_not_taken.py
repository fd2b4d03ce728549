"""MT301: a receiver took fewer rows than the sender announced."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Kind

from . import _hits as H
from .analysis import Producers, Stage
from .analysis import codes as C
from .analysis.groups import group_columns
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


class RowsNotTaken(Rule):
    """Rows dropped at the receiver: `deliver.delivered < requested`.

    What it does
        Selects the deliver events that took fewer rows than requested and
        groups them by (receiving rank, local expert, launch): one hit per
        group, with the rows lost summed over its source ranks. The hit's
        `extra` carries `lost`, `requested`, `delivered`, `capacity`,
        `src_ranks`, and `lost_total`, the rows that (rank, local expert)
        lost over all launches.

    Why it matters
        A receive buffer that clamps instead of failing (`if (rowStart + rows
        > maxOutputSize) rows = maxOutputSize - rowStart`) drops tokens
        silently: the model's output degrades, or the combine waits forever
        for rows that were never computed.

    Example
        deliver local_expert=1 src_rank=0 requested=40 delivered=32 capacity=32
        -- 8 rows lost: size the buffer for the worst case or flow-control it.

    Evidence
        The deliver events of the group, first the one that lost most.
    """

    code = "MT301"
    name = "rows-not-taken"
    family = Family.CAPACITY_TRUNCATION
    cites = ("MT205",)  # a count kept from an earlier launch asks for rows nobody sent
    severity = Severity.ERROR
    summary = "Receiver took fewer rows than announced (deliver.delivered < requested)"

    requires = (Stage.PRODUCERS,)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        kind = trace["kind"]
        # The delivers first, then their fields: no int64 copies of the whole trace.
        rows = np.flatnonzero(kind == int(Kind.DELIVER))
        req = trace["requested"][rows].astype(np.int64)
        got = trace["delivered"][rows].astype(np.int64)
        short = (got < req) & (got != C.NULL32)
        rows, req, got = rows[short], req[short], got[short]  # indexed like rows from here on
        if not len(rows):
            return
        rank = trace["rank"][rows].astype(np.int64)
        le = trace["local_expert"][rows].astype(np.int64)
        launch = trace["launch"][rows].astype(np.int64)
        lost = req - got
        g = group_columns((rank, le, launch)).inverse
        g_re = group_columns((rank, le)).inverse
        totals = _summed(g_re, lost)
        ng = int(g.max()) + 1
        # Groups in row order of their first member; rows in a group by loss, largest first.
        gids = g[np.sort(np.unique(g, return_index=True)[1])]
        order = np.lexsort((rows, -lost, g))
        size = np.bincount(g, minlength=ng)
        start = np.cumsum(size) - size  # of each group in order
        place = np.arange(len(order)) - start[g[order]]
        members = np.full((ng, int(size.max())), -1, np.int64)
        members[g[order], place] = rows[order]
        members = members[gids]
        first = members[:, 0]
        lead = order[start[gids]]  # each group's first member, indexed like rows
        cap = trace["capacity"][rows].astype(np.int64)
        least = np.full(ng, _NO_CAPACITY, np.int64)
        np.minimum.at(least, g[cap != C.NULL32], cap[cap != C.NULL32])
        kept = _kept_counts(trace, ctx.stage(Producers), rank[lead].tolist(), launch[lead].tolist())
        columns, tables = coded_columns((("src_ranks", _sources(g, trace["src_rank"][rows], gids)),
                                         ("caused_by", [(("MT205", k),) if k else () for k in kept])))
        sums = {name: _summed(g, v)[gids] for name, v in (("lost", lost), ("requested", req), ("delivered", got))}
        yield HitColumns(code=self.code, fields=NotTaken, render=_message, extra=_extra,
                         columns={"rank": rank[lead], "local_expert": le[lead], "launch": launch[lead], **sums,
                                  "capacity": least[gids], "lost_total": totals[g_re[lead]],
                                  "kept": np.array([k is not None for k in kept]), **columns},
                         tables=tables, nulls={"capacity": _NO_CAPACITY},
                         roles=("truncated deliver",) * members.shape[1], rows=members, key=H.row_keys(trace, first))


def _summed(group: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``values`` summed per ``group`` id, in int64 (bincount sums in float)."""
    out = np.zeros(int(group.max()) + 1, np.int64)
    np.add.at(out, group, values)
    return out


_NO_CAPACITY = np.iinfo(np.int64).max  # a group none of whose delivers names its capacity


def _sources(g: np.ndarray, src: np.ndarray, gids: np.ndarray) -> list[tuple]:
    """Per group (in ``gids`` order), its delivers' distinct source ranks, ascending."""
    pairs = group_columns((g, src.astype(np.int64))).values  # sorted by group, then source
    bounds = np.searchsorted(pairs[0], np.arange(int(g.max()) + 2))
    srcs = pairs[1].tolist()
    return [tuple(srcs[bounds[i]:bounds[i + 1]]) for i in gids.tolist()]


def _kept_counts(trace, producers: Producers, ranks: list, launches: list) -> list:
    """Per (rank, launch), the key of the first poll MT205 found satisfied by a count kept from an
    earlier launch (None: none): the requested count came from a word that entered the launch
    uncleaned, last launches' count plus this one's, not rows anybody sent."""
    first: dict = {}
    for k in producers.kept_counts().values():
        first.setdefault((int(trace["rank"][k.wait]), k.launch), k.wait)
    found = [first.get(at) for at in zip(ranks, launches)]
    return [None if w is None else (int(trace["rank"][w]), int(trace["core"][w]), int(trace["seq"][w]))
            for w in found]


class NotTaken(NamedTuple):
    """The delivers of one (rank, local expert, launch) that took fewer rows than requested."""

    rank: int
    local_expert: int
    launch: int
    lost: int  # rows not taken, summed over the group
    requested: int
    delivered: int
    capacity: int | None  # the least capacity its delivers name (None: none names one)
    lost_total: int  # rows this (rank, local expert) lost over the trace
    kept: bool  # the count it read was kept from an earlier launch (MT205)
    src_ranks: tuple


def _message(f: NotTaken) -> str:
    return (f"rank {f.rank} launch {f.launch} local expert {f.local_expert}: {f.lost} rows not taken "
            f"({f.delivered} of {f.requested} requested from source ranks {', '.join(map(str, f.src_ranks))}, "
            f"capacity {f.capacity}); {f.lost_total} rows lost by this expert over the trace"
            + ("; the count it read was kept from an earlier launch (MT205)" if f.kept else ""))


def _extra(f: NotTaken) -> dict:
    return {"rank": f.rank, "local_expert": f.local_expert, "launch": f.launch, "lost": f.lost,
            "requested": f.requested, "delivered": f.delivered, "capacity": f.capacity,
            "src_ranks": list(f.src_ranks), "lost_total": f.lost_total}
