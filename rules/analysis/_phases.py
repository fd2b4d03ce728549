"""The barrier passes of happens-before: each row's barrier phases, and the barrier instances that match.

Per (rank, core) segment in dataset order, one numba scan each, no sort.
Cross-rank order comes from barrier counts and launches only (ts of
different ranks are never compared):

- ``phases``: per row, the scope-``all`` barriers its core has left in this
  launch (orders rows of different ranks) and the barriers of any scope plus
  ``sync_all`` (orders rows of different cores of one rank).
- ``barrier_instances``: the k-th barrier of a scope in a launch on a core;
  the k-th instances of all participants are one barrier (the wait-for
  graph's barrier nodes read them too).

Launch boundaries count as global barriers: between rounds the host
synchronises the stream and runs a barrier (protocols.md §1.2). The results
belong to the happens-before stage: ``cached`` names it, so a rule that did
not declare it cannot reach them.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Scope

from .._jit import kernel
from ._cache import cached
from .codes import K_BBEGIN, K_BEND, K_PIPE, PIPE_SYNC_ALL, SCOPE_ALL
from .stages import Stage


@kernel
def barrier_instances(kind, scope, launch, seg):
    """For every barrier_begin / barrier_end row: its instance number.

    The k-th barrier (1-based) of a scope within one launch on one core; the
    k-th instances of all participants are one barrier.  Returns rows, the
    instance, and 1 for a begin / 0 for an end.
    """
    n = 0
    for i in range(len(kind)):
        if kind[i] == K_BBEGIN or kind[i] == K_BEND:
            n += 1
    rows = np.empty(n, np.int64)
    inst = np.empty(n, np.int32)
    is_begin = np.empty(n, np.int8)
    j = 0
    counts_b = np.zeros(8, np.int32)
    counts_e = np.zeros(8, np.int32)
    for s in range(len(seg) - 1):
        cur = -1
        first = True
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k != K_BBEGIN and k != K_BEND:
                continue
            if first or launch[i] != cur:
                counts_b[:] = 0
                counts_e[:] = 0
                cur = launch[i]
                first = False
            sc = scope[i] if 0 <= scope[i] < 8 else 7
            rows[j] = i
            if k == K_BBEGIN:
                counts_b[sc] += 1
                inst[j] = counts_b[sc]
                is_begin[j] = 1
            else:
                counts_e[sc] += 1
                inst[j] = counts_e[sc]
                is_begin[j] = 0
            j += 1
    return rows, inst, is_begin


@kernel
def _phase_kernel(seg, kind, scope, pipe_op, launch, out_all, out_core):
    for s in range(len(seg) - 1):
        a = 0
        c = 0
        cur = -1
        for i in range(seg[s], seg[s + 1]):
            if launch[i] != cur:
                a = 0
                c = 0
                cur = launch[i]
            out_all[i] = a
            out_core[i] = c
            k = kind[i]
            if k == K_BEND:
                # Core 0 passing a cross-rank barrier and then the core barrier its rank's other
                # cores follow it through (the core-0 layout) is one synchronization point.
                follows = i >= 2 and kind[i - 1] == K_BBEGIN and kind[i - 2] == K_BEND \
                    and scope[i - 2] == SCOPE_ALL and scope[i] != SCOPE_ALL and launch[i - 2] == cur
                if not follows:
                    c += 1
                if scope[i] == SCOPE_ALL:
                    a += 1
            elif k == K_PIPE and pipe_op[i] == PIPE_SYNC_ALL:
                c += 1


def phases(trace) -> tuple[np.ndarray, np.ndarray]:
    """(phase_all, phase_core): barrier counts per row within its launch (see module doc)."""
    def build():
        n = trace.n
        pa_, pc = np.zeros(n, np.int32), np.zeros(n, np.int32)
        if n:
            _phase_kernel(trace.segments, trace["kind"], trace["scope"], trace["pipe_op"],
                          trace["launch"], pa_, pc)
            _through_core_barriers(trace, pa_)
        return pa_, pc
    return cached(trace, "phases", build, Stage.HAPPENS_BEFORE)


def _through_core_barriers(trace, phase_all: np.ndarray) -> None:
    """Carry cross-rank barrier phases to the cores that follow them through core-scope barriers.

    Both recording layouts are legal (docs/trace-format.md): every core records
    the cross-rank barrier, or core 0 alone does and the rank's other cores
    wait for it in a core-scope barrier. In the second, a core's own count of
    cross-rank barriers stays 0; past the k-th core barrier it is at least as
    far as any core of its rank was on entering that barrier. In place.
    """
    kind, scope = trace["kind"], trace["scope"]
    rows, inst, is_begin = barrier_instances(kind, scope, trace["launch"], trace.segments)
    core_rows = scope[rows] == int(Scope.CORE)
    if not core_rows.any() or not (scope[rows] == SCOPE_ALL).any():
        return
    rows, inst, is_begin = rows[core_rows], inst[core_rows].astype(np.int64), is_begin[core_rows]
    rank = trace["rank"][rows].astype(np.int64)
    launch = trace["launch"][rows].astype(np.int64)
    nl = int(launch.max()) + 1
    group = (rank * nl + launch) * (int(inst.max()) + 1) + inst
    begins = is_begin == 1
    ids, inv = np.unique(group, return_inverse=True)
    reached = np.zeros(len(ids), np.int64)
    np.maximum.at(reached, inv[begins], phase_all[rows[begins]].astype(np.int64))
    ends = rows[~begins]
    lift = np.zeros(len(phase_all), np.int64)
    lift[ends] = reached[inv[~begins]]
    # Forward-fill each (core, launch) run: a run's id times a stride larger than any phase keeps
    # the running maximum from crossing into the next run.
    new_run = np.zeros(len(phase_all), bool)  # a run starts at each core's first row and each launch change
    new_run[trace.segments[:-1]] = True
    new_run[1:] |= trace["launch"][1:] != trace["launch"][:-1]
    run = np.cumsum(new_run) - 1
    stride = int(lift.max()) + 1
    filled = np.maximum.accumulate(run * stride + lift) - run * stride
    np.maximum(phase_all, filled.astype(phase_all.dtype), out=phase_all)
