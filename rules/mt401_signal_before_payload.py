"""MT401: a flag written to a peer while a payload put to it is still in flight."""

from __future__ import annotations

import numpy as np

from ingest.contract import Engine, Role

from . import _passes as P
from ._jit import kernel
from .base import Confidence, Family, Rule, Severity

K_BEGIN, K_PUT, K_SIGNAL, K_AMO = P.K_BEGIN, P.K_PUT, P.K_SIGNAL, P.K_AMO
K_QUIET, K_FENCE, NE, E_ALL, NULL8 = P.K_QUIET, P.K_FENCE, P.N_ENGINES, P.E_ALL, P.NULL8


@kernel
def _scan(seg, kind, engine, peer, flagrow, ordered, nranks, hit_put, hit_q):
    for s in range(len(seg) - 1):
        outst = np.full((NE, nranks), -1, np.int64)  # first uncovered payload put per (engine, peer)
        wrong = np.full((NE, nranks), -1, np.int64)  # last quiet/fence since then that did not cover it
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == K_BEGIN:
                outst[:, :] = -1
                wrong[:, :] = -1
            elif k == K_QUIET or k == K_FENCE:
                e = engine[i]
                p = peer[i]
                for x in range(NE):
                    for q in range(nranks):
                        if outst[x, q] < 0:
                            continue
                        if (e == NULL8 or e == E_ALL or e == x) and (p < 0 or p == q):
                            outst[x, q] = -1
                            wrong[x, q] = -1
                        else:
                            wrong[x, q] = i
            elif k == K_PUT and not flagrow[i]:
                e = engine[i]
                p = peer[i]
                if 0 <= e < NE and 0 <= p < nranks and outst[e, p] < 0:
                    outst[e, p] = i
            elif k == K_SIGNAL or k == K_AMO or (k == K_PUT and flagrow[i]):
                p = peer[i]
                if p < 0 or p >= nranks:
                    continue
                for x in range(NE):
                    if outst[x, p] < 0:
                        continue
                    # Same-queue ordering (an RDMA atomic lands after earlier writes of its QP).
                    if k == K_AMO and engine[i] == x and ordered[x]:
                        continue
                    hit_put[i] = outst[x, p]
                    hit_q[i] = wrong[x, p]
                    break


class SignalBeforePayload(Rule):
    """A flag write to a peer that can overtake a payload put still in flight.

    What it does
        Per core, in program order, tracks the payload puts (puts into a
        region whose role is not flag or counter) not yet covered by a quiet
        or fence of their engine (`all` covers every engine; a quiet or fence
        naming a peer covers only that peer). A signal, an amo, or a put into
        a flag or counter region to a peer with such a put outstanding is a
        hit naming both. A quiet of another engine in between is named too.
        Fused put_signal is exempt. An amo on an engine listed in the
        `ordered_engines` option (default roce: an RDMA atomic completes after
        the writes before it on its queue pair) is exempt after puts of that
        engine.

    Why it matters
        The consumer waits on the flag and then reads the payload. A flag that
        lands first lets it read rows that are not there yet: silent data
        corruption, or a hang when the payload carries the next flag.
        `aclshmem_quiet` drains the MTE pipes only; SDMA, UDMA and RoCE each
        need their own quiet.

    Example
        put sdma peer=1 payload[0:4096]; quiet mte; signal peer=1 ready[3]=1
        -- the MTE quiet does not complete the SDMA put: use the SDMA quiet.

    Evidence
        The flag write (first), the outstanding payload put, and the quiet of
        the wrong engine if there was one.
    """

    code = "MT401"
    name = "signal-before-payload"
    family = Family.MISSING_DRAIN
    severity = Severity.ERROR
    summary = "Flag written to a peer while a payload put to it is still outstanding"
    options = {"ordered_engines": ["roce"]}

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        rt = P.region_table(trace)
        reg = trace["region"].astype(np.int64)
        role = rt["role"][np.where(reg >= 0, reg, 0)]
        flagrow = (reg >= 0) & np.isin(role, (int(Role.FLAG), int(Role.COUNTER)))
        ordered = np.zeros(P.N_ENGINES, bool)
        for name in ctx.option("ordered_engines", self.options["ordered_engines"]):
            ordered[int(Engine.from_wire(name))] = True
        hit_put = np.full(trace.n, -1, np.int64)
        hit_q = np.full(trace.n, -1, np.int64)
        _scan(trace.segments, trace["kind"], trace["engine"], trace["peer"], flagrow, ordered,
              int(trace.manifest.ranks), hit_put, hit_q)
        for f in np.flatnonzero(hit_put >= 0):
            yield self._hit(trace, int(f), int(hit_put[f]), int(hit_q[f]))

    def _hit(self, trace, f, p, q):
        d, dp = trace.describe(f), trace.describe(p)
        rows = [("flag write", f), ("outstanding put", p)]
        why = f"no quiet or fence of engine {dp['engine']} in between"
        if q >= 0:
            rows.append(("quiet of another engine", q))
            dq = trace.describe(q)
            named = f"{dq['kind']} {dq.get('engine', 'all')}" + (f" peer {dq['peer']}" if "peer" in dq else "")
            why = f"the {named} at seq {dq['seq']} does not cover it"
        msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: {d['kind']} to rank {d['peer']} "
               f"{d.get('region')}[{d.get('offset')}] at seq {d['seq']} while the {dp['engine']} put "
               f"{dp['region']}[{dp['offset']}] ({dp.get('nbytes')} B) at seq {dp['seq']} is outstanding; {why}")
        conf = P.confidence_for(trace, cores=[(d["rank"], d["core"])]) or Confidence.CERTAIN
        return self.hit(msg, rows=tuple(rows), key=(d["rank"], d["core"], d["seq"]), confidence=conf,
                        extra={"peer": d["peer"], "put_engine": dp["engine"]})
