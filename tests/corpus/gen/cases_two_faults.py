"""Corpus traces with two independent defects of different families at once (issue 18): both
must be found, each as its own root, and nothing else reported as a root.
"""

from __future__ import annotations

from .atomic_barrier import AtomicBarrier
from .classic import Classic
from .exchange import Exchange
from .fused import SKEWED, Fused
from .pipeline import Pipeline
from .reduce_scatter import STUCK, ReduceScatter
from .registry import case, roots
from .udma_counts import UdmaCounts

CAPACITY = ("MT301", "MT302", "MT303")
STALE = ("MT202", "MT201")


@case
def two_invalid_expert_and_missing_quiet():
    """Classic, one round: rank 2 routes token 1 top-k 0 to expert 9 of 8 (its combine hangs on
    that pair), and, independently, rank 1 core 1 drops the quiet after each payload put: its
    assist signals to ranks 1 and 3 can overtake the rows (the assist quiet drains them, late)."""
    cl = Classic(1, faults={"invalid": {(0, 2, 1, 0): 9}, "no_quiet": {(0, 1, 1)}})
    return cl.run(), roots([("MT501", 2, 0), ("MT401", 1, 1)],
                           "the invalid route at rank 2 and the missing payload quiet at rank 1 core 1")


@case
def two_stale_count_and_over_capacity():
    """The count exchange, 4 ranks x 2 cores, 2 launches, no completion counter: rank 1 never
    refills its cnt words with -1 after launch 0 (its launch-1 senders are slow, so it reads
    launch 0's counts at once), and rank 3 lost its clamp: in launch 1 rank 2 sends it 4 rows
    for a capacity of 3 and it takes all 4 (deliver delivered 4 > capacity 3)."""
    slow = {(1, s, c): 120 for s in (0, 2, 3) for c in range(2)}
    ex = Exchange(4, 2, 2, counter=False, stall=slow,
                  faults={"no_reset": {(0, 1)}, "rows": {(1, 2, 3): 4}, "no_clamp": {(1, 3)}})
    return ex.run(), roots([(STALE, 1, None), (CAPACITY, 3, 0)],
                           "a stale-flag root at rank 1 (its cnt not reset) and a capacity one at rank 3")


@case
def two_off_by_one_and_invalid_expert():
    """Classic, one round: rank 1 core 0 writes rank 2's ready slots one slot too far (rank 2
    hangs in dispatch), and rank 3 routes token 0 top-k 1 to expert 8 of 8 (its combine waits on
    a status slot nobody writes). Annotated manifest."""
    cl = Classic(1, annotated=True, faults={"ready_shift": (0, 1, 2), "invalid": {(0, 3, 0, 1): 8}})
    return cl.run(), roots([("MT105", 1, 0), ("MT501", 3, 0)],
                           "the misdirected ready put and the invalid route; every hang is a symptom")


@case
def two_minus_one_and_over_capacity():
    """The fused exchange, top-1, capacity 3 rows: rank 2 routes token 3 to expert -1 (no sentinel
    allowed: its combine hangs on it), and rank 1 lost its clamp and takes all 4 rows rank 0
    sent to its local expert 0."""
    routes = tuple(tuple(tuple((-1,) if (r, t) == (2, 3) else tk for t, tk in enumerate(rk))
                         for r, rk in enumerate(SKEWED[0])) for _ in range(1))
    return Fused(routes, cap=3, clamp=False).run(), roots(
        [("MT501", 2, 0), (CAPACITY, 1, 0)], "expert -1 on rank 2; delivered 4 > capacity 3 on rank 1")


@case
def two_udma_unquieted_and_done_not_reset():
    """The UDMA count exchange, 2 launches: rank 1 core 0 skips the UDMA quiet in launch 1 (its
    adds reach ranks 0 and 2 after they read their counts), and rank 3 never resets its done
    flags after launch 0, so in launch 1 it reads its counts before its peers added them."""
    u = UdmaCounts(2, no_quiet={(1, 1, 0)}, late=40, keep={(0, 3, "done")})
    return u.run(), roots([("MT404", 1, 0), (STALE, 3, None)],
                          "the unquieted UDMA adds of rank 1 core 0; the done flags rank 3 left set")


@case
def two_generation_eq_and_undrained_atomic():
    """The reduce-scatter epilogue, barrier on every core: rank 2 core 1 switches atomic mode off
    in launch 0 without waiting MTE3_S (its gets may still be adding), and the barrier waits ``eq
    k``: in launch 1 rank 0 core 0 polls sync[3] after rank 3 signalled k+1 and hangs."""
    rs = ReduceScatter(2, layout="all", cmp="eq", stall_wait=STUCK, no_drain={(0, 2, 1)})
    return rs.run(), roots([("MT402", 2, 1), ("MT204", 0, 0), ("MT204", None, None, "optional")],
                           "the undrained atomic window at rank 2 core 1; the == wait at rank 0 core 0 "
                           "(every rank runs the == code: MT204 warnings elsewhere are acceptable)")


@case
def two_pipeline_missing_quiet_and_dead_rank():
    """The chain pipeline, 5 ranks, 6 steps: rank 1 sets rank 2's generation at step 2 with its
    chunk put still unquieted, and rank 3 dies before step 4 (ranks 4 waits on it forever)."""
    p = Pipeline(5, 1, 1, 6, faults={"no_quiet": {(0, 1, 2)}, "die": {(0, 3, 0, 4)}})
    return p.run(), roots([("MT401", 1, 0), ("MT103", 3, 0)],
                          "the flag that overtook rank 1's chunk; rank 3 stopped mid-kernel")


@case
def two_early_get_and_unquieted_amo():
    """The all-gather over a central atomic barrier, 4 ranks x 2 cores: rank 2 gets its peers'
    stage 0 before the barrier (its pre barrier comes after the gets), and rank 3 announces its
    UDMA arrival add without the UDMA quiet in launch 0."""
    ab = AtomicBarrier(4, 2, 1, kind="central", faults={"early_get": {(0, 2, 0)}, "no_amo_quiet": {(0, 3)}})
    return ab.run(), roots([("MT601", 2, None), ("MT404", 3, 0)],
                           "the reads with no pre barrier at rank 2; the unquieted amo of rank 3")


@case
def two_missing_drain_and_stale_count():
    """The count exchange, 6 ranks x 2 cores, 2 launches, no completion counter, fences: rank 4
    core 1 sets rank 1's count with the rows still in flight (no fence) in launch 0, and rank 5
    does not refill its cnt words after launch 0 (its launch-1 senders are slow)."""
    slow = {(1, s, c): 150 for s in range(5) for c in range(2)}
    ex = Exchange(6, 2, 2, counter=False, drain="fence", stall=slow,
                  faults={"no_drain": {(0, 4, 1)}, "no_reset": {(0, 5)}})
    return ex.run(), roots([("MT401", 4, 1), (STALE, 5, None)],
                           "the count that overtook rank 4's rows; rank 5's cnt left at last launch's counts")


@case
def two_dead_rank_and_invalid_expert():
    """Classic, one round: rank 1 core 0 stops right after a payload put, and rank 3 routes token
    1 top-k 1 to expert 12 of 8 (dst_rank 6 of 4 ranks). Written as ring dumps."""
    cl = Classic(1, keep=("dst_rank",), faults={"die": {(0, 1, 0)}, "invalid": {(0, 3, 1, 1): 12}})
    cl.tr.names = ["dispatch_classic", "combine_classic"]  # a ring names its kernels by id
    return cl.run(), roots([("MT103", 1, 0), ("MT501", 3, 0)],
                           "rank 1 core 0 stopped; the invalid route of rank 3"), {"ring": {}}
