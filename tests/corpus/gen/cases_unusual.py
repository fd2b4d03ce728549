"""Clean corpus traces with unusual but legal patterns (issue 18), part 1: the count exchange
(exchange.py). Each is legal by docs/trace-format.md and must diagnose with no error or warning root.
"""

from __future__ import annotations

from .atomic_barrier import AtomicBarrier
from .exchange import Exchange
from .registry import case, clean

# Clock origins billions of cycles apart, one near the top of int64's comfortable range and
# one behind the others: a later event of one rank routinely carries a smaller ts than an
# earlier event of another.
SKEWED_CLOCKS = (912_000_000_000_000, 3, 41_000_000_007, 7_300_000_000_000, 5_000_000_000)


@case
def unusual_minus_one_fill_host():
    """8 ranks x 2 cores, 3 launches: each count word starts at -1 (the host's memset, not
    recorded), the receiver waits ``ge 0`` (0 rows is a real count) and refills the whole cnt
    region with -1 in ONE write after reading; a signal_add completion counter (arrived += 1 per
    sender) is waited ``eq 8`` and reset to 0. Bare manifest and events."""
    ex = Exchange(8, 2, 3)
    return ex.run(), clean("-1 fill reset, ge 0 waits, signal add completion counter; 3 launches")


@case
def unusual_minus_one_fill_kernel():
    """5 ranks x 3 cores, 2 launches: the kernel fills cnt with -1 itself in launch 0 (core 1, one
    write) before a barrier_all every core records; core 1 receives, all three send; waits ``gt -1``."""
    ex = Exchange(5, 3, 2, cmp="gt", init="kernel", recv_core=1)
    return ex.run(), clean("the kernel's own -1 fill before a barrier; gt -1 waits")


@case
def unusual_encoded_counts_ne():
    """6 ranks x 2 cores, 2 launches: DeepEP's -n-1 encoding (a count of 0 rows travels as -1),
    receiver waits ``ne 0`` and resets the region to 0 in one write; per-peer quiets (quiet naming
    the destination) drain the rows before the count."""
    ex = Exchange(6, 2, 2, cmp="ne", drain="quiet_peer")
    return ex.run(), clean("-n-1 encoded counts waited ne 0; quiets per peer")


@case
def unusual_monotonic_completion_counter():
    """4 ranks x 2 cores, 3 launches: the arrived counter is never reset, each launch waits it
    ``ge 4*(g+1)`` (signal add from every sender); a fence naming the peer orders rows before count."""
    ex = Exchange(4, 2, 3, monotonic=True, drain="fence")
    return ex.run(), clean("a completion counter that only grows, waited ge; fences per peer")


@case
def unusual_put_signal_one_wqe():
    """3 ranks x 2 cores, 2 launches: rows and count in ONE UDMA put_signal (WRITE_WITH_NOTIFY),
    no drain between them; the UDMA quiet for the peer before the completion counter's add.
    Written as ring dumps."""
    ex = Exchange(3, 2, 2, drain="put_signal", engine="udma")
    return ex.run(), clean("put_signal carries payload + flag in one WQE"), {"ring": {}}


@case
def unusual_rank_speeds_16():
    """16 ranks x 1 core, 2 launches, speeds apart by two orders of magnitude: rank 5 computes
    for 400 passes before sending in launch 0, rank 11 for 300 before receiving, rank 0 for 250
    in launch 1; clocks skewed by up to 9e14 cycles, not in rank order."""
    st = {(0, 5, 0): 400, (0, 11, "recv"): 300, (1, 0, 0): 250, (1, 15, 0): 120}
    ex = Exchange(16, 1, 2, stall=st, clocks=SKEWED_CLOCKS)
    return ex.run(), clean("very different rank speeds, clocks billions of cycles apart")


@case
def unusual_idle_cores():
    """2 ranks x 4 cores, 1 launch: only core 0 sends and receives; cores 1-3 begin and end the
    kernel and do nothing else. Full annotations."""
    ex = Exchange(2, 4, 1, send_cores=1, annotated=True)
    return ex.run(), clean("cores that do nothing; annotated")


@case
def unusual_sdma_rows_annotated():
    """12 ranks x 3 cores, 2 launches: rows over SDMA drained by the SDMA quiet; full annotations
    (cnt reset -1 index rank, arrived reset 0)."""
    ex = Exchange(12, 3, 2, engine="sdma", annotated=True, stall={(1, 7, 2): 90})
    return ex.run(), clean("SDMA rows, SDMA quiet; annotated")


@case
def unusual_atomic_barrier_block():
    """4 ranks x 2 cores, 2 launches of a two-stage all-gather whose barrier is DeepEP's
    barrier_block made of amos: +1024 on my sig[i], -1024 on rank i's sig[me], waits ``le 0``;
    reused 4 times a launch with no reset. Gets of the peers' stage between barriers."""
    ab = AtomicBarrier(4, 2, 2)
    return ab.run(), clean("a barrier made of balanced atomics and le waits; gets between barriers")


@case
def unusual_atomic_barrier_central():
    """3 ranks x 3 cores, 3 launches: a central counter barrier: UDMA amo add 1 on rank 0's
    arrive (then the UDMA quiet for rank 0), rank 0 waits ``ge 3k`` and signals release = k to
    all, everyone waits release ``ge k``; counters never reset. Ring dumps."""
    ab = AtomicBarrier(3, 3, 3, kind="central")
    return ab.run(), clean("central atomic counter barrier, monotonic, ge waits"), {"ring": {}}


@case
def unusual_put_signal_add_counter():
    """7 ranks x 2 cores, 2 launches: the count is signalled first (a fence naming the peer),
    then rows and the completion counter's add travel in ONE put_signal (op add); zero-row
    peers get the plain signal add. Receivers wait the counter ``eq 7``."""
    ex = Exchange(7, 2, 2, drain="put_signal_add", engine="roce")
    return ex.run(), clean("put_signal with op add as a completion counter")


@case
def unusual_cores_never_launched():
    """3 ranks x 4 cores declared, the kernel launched on 2: cores 2 and 3 of every rank record
    nothing at all (not even kernel_begin), 2 launches with the kernel's own -1 fill."""
    ex = Exchange(3, 4, 2, init="kernel", silent_cores=(2, 3), send_cores=2)
    return ex.run(), clean("cores of the manifest with no events: never launched, not dead")


@case
def unusual_two_ranks_kernel_fill_rings():
    """2 ranks x 1 core, 3 launches, the kernel's own -1 fill before a recorded barrier; ring dumps."""
    ex = Exchange(2, 1, 3, init="kernel")
    return ex.run(), clean("the smallest exchange, 3 launches, rings"), {"ring": {}}


@case
def unusual_atomic_barrier_block_16():
    """16 ranks x 1 core, 1 launch of the all-gather over DeepEP's barrier_block (+1024 / -1024
    amos, ``le 0`` waits), rank 9 slow to write its stage; clocks skewed by up to 9e14 cycles."""
    ab = AtomicBarrier(16, 1, 1, clocks=SKEWED_CLOCKS, stall={(0, 9, 0, 0): 80, (0, 9, 0, 1): 80})
    return ab.run(), clean("balanced atomic barrier over 16 ranks")
