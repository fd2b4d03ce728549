"""Per-event passes of the core scan (numba kernels; the stage is ``core_scan``, the wait-for graph reads it).

Each kernel walks the (rank, core) segments in dataset order, so nothing is
sorted: a core's program order is its row order.  They return compact arrays;
everything per stuck wait happens in Python over those few rows.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Kind, Outcome

from .._jit import kernel
from ._cache import cached
from .stages import Stage

# numba freezes module globals at compile time: plain ints, never changed.
_KERNEL_BEGIN = int(Kind.KERNEL_BEGIN)
_KERNEL_END = int(Kind.KERNEL_END)
_WAIT_BEGIN = int(Kind.WAIT_BEGIN)
_WAIT_END = int(Kind.WAIT_END)
_BARRIER_BEGIN = int(Kind.BARRIER_BEGIN)
_BARRIER_END = int(Kind.BARRIER_END)
_TIMEOUT = int(Outcome.TIMEOUT)

# End states of a core (``scan_cores``'s ``state``).
FINISHED = 0  # its last kernel ended (or it never ran one)
IN_WAIT = 1  # the trace ends inside a wait
IN_BARRIER = 2  # the trace ends inside a barrier
STOPPED = 3  # the trace ends mid-kernel, outside any wait: died or dump cut


@kernel
def scan_cores(kind, outcome, seg):
    """End state of every core, and every stuck wait as (begin row, end row).

    A wait is stuck when its wait_begin has no wait_end after it on its core
    (end row -1), or when its wait_end says timeout.  A timeout whose begin
    was lost to ring wrap has begin row -1.  A core whose first event is not
    kernel_begin counts as inside a kernel: its begin was lost, not skipped.
    A core whose last event is a timed-out wait_end (the kernel trapped on
    its timeout) ends in that wait, not stopped.
    """
    nseg = len(seg) - 1
    state = np.zeros(nseg, np.int8)
    open_row = np.full(nseg, -1, np.int64)
    last_row = np.full(nseg, -1, np.int64)
    count = 0
    for s in range(nseg):
        pending = -1
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == _WAIT_BEGIN:
                pending = i
            elif k == _WAIT_END:
                if outcome[i] == _TIMEOUT:
                    count += 1
                pending = -1
        if pending >= 0:
            count += 1
    begin = np.full(count, -1, np.int64)
    end = np.full(count, -1, np.int64)
    j = 0
    for s in range(nseg):
        pending = -1
        barrier = -1
        in_kernel = True
        timed_out = -1  # the node row of the last timed-out wait, while it is the core's last event
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            timed_out = -1
            if k == _KERNEL_BEGIN:
                in_kernel = True
            elif k == _KERNEL_END:
                in_kernel = False
                pending = -1
                barrier = -1
            elif k == _WAIT_BEGIN:
                pending = i
            elif k == _WAIT_END:
                if outcome[i] == _TIMEOUT:
                    begin[j] = pending
                    end[j] = i
                    j += 1
                    timed_out = pending if pending >= 0 else i
                pending = -1
            elif k == _BARRIER_BEGIN:
                barrier = i
            elif k == _BARRIER_END:
                barrier = -1
        if seg[s + 1] > seg[s]:
            last_row[s] = seg[s + 1] - 1
        if pending >= 0:
            begin[j] = pending
            j += 1
            state[s] = IN_WAIT
            open_row[s] = pending
        elif barrier >= 0:
            state[s] = IN_BARRIER
            open_row[s] = barrier
        elif timed_out >= 0 and in_kernel:
            # The kernel trapped on its own timeout: the core ends in that wait, it did not die.
            state[s] = IN_WAIT
            open_row[s] = timed_out
        elif in_kernel and seg[s + 1] > seg[s]:
            state[s] = STOPPED
            open_row[s] = seg[s + 1] - 1
    return state, open_row, last_row, begin[:j], end[:j]


@kernel
def expand_slots(first, last):
    """One (item, slot) pair per slot a write covers: writes spanning several
    32 B slots (a bulk put into a flag region) must count for each."""
    total = 0
    for i in range(len(first)):
        if last[i] >= first[i]:
            total += last[i] - first[i] + 1
    item = np.empty(total, np.int64)
    slot = np.empty(total, np.int64)
    j = 0
    for i in range(len(first)):
        for s in range(first[i], last[i] + 1):
            item[j] = i
            slot[j] = s
            j += 1
    return item, slot


def scanned(trace):
    """``scan_cores`` of the view, computed once: (state, open row, last row, stuck begins, stuck ends)."""
    return cached(trace, "scan", lambda: scan_cores(trace["kind"], trace["outcome"], trace.segments),
                  Stage.CORE_SCAN)
