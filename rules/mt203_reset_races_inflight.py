"""MT203: a flag reset that races a write still in flight from the previous round."""

from __future__ import annotations

import numpy as np

from . import _passes as P
from . import _words as W
from ._jit import kernel
from .base import Confidence, Family, Rule, Severity

K_WRITE, K_PUT, K_PUTSIG, K_SIGNAL, K_AMO = P.K_WRITE, P.K_PUT, P.K_PUTSIG, P.K_SIGNAL, P.K_AMO
E_MTE, E_LOCAL = P.E_MTE, P.E_LOCAL
_LOOKBACK = 64  # earlier writes of the same word examined per reset


@kernel
def _scan(wkey, wrow, wlaunch, wphase, wkind, engine, cov, launch, phase_all, rank, core, out):
    # Per key run of the table. A candidate write's cover (row, launch, phase) is looked up once per
    # entry, not once per reset that looks back at it: those gathers from the trace were the cost.
    m = len(wrow)
    done = np.zeros(m, np.bool_)  # a racing write is reported once, at its first reset
    cq = np.empty(256, np.int64)  # per entry of the run: cover row of a candidate, -1 none, -2 not one
    cl = np.empty(256, np.int64)
    cp = np.empty(256, np.int64)
    a = 0
    while a < m:
        b = a
        resets = False
        while b < m and wkey[b] == wkey[a]:
            resets = resets or wkind[b] == K_WRITE
            b += 1
        if not resets:
            a = b
            continue
        if b - a > len(cq):
            cq = np.empty(2 * (b - a), np.int64)
            cl = np.empty(2 * (b - a), np.int64)
            cp = np.empty(2 * (b - a), np.int64)
        for x in range(a, b):
            k = wkind[x]
            cq[x - a] = -2
            if not (k == K_PUT or k == K_PUTSIG or k == K_SIGNAL or k == K_AMO):
                continue
            xr = wrow[x]
            # MTE signals and atomics are a store plus a pipe barrier: complete at issue.
            if (k == K_SIGNAL or k == K_AMO) and (engine[xr] == E_MTE or engine[xr] == E_LOCAL):
                continue
            q = cov[xr]
            cq[x - a] = q
            if q >= 0:
                cl[x - a] = launch[q]
                cp[x - a] = phase_all[q]
        for j in range(a, b):
            if wkind[j] != K_WRITE:
                continue
            r = wrow[j]
            for x in range(j - 1, max(a, j - _LOOKBACK) - 1, -1):
                q = cq[x - a]
                if done[x] or q == -2:
                    continue
                # Only writes of an earlier round: a previous launch or barrier phase.
                if not (wlaunch[x] < wlaunch[j] or wphase[x] < wphase[j]):
                    continue
                if q >= 0:
                    if cl[x - a] < wlaunch[j] or (cl[x - a] == wlaunch[j] and cp[x - a] < wphase[j]):
                        continue
                    if rank[q] == rank[r] and core[q] == core[r] and q < r:
                        continue
                out[j] = x
                done[x] = True
                break
        a = b


class ResetRacesInflight(Rule):
    """A reset of a flag while a write to it from the previous round may still land.

    What it does
        For each local `write` (a reset or clean) of a word of a flag-like
        region, looks back at earlier writes to the same word from an
        earlier launch or barrier phase: puts, put_signals, and signals or
        amos on DMA engines (MTE signals and atomics complete at issue). If
        the write's issuer has no quiet of its engine (or all; of that peer)
        that completes it before the boundary the reset comes after, the
        write can land after the reset. Each racing write is reported once.

    Why it matters
        The late write re-sets the word the owner just cleaned, so the next
        round starts with a stale non-zero flag or head: corrupted data and
        then a hang. This is DeepEP PR #310 (head-update WQEs arriving after
        the next round's buffer clean); the fix quiets every queue pair
        before cleaning.

    Example
        launch 0: rank 1 amo roce add peer=0 head[2] += 4 (no roce quiet)
        launch 1: rank 0 write head[2] = 0
        -- quiet the RoCE engine before the kernel returns or before the barrier.

    Evidence
        The reset (first) and the write still in flight.
    """

    code = "MT203"
    name = "reset-races-inflight"
    family = Family.STALE_FLAG
    severity = Severity.ERROR
    summary = "Flag reset while a put/signal to it from the previous round is still in flight"

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        w = W.words(trace)
        if not len(w.row):
            return
        phase_all, _ = P.phases(trace)
        out = np.full(len(w.row), -1, np.int64)
        _scan(w.key, w.row, w.launch, w.phase, w.kind, trace["engine"], P.cover(trace, False),
              trace["launch"], phase_all, trace["rank"], trace["core"], out)
        seen = set()
        for j in np.flatnonzero(out >= 0):
            r, x = int(w.row[j]), int(w.row[out[j]])
            if r in seen:
                continue  # one hit per reset event, however many words it cleans
            seen.add(r)
            d, dx = trace.describe(r), trace.describe(x)
            owner, region, off = trace.decode_key(int(w.key[j]))
            where = "the launch boundary" if dx["launch"] < d["launch"] else "the barrier"
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: reset of "
                   f"{P.region_name(trace, region)}[{off}] to {d.get('value')} at seq {d['seq']} races rank "
                   f"{dx['rank']} core {dx['core']}'s {dx['engine']} {dx['kind']} to it (launch {dx['launch']}, seq "
                   f"{dx['seq']}), which no {dx['engine']} quiet completed before {where}: it can land after "
                   f"the reset")
            conf = P.confidence_for(trace, ranks=[dx["rank"]]) or Confidence.INFERRED
            yield self.hit(msg, rows=(("reset", r), ("in-flight write", x)),
                           key=(d["rank"], d["core"], d["seq"]), confidence=conf,
                           extra={"writer": dx["rank"], "engine": dx["engine"]})
