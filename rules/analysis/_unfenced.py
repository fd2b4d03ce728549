"""Flag writes that can overtake a payload put still in flight (MT401), shared.

MT401 reports them; MT202 cites them (a late put that lands after the owner's
reset leaves the word off its reset value), so both read one cached pass and
the key MT202 cites is the key MT401 emits by construction.

Whether a quiet or fence covered a put is the happens-before stage's one
completion pass (``_passes.completed_at`` with fences, without kernel_end);
both scans read it and look for no quiet themselves.

- ``_scan`` (forward, per core): per flag write, the first payload put to its
  peer not yet completed, and the last quiet/fence of another engine or peer
  since then.
- ``_put_flag`` (backward, per core): per payload put, the first flag write it
  is still outstanding at; the same completion and exemption rules, so a put
  maps to a flag write exactly when that flag write is a hit.
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
from ._passes import completed_at
from .groups import group_columns
from .stages import Stage

K_BEGIN, K_PUT, K_SIGNAL, K_AMO = C.K_BEGIN, C.K_PUT, C.K_SIGNAL, C.K_AMO
K_QUIET, K_FENCE, NE = C.K_QUIET, C.K_FENCE, C.N_ENGINES
DEFAULT_ORDERED = ("roce", "ibgda")  # MT401's option default: an RDMA atomic lands after its QP's writes


@kernel
def _scan(seg, kind, engine, peer, flagrow, ordered, nranks, done):
    # done: completed_at with fences, without kernel_end. A put stays the first outstanding
    # one of its (engine, peer) until the row that completes it; any quiet or fence after it
    # before then is one that did not cover it, so the last such is the latest of the core's.
    hit_put = np.full_like(done, -1)  # row numbers, in the dtype the completion pass uses
    hit_q = np.full_like(done, -1)
    for s in range(len(seg) - 1):
        outst = np.full((NE, nranks), -1, np.int64)  # first outstanding payload put per (engine, peer)
        lastq = -1  # the core's last quiet or fence in this launch
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == K_BEGIN:
                outst[:, :] = -1
                lastq = -1
            elif k == K_QUIET or k == K_FENCE:
                lastq = i
            elif k == K_PUT and not flagrow[i]:
                e = engine[i]
                p = peer[i]
                if 0 <= e < NE and 0 <= p < nranks:
                    o = outst[e, p]
                    if o < 0 or 0 <= done[o] < i:
                        outst[e, p] = i
            elif k == K_SIGNAL or k == K_AMO or (k == K_PUT and flagrow[i]):
                p = peer[i]
                if p < 0 or p >= nranks:
                    continue
                for x in range(NE):
                    o = outst[x, p]
                    if o < 0:
                        continue
                    if 0 <= done[o] < i:
                        outst[x, p] = -1
                        continue
                    # Same-queue ordering (an RDMA atomic lands after earlier writes of its QP).
                    if k == K_AMO and engine[i] == x and ordered[x]:
                        continue
                    hit_put[i] = o
                    hit_q[i] = lastq if lastq > o else -1
                    break
    return hit_put, hit_q


@kernel
def _put_flag(seg, kind, engine, peer, flagrow, ordered, nranks, done):
    # done: as in _scan. A put is outstanding at the next flag write to its peer (its engine
    # not exempt) that comes before the row that completes it.
    out = np.full_like(done, -1)
    for s in range(len(seg) - 1):
        nflag = np.full((NE, nranks), -1, np.int64)  # next flag write per (put engine, peer)
        for i in range(seg[s + 1] - 1, seg[s] - 1, -1):
            k = kind[i]
            if k == K_BEGIN:
                nflag[:, :] = -1
            elif k == K_PUT and not flagrow[i]:
                e = engine[i]
                p = peer[i]
                if 0 <= e < NE and 0 <= p < nranks:
                    f = nflag[e, p]
                    c = done[i]
                    if f >= 0 and (c < 0 or f < c):
                        out[i] = f
            elif k == K_SIGNAL or k == K_AMO or (k == K_PUT and flagrow[i]):
                p = peer[i]
                if p < 0 or p >= nranks:
                    continue
                for x in range(NE):
                    if not (k == K_AMO and engine[i] == x and ordered[x]):
                        nflag[x, p] = i
    return out


@dataclass(frozen=True)
class Unfenced:
    flags: np.ndarray      # the flag-write rows that are hits, in row order
    put: np.ndarray        # per flag write: the outstanding put it overtakes
    quiet: np.ndarray      # per flag write: the quiet/fence of another engine or peer in between, -1 if none
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


def _done(trace) -> np.ndarray:
    """The completion both scans read: a fence counts (it keeps the flag behind the payload,
    which is all MT401 asks); kernel_end does not (the scans stay within a launch)."""
    return completed_at(trace, fences=True, ends=False)


def _ordered(names) -> np.ndarray:
    ordered = np.zeros(C.N_ENGINES, bool)
    for name in names:
        ordered[int(Engine.from_wire(name))] = True
    return ordered


def unfenced(trace, ordered_names=None) -> Unfenced:
    """The unfenced scan with ``ordered_names`` (default: the run's ``trace.options``)."""
    names = tuple(sorted(trace.options.ordered_engines if ordered_names is None else ordered_names))

    def build():
        none = np.zeros(0, np.int64)
        if not trace.n:
            return Unfenced(none, none, none, none, none)
        hit_put, hit_q = _scan(trace.segments, trace["kind"], trace["engine"], trace["peer"], _flagrow(trace),
                               _ordered(names), int(trace.manifest.ranks), _done(trace))
        # Kept for the hits alone: the per-row arrays are -1 but at them (8 B/event for the window).
        flags = np.flatnonzero(hit_put >= 0)
        put, quiet = hit_put[flags], hit_q[flags]
        del hit_put, hit_q
        if not len(flags):
            return Unfenced(flags, put, quiet, none, none)
        # The columns as they are: group_columns packs them into one key (a stacked int64 copy of
        # millions of flag writes cost more than the grouping itself).
        _, first, inv, _ = group_columns([trace["rank"][flags], trace["core"][flags], trace["launch"][flags],
                                          trace["site"][put]])
        # Renumber groups by their first flag write, so group order is row order.
        order = np.argsort(first, kind="stable")
        rank_of = np.empty(len(order), np.int64)
        rank_of[order] = np.arange(len(order))
        return Unfenced(flags, put, quiet, rank_of[inv], first[order])
    return cached(trace, f"unfenced:{names}", build, Stage.HAPPENS_BEFORE)


def put_flag(trace, ordered_names=None) -> np.ndarray:
    """Per payload put row, the first flag write it is still outstanding at (-1: none)."""
    names = tuple(sorted(trace.options.ordered_engines if ordered_names is None else ordered_names))

    def build():
        if not trace.n:
            return C.rows_full(0)
        return _put_flag(trace.segments, trace["kind"], trace["engine"], trace["peer"], _flagrow(trace),
                         _ordered(names), int(trace.manifest.ranks), _done(trace))
    return cached(trace, f"put_flag:{names}", build, Stage.HAPPENS_BEFORE)
