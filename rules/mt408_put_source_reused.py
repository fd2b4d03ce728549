"""MT408: a put's local source overwritten before the quiet that completes the put."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _engines as E
from . import _hits as H
from ._jit import kernel
from .analysis import HappensBefore, Stage
from .analysis import codes as C
from .analysis import regions as R
from .analysis.groups import group_columns
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns

K_BEGIN, K_PUT, K_PUTSIG, K_GET, K_WRITE = C.K_BEGIN, C.K_PUT, C.K_PUTSIG, C.K_GET, C.K_WRITE
K_SIGNAL, K_AMO = C.K_SIGNAL, C.K_AMO
NULL16, NULL64 = C.NULL16, C.NULL64


class Span(NamedTuple):
    """Per row, the words [lo, hi) of ``region`` it reads (a put's source) or writes (-1: none)."""
    region: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


class Sorted(NamedTuple):
    """Puts or overwrites sorted by (bucket, lo): their (rank, launch, region) bucket, words, core and
    core barrier phase."""
    bucket: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    core: np.ndarray
    phase: np.ndarray


@kernel
def _same_core(seg, kind, target, source, sourced, cover, out):
    # Per core, in program order: the sourced puts still outstanding (no quiet has completed them
    # yet); an overwrite of their source words before that quiet is a hit. The list grows as it
    # must: a cap would drop the oldest put, and a refill of its source would go unseen.
    treg, tlo, thi = target
    lreg, slo, shi = source
    for s in range(len(seg) - 1):
        rows = np.empty(64, np.int64)
        n = 0
        for i in range(seg[s], seg[s + 1]):
            if kind[i] == K_BEGIN:
                n = 0
                continue
            if treg[i] >= 0 and n:
                keep = 0
                for j in range(n):
                    p = rows[j]
                    if cover[p] >= 0 and cover[p] < i:
                        continue  # completed: its source is free again
                    rows[keep] = p
                    keep += 1
                    if out[i] < 0 and lreg[p] == treg[i] and slo[p] < thi[i] and tlo[i] < shi[p]:
                        out[i] = p
                n = keep
            if sourced[i]:
                if n == len(rows):
                    bigger = np.empty(2 * n, np.int64)
                    bigger[:n] = rows
                    rows = bigger
                rows[n] = i
                n += 1


@kernel
def _cross_core(puts, pmax, pcov, writes, out_p):
    # Puts sorted by (bucket, source start), pmax the running maximum of their source ends per
    # bucket, pcov the phase of their quiet; overwrites sorted by (bucket, start). A put pairs with
    # an overwrite of another core of its rank when their words meet and no barrier orders the
    # overwrite before the put or after the put's quiet: the overwrite's phase lies in
    # [put phase, quiet phase].
    pb, plo, phi, pcore, pph = puts
    wb, wlo, whi, wcore, wph = writes
    lo = 0
    for w in range(len(wb)):
        while lo < len(pb) and (pb[lo] < wb[w] or (pb[lo] == wb[w] and pmax[lo] <= wlo[w])):
            lo += 1
        j = lo
        while j < len(pb) and pb[j] == wb[w] and plo[j] < whi[w]:
            if phi[j] > wlo[w] and pcore[j] != wcore[w] and pph[j] <= wph[w] and wph[w] <= pcov[j]:
                out_p[w] = j
                break
            j += 1


class PutSourceReused(Rule):
    """The local buffer a put reads from is written again before the put's quiet.

    What it does
        For every `put` that names its source (`local_region`,
        `local_offset`), looks for a write into the source's words on its
        rank, in the same launch, before the first quiet that completes the
        put (its engine, its peer or all; the kernel's end for MTE): a
        `write`, a `get` landing there, or a put, signal or amo its rank
        sends to itself. On the put's own core, program order decides; on
        another core of the rank, barriers and `sync_all` do: an overwrite
        no barrier orders before the put or after its quiet is a hit,
        unless that core observed a flag (a `wait_end`, a cross-core
        WaitFlag) since its last barrier, a hand-over the trace cannot
        order, or the put's own core filled that region earlier in the
        launch (then it is that core's own staging, a UB the other cores
        have their own of). Puts that do not name their source are not checked. One hit
        per (rank, core, launch, site) of the overwrite.

    Why it matters
        A non-blocking put returns before its engine has read the source:
        the UDMA contract is `aclshmemx_udma_quiet(pe)` before reusing it
        (`aclshmem_quiet` completes no UDMA work). Refilling the buffer
        early (the next tile into the same UB slot, the next token into the
        same staging row, a sibling core's refill) sends the new data, or a
        mix, to the peer, and nothing reports it.

    Example
        put udma peer=1 payload[0] from stage[0] (32 B); write stage[0] = next tile; quiet udma
        -- quiet udma (peer 1) before refilling stage[0].

    Evidence
        The overwrite (first) and the put whose source it reuses. Needs the
        put's optional `local_region` and `local_offset`; the rest (`kind`,
        `engine`, `peer`, `region`, `offset`, `nbytes`, the quiets and
        barriers) is required. Certain where it fires.
    """

    code = "MT408"
    name = "put-source-reused"
    family = Family.MISSING_DRAIN
    severity = Severity.ERROR
    summary = "A put's local source overwritten before the quiet that completes the put"

    requires = (Stage.HAPPENS_BEFORE,)

    def check(self, trace, ctx):
        kind = trace["kind"]
        if trace.n == 0 or not ((kind == K_PUT) & (trace["local_region"] != NULL16)).any():
            return
        rt = R.region_table(trace)
        nreg = len(rt["elem_bytes"])
        lreg = trace["local_region"].astype(np.int64)
        sourced = (kind == K_PUT) & (lreg >= 0) & (lreg < nreg) & (trace["local_offset"] != NULL64)
        # The source's words: bytes over the local region's element size.
        eb = np.ones(trace.n, np.int64)
        eb[sourced] = rt["elem_bytes"][lreg[sourced]]
        nb = trace["nbytes"].astype(np.int64)
        slo = trace["local_offset"].astype(np.int64)
        shi = slo + np.where(nb == NULL64, 1, np.maximum((np.maximum(nb, 0) + eb - 1) // eb, 1))
        # What each row writes on its own rank: a write, a get's destination, a one-sided op to itself.
        selfward = np.isin(kind, (K_PUT, K_PUTSIG, K_SIGNAL, K_AMO)) & (trace["peer"] == trace["rank"])
        over = (kind == K_WRITE) | (kind == K_GET) | selfward
        treg = np.where(over, R.target_region(trace).astype(np.int64), -1)
        tlo = np.where(kind == K_GET, trace["local_offset"], trace["offset"]).astype(np.int64)
        thi = tlo + R.extent(trace)
        order = ctx.stage(HappensBefore)
        cover = order.completed_at()
        out = C.rows_full(trace.n)
        target, source = Span(treg, tlo, thi), Span(lreg, slo, shi)
        _same_core(trace.segments, kind, target, source, sourced, cover, out)
        self._cross_core(trace, order, sourced, source, target, out)
        rows = np.flatnonzero(out >= 0)
        groups = H.by_site(trace, rows)
        if groups:
            yield _batch(self, trace, groups, out)

    @staticmethod
    def _cross_core(trace, order, sourced, source: Span, target: Span, out):
        """Overwrites by another core of the put's rank that no barrier orders (fills ``out``)."""
        lreg, slo, shi = source
        treg, tlo, thi = target
        if int(trace.manifest.cores) < 2:
            return
        phase = order.phase_core
        puts = np.flatnonzero(sourced)
        writes = np.flatnonzero((treg >= 0) & (out < 0))
        if not len(puts) or not len(writes):
            return
        puts = puts[~_self_filled(trace, puts, lreg, np.flatnonzero(treg >= 0), treg)]
        if not len(puts):
            return
        writes = writes[~E.flag_observed(trace, order)[writes]]
        rank, launch = trace["rank"].astype(np.int64), trace["launch"].astype(np.int64)
        both = np.concatenate((puts, writes))
        reg = np.concatenate((lreg[puts], treg[writes]))
        bucket = group_columns([rank[both], launch[both], reg]).inverse
        pb, wb = bucket[:len(puts)], bucket[len(puts):]
        po = np.lexsort((slo[puts], pb))
        wo = np.lexsort((tlo[writes], wb))
        puts, pb, writes, wb = puts[po], pb[po], writes[wo], wb[wo]
        pmax = np.empty(len(puts), np.int64)
        _running_max(pb.astype(np.int64), shi[puts], pmax)
        pcov = E.cover_phase(order, puts)
        hit = np.full(len(writes), -1, np.int64)
        core = trace["core"]
        _cross_core(Sorted(pb.astype(np.int64), slo[puts], shi[puts], core[puts].astype(np.int64),
                           phase[puts].astype(np.int64)), pmax, pcov,
                    Sorted(wb.astype(np.int64), tlo[writes], thi[writes], core[writes].astype(np.int64),
                           phase[writes].astype(np.int64)), hit)
        found = hit >= 0
        out[writes[found]] = puts[hit[found]]


@kernel
def _running_max(bucket, values, out):
    # The running maximum of values within each run of equal (sorted) bucket.
    for i in range(len(values)):
        if i == 0 or bucket[i] != bucket[i - 1] or values[i] > out[i - 1]:
            out[i] = values[i]
        else:
            out[i] = out[i - 1]


def _self_filled(trace, puts: np.ndarray, lreg: np.ndarray, writes: np.ndarray, treg: np.ndarray) -> np.ndarray:
    """Per put: whether its own core wrote into the source's region earlier in the launch.

    Such a buffer is the core's own staging (a UB each core fills for itself, which a trace may
    name as one region at the same offsets on every core): another core's writes there are
    taken for its own buffer, not a refill of this one. A put from a buffer its core never
    filled reads what another core put there: shared, and checked across cores."""
    def ident(rows, reg):
        return [trace["rank"][rows], trace["core"][rows], trace["launch"][rows], reg]

    cols = [np.concatenate((a, b)) for a, b in zip(ident(writes, treg[writes]), ident(puts, lreg[puts]))]
    inv = group_columns([np.asarray(c, np.int64) for c in cols]).inverse
    first = np.full(int(inv.max()) + 1, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, inv[:len(writes)], writes.astype(np.int64))
    return first[inv[len(writes):]] < puts


def _batch(rule, trace, groups: list, out: np.ndarray) -> HitColumns:
    """One typed member per (rank, core, launch, site) group: its first overwrite and the put whose source it hits."""
    first = np.array([int(g[0]) for g in groups], np.int64)
    put = out[first].astype(np.int64)
    d = H.described(trace, first, ("rank", "core", "launch", "seq", "kind", "region", "offset", "local_region",
                                   "local_offset"))
    dp = H.described(trace, put, ("rank", "core", "engine", "peer", "region", "offset", "seq"))
    get = [k == "get" for k in d["kind"]]  # a get overwrites at its local destination
    region = [lr if g else r for g, r, lr in zip(get, d["region"], d["local_region"])]
    offset = [lo if g else o for g, o, lo in zip(get, d["offset"], d["local_offset"])]
    cores = [tuple(sorted({(r, c), (pr, pc)})) for r, c, pr, pc in zip(d["rank"], d["core"], dp["rank"], dp["core"])]
    put_fields = ("core", "engine", "peer", "region", "offset", "seq")
    columns, tables = coded_columns((*((n, d[n]) for n in ("rank", "core", "launch", "seq", "kind")),
                                     ("region", region), ("offset", offset), *((f"put_{n}", dp[n]) for n in put_fields),
                                     ("overwrites", [len(g) for g in groups]), ("rests_on", cores)))
    return HitColumns(code=rule.code, fields=SourceReused, render=_message, extra=_extra, columns=columns,
                      tables=tables, roles=("overwrite", "put"), rows=np.stack((first, put), axis=1),
                      key=H.row_keys(trace, first))


class SourceReused(NamedTuple):
    """A site's first overwrite of a put's source before the put completed."""

    rank: int
    core: int
    launch: int
    seq: int
    kind: str
    region: str | None  # where it writes (a get's local destination)
    offset: int | None
    put_core: int  # the put whose source it overwrites
    put_engine: str
    put_peer: int
    put_region: str
    put_offset: int
    put_seq: int
    overwrites: int  # such overwrites from the site


def _message(f: SourceReused) -> str:
    more = f"; {f.overwrites} such overwrites from this site" if f.overwrites > 1 else ""
    if f.put_core == f.core:
        why = "before any quiet completes it"
    else:
        why = f"(core {f.put_core}'s put) with no barrier ordering it after the put's quiet, nor before the put"
    return (f"rank {f.rank} core {f.core} launch {f.launch}: {f.kind} into {f.region}[{f.offset}] at seq {f.seq} "
            f"overwrites the source of the {f.put_engine} put to rank {f.put_peer} {f.put_region}[{f.put_offset}] "
            f"at seq {f.put_seq} {why}: the peer may receive the new contents{more}")


def _extra(f: SourceReused) -> dict:
    return {"overwrites": f.overwrites}
