"""MT407's scan: per core, in program order, each tracked get from its issue until the quiet
that completes it, a pipe drain, or a use of its destination.

The kernel and the columns it reads; the rule (``mt407_get_used_before_quiet``) picks the gets
it tracks, groups the uses found and words them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import PipeEvent, PipeOp

from ._jit import kernel
from .analysis import codes as C

K_BEGIN, K_END, K_GET, K_QUIET, K_PIPE, K_WRITE = C.K_BEGIN, C.K_END, C.K_GET, C.K_QUIET, C.K_PIPE, C.K_WRITE
K_SIGNAL, K_PUTSIG, K_BBEGIN, K_WBEGIN = C.K_SIGNAL, C.K_PUTSIG, C.K_BBEGIN, C.K_WBEGIN
E_MTE = C.E_MTE
WAIT_FLAG, PIPE_BARRIER = int(PipeOp.WAIT_FLAG), int(PipeOp.PIPE_BARRIER)
# Waits on an event an MTE pipe sets, and barriers of all pipes or MTE3: an MTE get has landed after them.
EV_M3S, EV_M3M2, EV_M2S, EV_M2M3 = (int(e) for e in (PipeEvent.MTE3_S, PipeEvent.MTE3_MTE2, PipeEvent.MTE2_S,
                                                    PipeEvent.MTE2_MTE3))
EV_ALL, EV_MTE3 = int(PipeEvent.ALL), int(PipeEvent.MTE3)


class Events(NamedTuple):
    """The per-row columns ``scan`` reads."""
    kind: np.ndarray
    engine: np.ndarray
    pipe_op: np.ndarray
    event: np.ndarray
    key: np.ndarray


class Gets(NamedTuple):
    """Per row: the words a get fills, whether it is followed, the previous tracked get into its destination."""
    extent: np.ndarray
    tracked: np.ndarray
    prev: np.ndarray


@kernel
def scan(seg, events, gets, quiet_use, done):
    # done: the completion pass (a quiet of the get's engine and peer; kernel_end for MTE).
    # The MTE pipe waits below are not quiets: they land an MTE get too, so they stay here.
    # A get is alive from its issue until done, drained, used or its launch ends.
    kind, engine, pipe_op, event, key = events
    dext, tracked, prev = gets
    n = len(kind)
    use = np.full_like(done, -1)  # row numbers, in the dtype the completion pass uses
    wrong = np.full_like(done, -1)
    alive = np.zeros(n, np.bool_)
    width = 1
    for s in range(len(seg) - 1):
        width = max(width, seg[s + 1] - seg[s])
    lst = np.empty(width, np.int64)  # outstanding gets of the core, in issue order
    for s in range(len(seg) - 1):
        m = 0
        lastq = -1  # the core's last quiet: one after a live get did not complete it
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == K_BEGIN:
                for j in range(m):
                    alive[lst[j]] = False
                m = 0
                lastq = -1
            elif k == K_QUIET:
                lastq = i
            elif k == K_PIPE:
                ev = event[i]
                if (pipe_op[i] == WAIT_FLAG and (ev == EV_M3S or ev == EV_M3M2 or ev == EV_M2S or ev == EV_M2M3)) \
                        or (pipe_op[i] == PIPE_BARRIER and (ev == EV_ALL or ev == EV_MTE3)):
                    keep = 0
                    for j in range(m):
                        g = lst[j]
                        if not alive[g] or engine[g] == E_MTE or 0 <= done[g] <= i:
                            alive[g] = False
                            continue
                        lst[keep] = g
                        keep += 1
                    m = keep
            elif k == K_GET:
                pv = prev[i]
                if pv >= 0 and alive[pv] and not (0 <= done[pv] < i):
                    use[pv] = i  # the same destination refilled while the last fill may still land
                    wrong[pv] = lastq if lastq > pv else -1
                    alive[pv] = False
                if tracked[i]:
                    alive[i] = True
                    lst[m] = i
                    m += 1
            elif (k == K_WRITE and quiet_use[i]) or k == K_SIGNAL or k == K_PUTSIG or k == K_BBEGIN \
                    or k == K_END or k == K_WBEGIN:
                keep = 0
                for j in range(m):
                    g = lst[j]
                    if not alive[g]:
                        continue
                    if 0 <= done[g] <= i:  # kernel_end is the very row that completes an MTE get
                        alive[g] = False
                        continue
                    # A wait only relies on a get that fills the waited word.
                    if k == K_WBEGIN and not (key[g] <= key[i] < key[g] + dext[g]):
                        lst[keep] = g
                        keep += 1
                        continue
                    use[g] = i
                    wrong[g] = lastq if lastq > g else -1
                    alive[g] = False
                m = keep
                if k == K_END:
                    for j in range(m):
                        alive[lst[j]] = False
                    m = 0
    return use, wrong


def previous_same_destination(trace, gets: np.ndarray) -> np.ndarray:
    """Per tracked get, the previous tracked get of its core into the same first word (-1: none)."""
    prev = C.rows_full(trace.n)
    if len(gets) < 2:
        return prev
    rc = trace["rank"][gets].astype(np.int64) * (trace.manifest.cores + 1) + trace["core"][gets].astype(np.int64)
    k = trace.key[gets]
    order = np.lexsort((gets, k, rc))
    same = (rc[order][1:] == rc[order][:-1]) & (k[order][1:] == k[order][:-1])
    prev[gets[order][1:][same]] = gets[order][:-1][same]
    return prev
