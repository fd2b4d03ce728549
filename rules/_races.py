"""The body MT601 and MT602 share: reads with a write no barrier, quiet or flag orders before them.

The pairs come from the word table's race pass (``WordTable.races``); this
module only turns them into typed hits (``Race``), one per (rank, core,
launch, read site), each rule rendering its own message from them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from .analysis import WordTable
from .base import Confidence
from .hit_columns import HitColumns, coded

ROLES = ("read", "unordered write", "write ordered before the read")


class Race(NamedTuple):
    """A read site's first read a write races with: what MT601's and MT602's messages are made of."""

    rank: int  # the read (a get from a peer)
    core: int
    launch: int
    peer: int
    region: str
    offset: int
    nbytes: int
    seq: int
    writer: str  # the unordered write, 'rank r core c seq s'
    writer_rank: int
    writer_kind: str
    writer_nbytes: int | None
    writer_offset: int | None
    before: str | None  # the write ordered before the read (MT602), as writer
    writes: int  # unordered writes against the site's reads
    reads: int
    unknown: bool  # a flag the reader waited on may order the pair: the trace cannot tell


def race_hits(rule, trace, words: WordTable, want_before: bool, render):
    """Hits of one race rule: reads with a concurrent write and (MT602) or without (MT601) a
    write ordered before them; one per (rank, core, launch, read site), flag edges checked."""
    reads, conc, nconc, before = words.races()
    sel = (before >= 0) if want_before else (before < 0)
    reads, conc, nconc, before = reads[sel], conc[sel], nconc[sel], before[sel]
    found: list[tuple] = []  # (read, write, write before or -1, writes, reads, edge) per hit
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
        if edge != "ordered":
            found.append((r, w, int(before[i]), int(nconc[g].sum()), len(g), edge))
    if not found:
        return []
    read, write, ordered, writes, count, edges = (np.array(c) for c in zip(*found))
    d = H.described(trace, read, ("rank", "core", "launch", "peer", "region", "offset", "nbytes", "seq"))
    dw = H.described(trace, write, ("rank", "core", "seq", "kind", "nbytes", "offset"))
    db = H.described(trace, np.maximum(ordered, 0), ("rank", "core", "seq"))
    unknown = (edges == "unknown").tolist()
    gaps = [_gap(trace, r, wr, L) for r, wr, L in zip(d["rank"], dw["rank"], d["launch"])]
    values = {name: d[name] for name in ("rank", "core", "launch", "peer", "region", "offset", "nbytes", "seq")}
    values |= {"writer": [_ev(*p) for p in zip(dw["rank"], dw["core"], dw["seq"])], "writer_rank": dw["rank"],
               "writer_kind": dw["kind"], "writer_nbytes": dw["nbytes"], "writer_offset": dw["offset"],
               "before": [_ev(*p) if b >= 0 else None for b, p in zip(ordered.tolist(), zip(db["rank"], db["core"],
                                                                                           db["seq"]))],
               "writes": writes.tolist(), "reads": count.tolist(), "unknown": unknown}
    columns, tables = {}, {}
    for name in Race._fields:
        columns[name], tables[name] = coded(values[name])
    # A barrier or the flag that orders the pair may sit in events a ring wrap or a missing dump
    # took: then the finding is a note that says so (the gap), and no longer an inferred one.
    columns["gap"], tables["gap"] = coded(gaps)
    columns["confidence"], tables["confidence"] = coded(
        Confidence.INFERRED if u and g is None else Confidence.CERTAIN for u, g in zip(unknown, gaps))
    rows = np.stack((read, write, ordered), axis=1).astype(np.int64)  # ordered: -1 where none
    key = H.row_keys(trace, read)
    return [HitColumns(code=rule.code, fields=Race, render=render, extra=_extra, columns=columns, tables=tables,
                       roles=ROLES, rows=rows, key=key)]


def more(f: Race, message: str) -> str:
    """A race's message with what only some races add: the site's count, the flag it cannot judge."""
    if f.writes > 1:
        message += f"; {f.writes} unordered writes against {f.reads} reads from this site"
    if f.unknown:
        message += (f" (the reader waited on a word rank {f.writer_rank} sets, but the trace cannot tell whether "
                    f"it saw a value set after this write)")
    return message


def _extra(f: Race) -> dict:
    return {"reads": f.reads, "writer_rank": f.writer_rank}


def _ev(rank: int, core: int, seq: int) -> str:
    return f"rank {rank} core {core} seq {seq}"  # H.ev's wording, from the columns already read


def _gap(trace, rank: int, writer_rank: int, launch: int) -> str | None:
    gap = H.launch_gap(trace, {rank, writer_rank}, launch)
    if gap is None and trace.lost_at(((rank, None), (writer_rank, None))):
        lost = sorted((rc, k) for rc, k in trace.lost_by_core.items() if rc[0] in (rank, writer_rank))
        gap = ", ".join(f"rank {r} core {c} lost {k} events" for (r, c), k in lost) or "a dump is missing"
    return gap
