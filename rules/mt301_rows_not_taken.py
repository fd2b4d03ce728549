"""MT301: a receiver took fewer rows than the sender announced."""

from __future__ import annotations

import numpy as np

from ingest.contract import Kind

from .analysis import Producers, Stage
from .analysis import codes as C
from .analysis.groups import group_columns
from .base import Confidence, Family, Rule, Severity


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
        totals = np.bincount(g_re, weights=lost).astype(np.int64)
        # Groups in row order of their first member; rows in a group by loss, largest first.
        order = np.lexsort((rows, -lost, g))
        parts = np.split(order, np.flatnonzero(np.diff(g[order])) + 1)
        for gid in g[np.sort(np.unique(g, return_index=True)[1])]:
            members = parts[int(gid)]
            rr = rows[members]
            first = int(rr[0])
            d = trace.describe(first)
            total = int(lost[members].sum())
            srcs = sorted({int(x) for x in trace["src_rank"][rr]})
            caps = {int(x) for x in trace["capacity"][rr] if x != C.NULL32}
            extra = {"rank": d["rank"], "local_expert": d["local_expert"], "launch": d["launch"], "lost": total,
                     "requested": int(req[members].sum()), "delivered": int(got[members].sum()),
                     "capacity": min(caps) if caps else None, "src_ranks": srcs,
                     "lost_total": int(totals[g_re[members[0]]])}
            msg = (f"rank {d['rank']} launch {d['launch']} local expert {d['local_expert']}: {total} rows not "
                   f"taken ({extra['delivered']} of {extra['requested']} requested from source ranks "
                   f"{', '.join(map(str, srcs))}, capacity {extra['capacity']}); {extra['lost_total']} rows lost "
                   f"by this expert over the trace")
            # The requested count came from a count word that entered the launch uncleaned (MT205):
            # it is last launches' count plus this one's, not rows anybody sent.
            kept = [k for k in ctx.stage(Producers).kept_counts().values()
                    if int(trace["rank"][k.wait]) == d["rank"] and k.launch == d["launch"]]
            causes = ((("MT205", (d["rank"], int(trace["core"][kept[0].wait]), int(trace["seq"][kept[0].wait]))),)
                      if kept else ())
            if causes:
                msg += "; the count it read was kept from an earlier launch (MT205)"
            yield self.hit(msg, rows=tuple(("truncated deliver", int(r)) for r in rr), caused_by=causes,
                           key=(d["rank"], d["core"], d["seq"]), confidence=Confidence.CERTAIN, extra=extra)
