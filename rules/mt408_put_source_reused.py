"""MT408: a put's local source overwritten before the quiet that completes the put."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _engines as E
from . import _hits as H
from . import _source_reuse as K
from .analysis import HappensBefore, Stage
from .analysis import codes as C
from .analysis import regions as R
from .analysis.groups import group_columns
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns

K_BEGIN, K_PUT, K_PUTSIG, K_GET, K_WRITE = C.K_BEGIN, C.K_PUT, C.K_PUTSIG, C.K_GET, C.K_WRITE
K_SIGNAL, K_AMO = C.K_SIGNAL, C.K_AMO
NULL16, NULL64 = C.NULL16, C.NULL64


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
        if trace.n == 0 or trace.all_null("local_region") \
                or not ((kind == K_PUT) & (trace["local_region"] != NULL16)).any():
            return
        # Only the puts that name their source and the rows that write their own rank are listed,
        # each with its words: no array of the trace's length beyond a few masks.
        puts, source = _sources(trace)
        writes, target = _targets(trace)
        order = ctx.stage(HappensBefore)
        cover = order.completed_at()
        out = np.full(len(writes), -1, np.int64)  # per overwrite: the put (index) whose source it hits
        K.same_core(*_steps(trace, puts, writes), puts, target, source, cover, out)
        _cross_core_hits(trace, order, puts, source, writes, target, out)
        found = out >= 0
        hit_rows, hit_puts = writes[found], puts[out[found]]
        groups = H.by_site(trace, hit_rows)
        if groups:
            yield _batch(self, trace, groups, hit_rows, hit_puts)


def _sources(trace) -> tuple[np.ndarray, K.Span]:
    """The puts that name their source, and the source's words: bytes over the local region's element size."""
    rt = R.region_table(trace)
    lreg = trace["local_region"]
    puts = np.flatnonzero((trace["kind"] == K_PUT) & (lreg >= 0) & (lreg < len(rt["elem_bytes"]))
                          & (trace["local_offset"] != NULL64))
    region = lreg[puts].astype(np.int64)
    eb = rt["elem_bytes"][region].astype(np.int64)
    nb = trace["nbytes"][puts].astype(np.int64)
    lo = trace["local_offset"][puts].astype(np.int64)
    hi = lo + np.where(nb == NULL64, 1, np.maximum((np.maximum(nb, 0) + eb - 1) // eb, 1))
    return puts, K.Span(region, lo, hi)


def _targets(trace) -> tuple[np.ndarray, K.Span]:
    """What each row writes on its own rank (a write, a get's destination, a one-sided op to itself),
    where it names a region."""
    kind = trace["kind"]
    selfward = C.one_of(kind, (K_PUT, K_PUTSIG, K_SIGNAL, K_AMO)) & (trace["peer"] == trace["rank"])
    treg = R.target_region(trace)
    writes = np.flatnonzero(((kind == K_WRITE) | (kind == K_GET) | selfward) & (treg >= 0))
    lo = np.where(kind[writes] == K_GET, trace["local_offset"][writes], trace["offset"][writes]).astype(np.int64)
    return writes, K.Span(treg[writes].astype(np.int64), lo, lo + R.extent(trace)[writes])


def _steps(trace, puts: np.ndarray, writes: np.ndarray) -> tuple[np.ndarray, K.Steps]:
    """Each core's first step and the steps (``Steps``) ``same_core`` walks."""
    listed = trace["kind"] == K_BEGIN  # one mask, not np.union1d: a hash and a sort of every row listed
    listed[puts] = True
    listed[writes] = True
    rows = np.flatnonzero(listed)
    put, write = np.full(len(rows), -1, np.int64), np.full(len(rows), -1, np.int64)
    put[np.searchsorted(rows, puts)] = np.arange(len(puts))
    write[np.searchsorted(rows, writes)] = np.arange(len(writes))
    begin = trace["kind"][rows] == K_BEGIN
    return np.searchsorted(rows, trace.segments).astype(np.int64), K.Steps(rows, begin, put, write)


def _cross_core_hits(trace, order, puts: np.ndarray, source: K.Span, writes: np.ndarray, target: K.Span, out) -> None:
    """Overwrites by another core of the put's rank that no barrier orders (fills ``out``)."""
    if int(trace.manifest.cores) < 2 or not len(puts):
        return
    keep = ~_self_filled(trace, puts, source.region, writes, target.region)
    p = np.flatnonzero(keep)  # indices into puts
    w = np.flatnonzero(out < 0)  # indices into writes
    if len(w):
        w = w[~E.flag_observed(trace, order)[writes[w]]]
    if not len(p) or not len(w):
        return
    both = np.concatenate((puts[p], writes[w]))
    bucket = group_columns([trace["rank"][both].astype(np.int64), trace["launch"][both].astype(np.int64),
                            np.concatenate((source.region[p], target.region[w]))]).inverse
    pb, wb = bucket[:len(p)], bucket[len(p):]
    po = np.lexsort((source.lo[p], pb))
    wo = np.lexsort((target.lo[w], wb))
    p, pb, w, wb = p[po], pb[po], w[wo], wb[wo]
    pmax = np.empty(len(p), np.int64)
    K.running_max(pb.astype(np.int64), source.hi[p], pmax)
    pcov = E.cover_phase(order, puts[p])
    hit = np.full(len(w), -1, np.int64)
    core, phase = trace["core"], order.phase_core
    K.cross_core(K.Sorted(pb.astype(np.int64), source.lo[p], source.hi[p], core[puts[p]].astype(np.int64),
                       phase[puts[p]].astype(np.int64)), pmax, pcov,
                K.Sorted(wb.astype(np.int64), target.lo[w], target.hi[w], core[writes[w]].astype(np.int64),
                       phase[writes[w]].astype(np.int64)), hit)
    found = hit >= 0
    out[w[found]] = p[hit[found]]


def _self_filled(trace, puts: np.ndarray, put_region: np.ndarray, writes: np.ndarray,
                 write_region: np.ndarray) -> np.ndarray:
    """Per put: whether its own core wrote into the source's region earlier in the launch.

    Such a buffer is the core's own staging (a UB each core fills for itself, which a trace may
    name as one region at the same offsets on every core): another core's writes there are
    taken for its own buffer, not a refill of this one. A put from a buffer its core never
    filled reads what another core put there: shared, and checked across cores."""
    def ident(rows, reg):
        return [trace["rank"][rows], trace["core"][rows], trace["launch"][rows], reg]

    cols = [np.concatenate((a, b)) for a, b in zip(ident(writes, write_region), ident(puts, put_region))]
    inv = group_columns([np.asarray(c, np.int64) for c in cols]).inverse
    first = np.full(int(inv.max()) + 1, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first, inv[:len(writes)], writes.astype(np.int64))
    return first[inv[len(writes):]] < puts


def _batch(rule, trace, groups: list, hit_rows: np.ndarray, hit_puts: np.ndarray) -> HitColumns:
    """One typed member per (rank, core, launch, site) group: its first overwrite and the put whose source
    it hits (``hit_puts``, per row of ``hit_rows``, ascending)."""
    first = np.array([int(g[0]) for g in groups], np.int64)
    put = hit_puts[np.searchsorted(hit_rows, first)].astype(np.int64)
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
