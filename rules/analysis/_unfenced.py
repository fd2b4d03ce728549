"""Flag writes that can overtake a payload put still in flight (MT401), shared.

MT401 reports them; MT202 cites them (a late put that lands after the owner's
reset leaves the word off its reset value), so both read one cached pass and
the key MT202 cites is the key MT401 emits by construction.

- ``_scan`` (forward, per core): per flag write, the first payload put to its
  peer no quiet or fence of the put's engine (or all; of that peer) covered,
  and the last quiet/fence of another engine or peer since then.
- ``_put_flag`` (backward, per core): per payload put, the first flag write it
  is still outstanding at; the same cover and exemption rules, so a put maps to
  a flag write exactly when that flag write is a hit.
- groups: one missing drain is one group, (rank, core, launch, site of the
  overtaken put), keyed by its first flag write: one quiet after that put
  fixes every flag write of the group, so a loop of N signals (from however
  many sites) after one missing quiet is one root, not N.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.contract import Engine, Role

from .._jit import kernel
from . import codes as C
from . import regions as R
from ._cache import cached
from .groups import group_columns
from .stages import Stage

K_BEGIN, K_PUT, K_SIGNAL, K_AMO = C.K_BEGIN, C.K_PUT, C.K_SIGNAL, C.K_AMO
K_QUIET, K_FENCE, NE, E_ALL, NULL8 = C.K_QUIET, C.K_FENCE, C.N_ENGINES, C.E_ALL, C.NULL8
DEFAULT_ORDERED = ("roce", "ibgda")  # MT401's option default: an RDMA atomic lands after its QP's writes


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


@kernel
def _put_flag(seg, kind, engine, peer, flagrow, ordered, nranks, out):
    for s in range(len(seg) - 1):
        nflag = np.full((NE, nranks), -1, np.int64)  # next flag write per (put engine, peer)
        ncov = np.full((NE, nranks), -1, np.int64)  # next quiet/fence covering (engine, peer)
        for i in range(seg[s + 1] - 1, seg[s] - 1, -1):
            k = kind[i]
            if k == K_BEGIN:
                nflag[:, :] = -1
                ncov[:, :] = -1
            elif k == K_QUIET or k == K_FENCE:
                e = engine[i]
                p = peer[i]
                for x in range(NE):
                    if e == NULL8 or e == E_ALL or e == x:
                        for q in range(nranks):
                            if p < 0 or p == q:
                                ncov[x, q] = i
            elif k == K_PUT and not flagrow[i]:
                e = engine[i]
                p = peer[i]
                if 0 <= e < NE and 0 <= p < nranks:
                    f = nflag[e, p]
                    c = ncov[e, p]
                    if f >= 0 and (c < 0 or f < c):
                        out[i] = f
            elif k == K_SIGNAL or k == K_AMO or (k == K_PUT and flagrow[i]):
                p = peer[i]
                if p < 0 or p >= nranks:
                    continue
                for x in range(NE):
                    if not (k == K_AMO and engine[i] == x and ordered[x]):
                        nflag[x, p] = i


@dataclass(frozen=True)
class Unfenced:
    hit_put: np.ndarray    # per row: the outstanding put a flag write overtakes, -1 if none
    hit_q: np.ndarray      # per row: the quiet/fence of another engine or peer in between, -1 if none
    flags: np.ndarray      # the flag-write rows that are hits, in row order
    group: np.ndarray      # group id of each of ``flags``; groups numbered in order of first row
    first: np.ndarray      # per group: the index into ``flags`` of its first flag write

    def key_of_flag(self, trace, row: int) -> tuple | None:
        """MT401's key for the group of flag-write ``row`` (its first flag write)."""
        j = int(np.searchsorted(self.flags, row))
        if j >= len(self.flags) or self.flags[j] != row:
            return None
        f = int(self.flags[self.first[self.group[j]]])
        return (int(trace["rank"][f]), int(trace["core"][f]), int(trace["seq"][f]))


def _flagrow(trace) -> np.ndarray:
    """Per row: does it target a flag or counter region? Shared by both passes, built once."""
    def build():
        role = R.region_table(trace)["role"]
        flag = (role == int(Role.FLAG)) | (role == int(Role.COUNTER))
        out = np.empty(trace.n, np.bool_)
        _flagrow_kernel(trace["region"], flag, out)
        return out
    return cached(trace, "flagrow", build, Stage.HAPPENS_BEFORE)


@kernel
def _flagrow_kernel(region, flag, out):
    for i in range(len(region)):
        r = region[i]
        out[i] = r >= 0 and flag[r]


def _ordered(names) -> np.ndarray:
    ordered = np.zeros(C.N_ENGINES, bool)
    for name in names:
        ordered[int(Engine.from_wire(name))] = True
    return ordered


def unfenced(trace, ordered_names=None) -> Unfenced:
    """The unfenced scan with ``ordered_names`` (default: the run's ``trace.options``)."""
    names = tuple(sorted(trace.options.ordered_engines if ordered_names is None else ordered_names))

    def build():
        n = trace.n
        hit_put, hit_q = C.rows_full(n), C.rows_full(n)
        if n:
            _scan(trace.segments, trace["kind"], trace["engine"], trace["peer"], _flagrow(trace),
                  _ordered(names), int(trace.manifest.ranks), hit_put, hit_q)
        flags = np.flatnonzero(hit_put >= 0)
        if not len(flags):
            return Unfenced(hit_put, hit_q, flags, np.zeros(0, np.int64), np.zeros(0, np.int64))
        ident = np.stack([a.astype(np.int64) for a in (trace["rank"][flags], trace["core"][flags],
                                                         trace["launch"][flags], trace["site"][hit_put[flags]])])
        _, first, inv, _ = group_columns(ident)
        # Renumber groups by their first flag write, so group order is row order.
        order = np.argsort(first, kind="stable")
        rank_of = np.empty(len(order), np.int64)
        rank_of[order] = np.arange(len(order))
        return Unfenced(hit_put, hit_q, flags, rank_of[inv], first[order])
    return cached(trace, f"unfenced:{names}", build, Stage.HAPPENS_BEFORE)


def put_flag(trace, ordered_names=None) -> np.ndarray:
    """Per payload put row, the first flag write it is still outstanding at (-1: none)."""
    names = tuple(sorted(trace.options.ordered_engines if ordered_names is None else ordered_names))

    def build():
        out = C.rows_full(trace.n)
        if trace.n:
            _put_flag(trace.segments, trace["kind"], trace["engine"], trace["peer"], _flagrow(trace),
                      _ordered(names), int(trace.manifest.ranks), out)
        return out
    return cached(trace, f"put_flag:{names}", build, Stage.HAPPENS_BEFORE)
