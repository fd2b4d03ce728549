"""Clean corpus traces with unusual but legal patterns (issue 18), part 2: run-ahead generations,
a chain whose head finishes early, multi-word flags, and the seed protocols driven at odd speeds
and clocks. Each must diagnose with no error or warning root.
"""

from __future__ import annotations

from .cases_unusual import SKEWED_CLOCKS
from .classic import Classic
from .fused import ROUTES as FUSED_ROUTES
from .fused import Fused
from .generation import Generation
from .pipeline import Pipeline
from .reduce_scatter import ReduceScatter
from .registry import case, clean
from .udma_counts import UdmaCounts


@case
def unusual_pipeline_runahead_ge():
    """6 ranks x 1 core in a chain, 8 steps, 2 launches: rank 0 (the head) waits on nothing and
    ends each launch long before rank 5; every downstream waits its gen ``ge k`` and, the upstream
    being faster, finds k+1 .. k+3 there. Generations grow across launches, never reset."""
    p = Pipeline(6, 1, 2, 8, stall={(g, 5, 0, s): 25 for g in range(2) for s in range(8)})
    return p.run(), clean("ge waits on generations a fast upstream ran ahead of; a rank that ends early")


@case
def unusual_pipeline_ring_gt_two_words():
    """4 ranks x 2 cores in a ring, 6 steps, 3 launches: the flag is 2 words (one put of both,
    the wait covers both, ``gt k-1``); core c runs steps c, c+2, ..; rank 0 waits on the chunk
    that came round. Annotated (monotonic, slot_words 2)."""
    p = Pipeline(4, 2, 3, 6, ring=True, words=2, cmp="gt", annotated=True,
                 stall={(1, 2, 1, 3): 60, (2, 0, 0, 2): 40})
    return p.run(), clean("multi-word monotonic flags waited gt; a ring pipeline")


@case
def unusual_pipeline_skewed_clocks_rings():
    """10 ranks x 1 core in a chain, 4 steps, 1 launch, clocks apart by up to 9e14 cycles (rank
    1's origin 3, rank 0's 9.1e14): by ts, the tail consumes before the head produced. Ring dumps."""
    p = Pipeline(10, 1, 1, 4, clocks=SKEWED_CLOCKS, stall={(0, 0, 0, 0): 30})
    return p.run(), clean("ts orders nothing across ranks"), {"ring": {}}


@case
def unusual_generation_fast_rank_ahead():
    """The generation barrier with ``ge k`` waits and rank 0 very slow between polls at barriers
    1 and 3: its peers have passed, combined and signalled k+1 before it looks; it finds k+1 and
    goes on (what the == version of this trace hangs on). Bare manifest."""
    gen = Generation(2, stall_wait={(0, 1, 2): 150, (0, 3, 2): 150, (0, 3, 3): 90})
    return gen.run(), clean("ge on a generation a fast rank ran ahead of: legal")


@case
def unusual_rs_three_launches_slow_rank():
    """The reduce-scatter epilogue, 3 launches, core-0 barrier layout, ``ge`` epoch waits; rank 3
    core 0 looks at sync[0] late at barriers 3 and 5 (its peers already signalled k+1)."""
    rs = ReduceScatter(3, layout="core0", stall_wait={(3, 3, 0): 140, (3, 5, 0): 140, (1, 4, 2): 70})
    return rs.run(), clean("atomic-add epilogue, 3 launches, ge waits finding k+1")


@case
def unusual_classic_rank_speeds():
    """Classic dispatch/combine, 2 rounds, speeds apart by two orders of magnitude: rank 3 core 1
    computes 300 passes before dispatch in round 0, rank 0 300 before combine in round 1, rank 2
    core 0 announces one count 200 passes late; clocks skewed by up to 9e14 cycles."""
    st = {(0, 3, 1, "dispatch"): 300, (1, 0, 0, "combine"): 300, (1, 0, 1, "combine"): 280,
          (0, 2, 0, ("count", 0, 1)): 200}
    cl = Classic(2, faults={"stall": st})
    cl.tr.clocks = SKEWED_CLOCKS
    return cl.run(), clean("very different rank speeds in the classic protocol")


@case
def unusual_udma_three_launches():
    """The UDMA count exchange over 3 launches (adds, per-peer UDMA quiets, done flags reset by
    one write), clocks skewed by billions of cycles. JSONL, bare."""
    u = UdmaCounts(3)
    u.tr.clocks = SKEWED_CLOCKS
    return u.run(), clean("3 launches of UDMA amo counts with per-peer quiets")


@case
def unusual_fused_three_epochs():
    """dispatch_gmm_combine over 3 launches (epochs 1..3, put_signal count rows, ``ge`` waits,
    data pulled by gets); the third launch's routes are the first's reversed per rank."""
    third = tuple(FUSED_ROUTES[0][::-1])
    return Fused(FUSED_ROUTES + (third,)).run(), clean("3 epochs of the fused exchange")
