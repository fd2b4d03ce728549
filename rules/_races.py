"""The body MT601 and MT602 share: reads with a write no barrier, quiet or flag orders before them.

The pairs come from the word table's race pass (``WordTable.races``); this
module only turns them into hits, one per (rank, core, launch, read site).
"""

from __future__ import annotations

import numpy as np

from . import _hits as H
from .analysis import WordTable
from .base import Confidence


def race_hits(rule, trace, words: WordTable, want_before: bool, describe):
    """Hits of one race rule: reads with a concurrent write and (MT602) or without (MT601) a
    write ordered before them; one per (rank, core, launch, read site), flag edges checked."""
    reads, conc, nconc, before = words.races()
    sel = (before >= 0) if want_before else (before < 0)
    reads, conc, nconc, before = reads[sel], conc[sel], nconc[sel], before[sel]
    for g in H.groups(np.arange(len(reads)), trace["rank"][reads], trace["core"][reads], trace["launch"][reads],
                      trace["site"][reads]):
        edge = "ordered"
        for i in g:  # a flag orders one writer's words: the first read of the group none orders
            i = int(i)
            r, w = int(reads[i]), int(conc[i])
            done = int(words.done_of(np.array([w]), False)[0])
            edge = words.flag_edge(done, r) if done >= 0 else None
            if edge != "ordered":
                break
        if edge == "ordered":
            continue
        d, dw = trace.describe(r), trace.describe(w)
        msg = describe(r, w, int(before[i]), d, dw)
        more = int(nconc[g].sum())
        if more > 1:
            msg += f"; {more} unordered writes against {len(g)} reads from this site"
        conf = Confidence.CERTAIN
        if edge == "unknown":
            conf = Confidence.INFERRED
            msg += (f" (the reader waited on a word rank {dw['rank']} sets, but the trace cannot tell whether it "
                    f"saw a value set after this write)")
        kw = {"message": msg, "confidence": conf}
        # A barrier or the flag that orders the pair may sit in events a ring wrap or a missing
        # dump took: then the finding is a note that says so.
        gap = H.launch_gap(trace, {d["rank"], dw["rank"]}, d["launch"])
        if gap is None and trace.lost_at(((d["rank"], None), (dw["rank"], None))):
            lost = sorted((rc, k) for rc, k in trace.lost_by_core.items() if rc[0] in (d["rank"], dw["rank"]))
            gap = ", ".join(f"rank {r} core {c} lost {k} events" for (r, c), k in lost) or "a dump is missing"
        if gap:
            kw = H.weakened(msg, gap)
        rows = (("read", r), ("unordered write", w))
        if int(before[i]) >= 0:
            rows += (("write ordered before the read", int(before[i])),)
        yield rule.hit(rows=rows, key=(d["rank"], d["core"], d["seq"]),
                       extra={"reads": int(len(g)), "writer_rank": dw["rank"]}, **kw)
