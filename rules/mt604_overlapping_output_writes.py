"""MT604: two cores of a rank overwrite the same output element in one launch (was MT406).

A write-write race: the two writes have no happens-before edge (no barrier of the
rank between them, no atomic mode that makes them commute), which is what the
data-race family states; it was MT406 in missing-drain, though no drain fixes it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Role

from . import _hits as H
from ._jit import kernel
from .analysis import CoreScan, HappensBefore, Stage
from .analysis import codes as C
from .analysis import regions as R
from .analysis.groups import group_columns
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns

K_WRITE, K_GET, K_PUT, K_PUTSIG = C.K_WRITE, C.K_GET, C.K_PUT, C.K_PUTSIG


@kernel
def _candidates(kind, treg, is_output, window, out):
    # Writes into an output region outside any atomic-add window.
    for i in range(len(kind)):
        k = kind[i]
        r = treg[i]
        out[i] = r >= 0 and is_output[r] and window[i] < 0 and \
            (k == K_WRITE or k == K_GET or k == K_PUT or k == K_PUTSIG)


@kernel
def _sweep(group, start, end, core, hit):
    # Sorted by (group, start). Keep the furthest end so far and the furthest
    # end of any other core, so an interval finds an earlier overlapping one
    # of a different core whenever one exists.
    e1 = -1
    c1 = -1
    i1 = -1
    e2 = -1
    i2 = -1
    for i in range(len(start)):
        if i == 0 or group[i] != group[i - 1]:
            e1 = -1
            c1 = -1
            e2 = -1
        c = core[i]
        if c != c1 and start[i] < e1:
            hit[i] = i1
        elif c == c1 and start[i] < e2:
            hit[i] = i2
        if c == c1:
            if end[i] > e1:
                e1 = end[i]
                i1 = i
        elif end[i] > e1:
            e2 = e1
            i2 = i1
            e1 = end[i]
            c1 = c
            i1 = i
        elif end[i] > e2:
            e2 = end[i]
            i2 = i


class OverlappingOutputWrites(Rule):
    """Two cores of one rank write the same output element, unordered and not atomic.

    What it does
        Collects the writes into regions of role output (local `write`, get
        destinations, puts) issued outside an atomic-add window, groups them
        by (launch, writing rank, intra-rank barrier phase: barriers of any
        scope and `sync_all` order the cores of a rank), and reports element
        ranges written by two different cores of the group. One hit per
        (launch, rank, region, pair of cores).

    Why it matters
        The SDMA fallback of an atomic reduce has no inline add: each core
        must own a disjoint chunk of the output and accumulate in UB. Chunks
        that overlap make two plain writes race; the last one wins and the
        other core's sum is lost.

    Example
        core 0: write out[0:32]; core 1: write out[24:56] (same launch, no barrier)
        -- split the output into disjoint chunks, or use atomic mode.

    Evidence
        The later write in row order (first) and the earlier overlapping
        write of the other core.
    """

    code = "MT604"
    name = "overlapping-output-writes"
    family = Family.DATA_RACE
    severity = Severity.ERROR
    summary = "Two cores of a rank write the same output element in a launch without atomic mode"
    requires = (Stage.CORE_SCAN, Stage.HAPPENS_BEFORE)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        kind = trace["kind"]
        reg = R.target_region(trace)
        cand = np.empty(trace.n, np.bool_)
        _candidates(kind, reg, R.region_table(trace)["role"] == int(Role.OUTPUT), ctx.stage(CoreScan).atomic_window(), cand)
        rows = np.flatnonzero(cand)
        del cand
        if len(rows) < 2:
            return
        phase_core = ctx.stage(HappensBefore).phase_core
        launch = trace["launch"][rows].astype(np.int64)
        rank = trace["rank"][rows].astype(np.int64)
        core = trace["core"][rows].astype(np.int64)
        phase = phase_core[rows].astype(np.int64)
        start = trace.key[rows]
        end = start + R.extent(trace)[rows]
        group = _group(launch, rank, phase)
        order = np.lexsort((rows, start, group))
        hit = np.full(len(rows), -1, np.int64)
        _sweep(group[order], start[order], end[order], core[order], hit)
        seen = set()
        pairs = []  # (write, the overlapping write, first element, elements) of each distinct pair of cores
        for i in np.flatnonzero(hit >= 0).tolist():
            j = int(hit[i])
            r, o = int(rows[order[i]]), int(rows[order[j]])
            ident = (int(launch[order[i]]), int(rank[order[i]]), int(reg[r]),
                     *sorted((int(core[order[i]]), int(core[order[j]]))))
            if ident in seen:
                continue
            seen.add(ident)
            lo = max(int(start[order[i]]), int(start[order[j]]))
            hi = min(int(end[order[i]]), int(end[order[j]]))
            pairs.append((r, o, lo, hi - lo))
        if pairs:
            yield _batch(self, trace, pairs)


def _batch(rule, trace, pairs: list) -> HitColumns:
    write, other, lo, elements = (np.array(c, np.int64) for c in zip(*pairs))
    d = H.described(trace, write, ("rank", "core", "launch", "seq", "kind"))
    do = H.described(trace, other, ("core", "seq", "kind"))
    place = [trace.decode_key(k) for k in lo.tolist()]
    owner, region, offset = zip(*place)
    columns, tables = coded_columns((*d.items(), ("other_core", do["core"]), ("other_seq", do["seq"]),
                                     ("other_kind", do["kind"]), ("owner", owner),
                                     ("region", [H.region_name(trace, r) for r in region]), ("offset", offset),
                                     ("elements", elements.tolist()), ("rests_on", [((r, None),) for r in d["rank"]])))
    return HitColumns(code=rule.code, fields=Overlap, render=_message, extra=_extra, columns=columns, tables=tables,
                      roles=("write", "overlapping write"), rows=np.stack((write, other), axis=1),
                      key=H.row_keys(trace, write))


class Overlap(NamedTuple):
    """Two cores' writes of one output range with no atomic mode and no barrier between them."""

    rank: int
    core: int
    launch: int
    seq: int
    kind: str
    other_core: int  # the other core's write
    other_seq: int
    other_kind: str
    owner: int  # the rank whose output it is
    region: str
    offset: int  # the first element both write
    elements: int


def _message(f: Overlap) -> str:
    return (f"rank {f.rank} launch {f.launch}: cores {f.other_core} (seq {f.other_seq}, {f.other_kind}) and {f.core} "
            f"(seq {f.seq}, {f.kind}) both write {f.region}[{f.offset}:{f.offset + f.elements}] of rank {f.owner} "
            f"with no atomic mode and no barrier between them: the later write overwrites the other core's result")


def _extra(f: Overlap) -> dict:
    return {"elements": f.elements, "cores": sorted((f.core, f.other_core))}


def _group(launch, rank, phase) -> np.ndarray:
    """One int64 per (launch, rank, phase) that orders like the triple: the sweep's group test is
    one compare. Packed where it fits; the triples' group ids (``_groups``) where not."""
    lo = int(launch.min())
    nr, nph = int(rank.max()) + 1, int(phase.max()) + 1
    if int(rank.min()) >= 0 and int(phase.min()) >= 0 and (int(launch.max()) - lo + 1) * nr * nph < 2**62:
        return ((launch - lo) * nr + rank) * nph + phase
    return group_columns((launch, rank, phase)).inverse.astype(np.int64)
