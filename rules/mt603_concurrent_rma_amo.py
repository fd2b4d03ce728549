"""MT603: an amo and a put/get to one PE outstanding together on UDMA or RoCE."""

from __future__ import annotations

import numpy as np

from . import _engines as E
from . import _passes as P
from ._jit import kernel
from .base import Confidence, Family, Rule, Severity

K_BEGIN, K_QUIET, K_AMO = P.K_BEGIN, P.K_QUIET, P.K_AMO
K_PUT, K_GET, K_PUTSIG = P.K_PUT, P.K_GET, P.K_PUTSIG
E_UDMA, E_ROCE, E_ALL, NE, NULL8 = P.E_UDMA, P.E_ROCE, P.E_ALL, P.N_ENGINES, P.NULL8


@kernel
def _scan(seg, kind, engine, peer, nranks, out):
    for s in range(len(seg) - 1):
        rma = np.full((NE, nranks), -1, np.int64)  # first outstanding put/get per (engine, peer)
        amo = np.full((NE, nranks), -1, np.int64)  # first outstanding amo per (engine, peer)
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == K_BEGIN:
                rma[:, :] = -1
                amo[:, :] = -1
            elif k == K_QUIET:
                e = engine[i]
                p = peer[i]
                for x in range(NE):
                    if e == NULL8 or e == E_ALL or e == x:
                        for q in range(nranks):
                            if p < 0 or p == q:
                                rma[x, q] = -1
                                amo[x, q] = -1
            elif k == K_AMO or k == K_PUT or k == K_GET or k == K_PUTSIG:
                e = engine[i]
                p = peer[i]
                if (e != E_UDMA and e != E_ROCE) or p < 0 or p >= nranks:
                    continue
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


class ConcurrentRmaAmo(Rule):
    """An atomic and a put or get to the same PE in flight together on UDMA or RoCE.

    What it does
        Per core, tracks the puts, gets and put_signals and, apart, the amos
        issued on the UDMA or RoCE engine to each peer until a quiet of that
        engine (or all; one naming a peer covers that peer). An amo issued
        while a put/get to the same peer on the same engine is outstanding
        is a hit, and so is a put/get issued while an amo is. An amo's
        engine is its transport (the manifest's map, else the event's). A
        fence does not separate them: it orders delivery, it completes
        nothing. One hit per (rank, core, launch, site).

    Why it matters
        The UDMA and RoCE engines do not support concurrent RMA and AMO to
        one PE (shmem_device_udma.h, the RDMA path of the unified API): the
        atomic can be lost or applied to a half-written word. Quiet the
        engine for that peer between the transfers and the atomics.

    Example
        put udma peer=1 stage[0..8]; amo udma add peer=1 acc[0] += 3; quiet udma peer=1
        -- quiet udma peer=1 after the put, before the amo.

    Evidence
        The later operation (first) and the outstanding one it overlaps.
    """

    code = "MT603"
    name = "concurrent-rma-amo"
    family = Family.DATA_RACE
    severity = Severity.ERROR
    summary = "AMO and put/get to one PE outstanding together on UDMA/RoCE (not supported)"

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        transport, _ = E.amo_transport(trace)
        out = P.rows_full(trace.n)
        _scan(trace.segments, trace["kind"], transport.astype(np.int8), trace["peer"], int(trace.manifest.ranks), out)
        rows = np.flatnonzero(out >= 0)
        for g in P.groups(rows, trace["rank"][rows], trace["core"][rows], trace["launch"][rows], trace["site"][rows]):
            r, o = int(g[0]), int(out[g[0]])
            d, do = trace.describe(r), trace.describe(o)
            eng = E.Engine(int(transport[r])).wire
            more = f"; {len(g)} such operations from this site" if len(g) > 1 else ""
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: {d['kind']} to rank {d['peer']} "
                   f"{d['region']}[{d['offset']}] at seq {d['seq']} on {eng} while the {do['kind']} to the same PE "
                   f"at seq {do['seq']} is still outstanding (no {eng} quiet between): {eng} does not support "
                   f"concurrent RMA and AMO to one PE{more}")
            conf = P.confidence_for(trace, cores=[(d["rank"], d["core"])]) or Confidence.CERTAIN
            yield self.hit(msg, rows=(("issued", r), ("outstanding", o)), key=(d["rank"], d["core"], d["seq"]),
                           confidence=conf, extra={"operations": int(len(g))})
