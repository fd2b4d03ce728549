"""MT603: an amo and a put/get to one PE outstanding together on UDMA or RoCE."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _engines as E
from . import _hits as H
from ._jit import kernel
from .analysis import HappensBefore, Stage
from .analysis import codes as C
from .analysis.groups import group_columns
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns

K_BEGIN, K_AMO = C.K_BEGIN, C.K_AMO
K_PUT, K_GET, K_PUTSIG = C.K_PUT, C.K_GET, C.K_PUTSIG
E_UDMA, E_ROCE, NE = C.E_UDMA, C.E_ROCE, C.N_ENGINES


@kernel
def _scan(seg, kind, engine, peer, nranks, done, out):
    # done: the completion pass with amos keyed by their transport (as ``engine`` is here):
    # an op is outstanding from its issue until the row that completes it.
    for s in range(len(seg) - 1):
        rma = np.full((NE, nranks), -1, np.int64)  # first outstanding put/get per (engine, peer)
        amo = np.full((NE, nranks), -1, np.int64)  # first outstanding amo per (engine, peer)
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == K_BEGIN:
                rma[:, :] = -1
                amo[:, :] = -1
            elif k == K_AMO or k == K_PUT or k == K_GET or k == K_PUTSIG:
                e = engine[i]
                p = peer[i]
                if (e != E_UDMA and e != E_ROCE) or p < 0 or p >= nranks:
                    continue
                # One quiet completes every op of (engine, peer) issued before it, so the first
                # outstanding one completed means all before this row did.
                if rma[e, p] >= 0 and 0 <= done[rma[e, p]] < i:
                    rma[e, p] = -1
                if amo[e, p] >= 0 and 0 <= done[amo[e, p]] < i:
                    amo[e, p] = -1
                if k == K_AMO:
                    if rma[e, p] >= 0:
                        out[i] = rma[e, p]
                    if amo[e, p] < 0:
                        amo[e, p] = i
                else:
                    if amo[e, p] >= 0:
                        out[i] = amo[e, p]
                    if rma[e, p] < 0:
                        rma[e, p] = i


@kernel
def _prefix_best(bucket, core, cov, b1, c1, r1, b2, r2):
    # RMAs sorted by (bucket, issue phase). Per prefix of a bucket: the latest quiet phase (b1),
    # its core (c1) and index (r1), and the latest among the other cores (b2, r2; -1 if none).
    for i in range(len(bucket)):
        if i == 0 or bucket[i] != bucket[i - 1]:
            b1[i], c1[i], r1[i], b2[i], r2[i] = cov[i], core[i], i, -1, -1
            continue
        b1[i], c1[i], r1[i], b2[i], r2[i] = b1[i - 1], c1[i - 1], r1[i - 1], b2[i - 1], r2[i - 1]
        if core[i] == c1[i]:
            if cov[i] > b1[i]:
                b1[i], r1[i] = cov[i], i
        elif cov[i] > b1[i]:
            b2[i], r2[i] = b1[i], r1[i]
            b1[i], c1[i], r1[i] = cov[i], core[i], i
        elif cov[i] > b2[i]:
            b2[i], r2[i] = cov[i], i


class ConcurrentRmaAmo(Rule):
    """An atomic and a put or get to the same PE in flight together on UDMA or RoCE.

    What it does
        Per core, tracks the puts, gets and put_signals and, apart, the amos
        issued on the UDMA or RoCE engine to each peer until a quiet of that
        engine (or all; one naming a peer covers that peer). An amo issued
        while a put/get to the same peer on the same engine is outstanding
        is a hit, and so is a put/get issued while an amo is. The rank's
        cores share one queue per PE (SHMEM's UDMA table is per PE, not per
        core), so an amo of one core and a put/get of another to the same
        peer and engine are a hit too when no barrier or `sync_all` orders
        one's quiet before the other's issue, unless either core observed a
        flag (a `wait_end`, a cross-core WaitFlag) since its last barrier, a
        hand-over the trace cannot order. An amo's engine is its transport
        (the manifest's map, else the event's). A fence does not separate
        them: it orders delivery, it completes nothing. One hit per (rank,
        core, launch, site).

    Why it matters
        The UDMA and RoCE engines do not support concurrent RMA and AMO to
        one PE (shmem_device_udma.h, the RDMA path of the unified API): the
        atomic can be lost or applied to a half-written word. Quiet the
        engine for that peer between the transfers and the atomics.

    Example
        put udma peer=1 stage[0..8]; amo udma add peer=1 acc[0] += 3; quiet udma peer=1
        -- quiet udma peer=1 after the put, before the amo.

    Evidence
        The later operation (first) and the outstanding one it overlaps;
        across cores, the amo (first) and the other core's put/get. Needs
        only required fields (`engine`, `peer`, the quiets and barriers);
        the manifest's optional `transport` map, where given, overrides an
        amo's `engine`. Certain where it fires.
    """

    code = "MT603"
    name = "concurrent-rma-amo"
    family = Family.DATA_RACE
    severity = Severity.ERROR
    summary = "AMO and put/get to one PE outstanding together on UDMA/RoCE (not supported)"

    requires = (Stage.HAPPENS_BEFORE,)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        transport, _ = E.amo_transport(trace)
        hb = ctx.stage(HappensBefore)
        out = C.rows_full(trace.n)
        # The queue an amo shares with puts is the one it took: its completion by that transport.
        _scan(trace.segments, trace["kind"], np.asarray(transport, np.int8), trace["peer"], int(trace.manifest.ranks),
              hb.completed_at(transport=True), out)
        if int(trace.manifest.cores) > 1:
            self._across_cores(trace, hb, transport, out)
        rows = np.flatnonzero(out >= 0)
        groups = H.by_site(trace, rows)
        if groups:
            yield self._batch(trace, groups, out, transport)

    def _batch(self, trace, groups: list, out: np.ndarray, transport: np.ndarray) -> HitColumns:
        """One typed member per (rank, core, launch, site) group: its first operation and the one outstanding."""
        first = np.array([int(g[0]) for g in groups], np.int64)
        other = out[first].astype(np.int64)
        names = ("rank", "core", "launch", "kind", "peer", "region", "offset", "seq")
        d = H.described(trace, first, names)
        do = H.described(trace, other, ("rank", "core", "kind", "seq"))
        engine = [E.Engine(int(t)).wire for t in transport[first].tolist()]
        cores = [tuple(sorted({(r, c), (ro, co)}))
                 for r, c, ro, co in zip(d["rank"], d["core"], do["rank"], do["core"])]
        columns, tables = coded_columns((*d.items(), ("engine", engine), ("other_core", do["core"]),
                                         ("other_kind", do["kind"]), ("other_seq", do["seq"]),
                                         ("operations", [len(g) for g in groups]), ("rests_on", cores)))
        return HitColumns(code=self.code, fields=Concurrent, render=_message, extra=E.site_extra, columns=columns,
                          tables=tables, roles=("issued", "outstanding"), rows=np.stack((first, other), axis=1),
                          key=H.row_keys(trace, first))

    @staticmethod
    def _across_cores(trace, hb, transport, out):
        """An amo and another core's put/get to one PE and engine that no barrier orders (fills ``out``)."""
        kind, peer = trace["kind"], trace["peer"]
        onesided = (C.one_of(kind, (K_AMO, K_PUT, K_GET, K_PUTSIG)) & ((transport == E_UDMA) | (transport == E_ROCE))
                    & (peer >= 0) & (peer < int(trace.manifest.ranks)))
        if not (onesided & (kind == K_AMO)).any():
            return
        onesided &= ~E.flag_observed(trace, hb)
        amo = np.flatnonzero(onesided & (kind == K_AMO) & (out < 0))
        rma = np.flatnonzero(onesided & (kind != K_AMO))
        if not len(amo) or not len(rma):
            return
        phase = hb.phase_core.astype(np.int64)
        both = np.concatenate((amo, rma))
        ident = [trace["rank"][both], trace["launch"][both], transport[both], peer[both]]
        bucket = group_columns([np.asarray(c, np.int64) for c in ident]).inverse.astype(np.int64)
        ab, rb = bucket[:len(amo)], bucket[len(amo):]
        order = np.lexsort((phase[rma], rb))
        rma, rb = rma[order], rb[order]
        rcov = E.cover_phase(hb, rma)
        n = len(rma)
        b1, c1, r1, b2, r2 = (np.empty(n, np.int64) for _ in range(5))
        _prefix_best(rb, trace["core"][rma].astype(np.int64), rcov, b1, c1, r1, b2, r2)
        # The RMAs of the amo's bucket issued no later (in phases) than the amo's quiet: a prefix.
        span = max(int(phase.max()) + 2, 2)
        acov = np.minimum(E.cover_phase(hb, amo), span - 1)
        k = np.searchsorted(rb * span + phase[rma], ab * span + acov, side="right") - 1
        ok = k >= 0
        ok[ok] = rb[k[ok]] == ab[ok]
        kk = np.where(ok, k, 0)
        own = c1[kk] == trace["core"][amo]
        best = np.where(own, b2[kk], b1[kk])
        row = np.where(own, r2[kk], r1[kk])
        hit = ok & (row >= 0) & (best >= phase[amo])
        out[amo[hit]] = rma[row[hit]]


class Concurrent(NamedTuple):
    """A site's first RMA or amo issued while the other kind to the same PE is outstanding."""

    rank: int
    core: int
    launch: int
    kind: str
    peer: int
    region: str
    offset: int
    seq: int
    engine: str  # the transport both took
    other_core: int  # the outstanding operation (this core's, or another's no barrier orders)
    other_kind: str
    other_seq: int
    operations: int  # such operations from the site


def _message(f: Concurrent) -> str:
    other = "" if f.other_core == f.core else f"core {f.other_core}'s "
    between = (f"no {f.engine} quiet between" if not other else
               f"no barrier orders its {f.engine} quiet before this, nor this before it")
    return E.per_site(f, f"rank {f.rank} core {f.core} launch {f.launch}: {f.kind} to rank {f.peer} "
                         f"{f.region}[{f.offset}] at seq {f.seq} on {f.engine} while {other or 'the '}{f.other_kind} "
                         f"to the same PE at seq {f.other_seq} is still outstanding ({between}): {f.engine} does not "
                         f"support concurrent RMA and AMO to one PE")
