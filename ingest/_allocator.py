"""glibc's allocator told to keep the memory a process frees, for the next array to reuse.

A diagnose allocates and frees arrays as long as the trace, stage after stage.
By default glibc gives every block over its mmap threshold (32 MiB at most)
back to the kernel on ``free``, so the next array of that size takes a fresh
page fault, and a zeroed page, for every page it touches. Measured on a
10 M-event diagnose (2 cores, a VM): 313 k page faults and 4.9 s of system
time in 12.5 s of wall; with large blocks served from the heap (mmap off) and
freed memory kept up to 2 GiB (trim threshold), 142 k faults, 1.8 s of system
time and 9 s of wall, the same peak RSS. The price: a process keeps what it
freed until it exits, which for a one-shot command line or a window worker is
what its peak already paid for.

Nor does such a process ask for transparent huge pages (``small_pages``).

Only moetrace's own processes do this (``ingest._jit.own_process``): in a
notebook or a Ray worker the allocator's policy is its owner's. Elsewhere than
glibc (macOS, musl) nothing changes.
"""

from __future__ import annotations

import os

# mallopt's parameters (glibc's malloc.h)
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_MAX = -1, -2, -4
_KEEP_FREED = 2**31 - 1  # bytes free at the heap's top before it is trimmed (mallopt takes a C int)
_TOP_PAD = 256 << 20  # extra bytes the heap grows by: fewer brk calls while a stage allocates
_kept: list[bool] = []  # set once the policy is on


def glibc() -> bool:
    """Whether this process's C library is glibc (the policy's ``mallopt`` is glibc's)."""
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError, AttributeError):  # no such name: not glibc
        return False


def keep_freed_memory() -> bool:
    """Turn the policy on in this process; False where the C library is not glibc or refuses."""
    if not glibc():
        return False
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    # mmap off first: a block freed after this comes back to the heap, where the trim threshold keeps it
    ok = all(mallopt(param, value) == 1 for param, value in
             ((_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, _KEEP_FREED), (_M_TOP_PAD, _TOP_PAD)))
    if ok:
        _kept.append(True)
    return ok


def small_pages() -> bool:
    """Stop numpy asking the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) for its arrays.

    numpy does by default for every array of 4 MiB and more. Measured on a
    10 M-event diagnose (2 cores, a VM whose kernel serves huge pages only on
    ``madvise``): 4.2-5.2 s of system time and 9.0-9.8 s of wall with them,
    1.3-1.9 s and 6.1-6.7 s without, the same peak RSS, though the faults are
    118 k against 539 k. A huge page's first touch costs the kernel there
    ~3-4 ms, against ~3 us for each of the 512 small pages it replaces. A
    diagnose writes each array once or twice, so what a huge page saves
    (fewer TLB misses) never pays that back. False where this numpy has no
    such switch.
    """
    import numpy as np

    core = getattr(np, "_core", None) or np.core  # numpy 2 / 1.26
    switch = getattr(core.multiarray, "_set_madvise_hugepage", None)
    if switch is None:
        return False
    switch(False)
    return True


def trim() -> None:
    """Hand the kernel the free pages inside the heap, where the policy keeps them (else a no-op)."""
    if _kept:
        import ctypes

        ctypes.CDLL(None).malloc_trim(0)
