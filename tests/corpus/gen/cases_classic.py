"""Corpus traces of the classic dispatch/combine protocol (see classic.py for the protocol)."""

from __future__ import annotations

from .classic import Classic
from .registry import case, clean, roots


@case
def classic_clean_bare():
    """Two clean rounds; bare manifest (no index/slot_words/reset), no optional event fields."""
    return Classic(2).run(), clean("two clean rounds of dispatch + combine; bare manifest and events")


@case
def classic_clean_annotated():
    """The same two rounds with every annotation: the comparison point for the bare traces."""
    return Classic(2, annotated=True).run(), clean("two clean rounds, full manifest and optional fields")


@case
def classic_invalid_expert_9():
    """Issue 9 item 1, the headline: rank 2 routes token 1 top-k 0 to expert 9 of 8 and records the
    route as the kernel computed it, dst_rank = 9 / 2 = 4 on 4 ranks. No core serves rank 4, so
    dispatch drops the pair, and rank 2's combine (core 1, token 1) waits forever on that status."""
    cl = Classic(1, keep=("dst_rank",), faults={"invalid": {(0, 2, 1, 0): 9}})
    return cl.run(), roots([("MT501", 2, 0)], "the route with expert 9 (dst_rank 4) on rank 2 core 0; "
                           "the stuck combine wait on rank 2 core 1 is its symptom")


@case
def classic_invalid_expert_9_no_params():
    """The headline without params in the manifest: no num_experts to check against, but the route
    carries dst_rank 4, which is not a rank of a 4-rank trace: the id is out of range whatever E is."""
    cl = Classic(1, params=False, keep=("dst_rank",), faults={"invalid": {(0, 2, 1, 0): 9}})
    return cl.run(), roots([("MT501", 2, 0)], "no params; dst_rank 4 of 4 ranks proves the id invalid")


@case
def classic_invalid_expert_9_annotated():
    """The headline with every annotation (index token_topk names the producer directly)."""
    cl = Classic(1, annotated=True, faults={"invalid": {(0, 2, 1, 0): 9}})
    return cl.run(), roots([("MT501", 2, 0)], "full annotations; same single root as the bare trace")


@case
def classic_rank_dump_missing():
    """Issue 9 items 2 and 6: rank 3 died mid-dispatch (each core put one payload row, then
    nothing) and its dump is missing: no events at all. Ranks 0-2 core 0 wait for count[3*8]
    (local expert 0, src 3), which only rank 3 writes; ranks_missing = [3]."""
    cl = Classic(1, faults={"die": {(0, 3, 0), (0, 3, 1)}})
    tr = cl.run()
    tr.dropped_ranks.add(3)
    return tr, roots([("MT103", 3, None)], "the missing rank 3, located at rank 3 (not at a waiter)")


@case
def classic_rank_stops_mid_kernel():
    """Rank 1 core 0 stops right after a payload put (no quiet, no wait, no kernel_end); core 1
    finished its sends and waits in the core barrier. Its counts never reach ranks 0 and 2."""
    cl = Classic(1, faults={"die": {(0, 1, 0)}})
    return cl.run(), roots([("MT103", 1, 0)], "rank 1 core 0 stopped mid-kernel; everything else waits on it")


@case
def classic_ready_off_by_one():
    """Issue 9 item 5: rank 1 core 0 writes each ready slot of its segment on rank 2 one slot too
    far (ready[(slot+1)*8]); rank 1 owns slots 8-11 of that segment (two pairs to expert 4, slots 8
    and 9), so the writes stay in its own range: ready slots 9 and 10 written, slot 8 never. Rank 2
    core 0 hangs on slot 8 (and everything after it on rank 2's combine)."""
    cl = Classic(1, faults={"ready_shift": (0, 1, 2)})
    return cl.run(), roots([("MT105", 1, 0)], "the misdirected ready put of rank 1 core 0, not the waiter")


@case
def classic_ready_off_by_one_annotated():
    """The off-by-one with every annotation (index dispatch names rank 1 as the slot's producer)."""
    cl = Classic(1, annotated=True, faults={"ready_shift": (0, 1, 2)})
    return cl.run(), roots([("MT105", 1, 0)], "full annotations; same single root as the bare trace")


@case
def classic_status_not_reset():
    """Issue 9 item 2: every combine consumer resets its status slots to 0 after reading them but
    rank 2 core 1 (token 1) does not. In round 1 the producers are slow (their experts compute), so
    rank 2 core 1's waits are satisfied at once by round 0's 1s: a stale read of last round's rows."""
    stall = {(1, r, 0, "combine"): 60 for r in (0, 1, 3)}
    cl = Classic(2, faults={"keep_status": {(0, 2, 1), (1, 2, 1)}, "stall": stall})
    return cl.run(), roots([(("MT202", "MT201"), 2, 1)],
                           "stale-flag at the consumer that did not reset (rank 2 core 1); reset value 0 "
                           "is what every other consumer writes back after its wait")


@case
def classic_count_not_reset():
    """Issue 9 item 8: rank 1 core 0 resets every count slot to -1 after reading it except the last
    (local expert 1, src 3: a loop bound off by one). Round 1: rank 3 core 1 is slow to announce its
    count for expert 3 (2 rows this round, 1 last round); rank 1 reads the stale {1, 1} at once,
    takes 1 row, and rank 3's combine then hangs on the pair rank 1 never took."""
    cl = Classic(2, faults={"keep_count": {(0, 1, 7), (1, 1, 7)}, "stall": {(1, 3, 1, ("count", 1, 1)): 80}})
    return cl.run(), roots([(("MT202", "MT201"), 1, None)],
                           "stale count slot at its consumer rank 1; the count mismatch with rank 3's "
                           "announcement (MT502) and rank 3's hang are symptoms, not a sender fault")


@case
def classic_trap_after_timeout():
    """Issue 9 item 6: a shared-expert id (8 = num_experts) leaked into rank 0 (token 0 top-k 1) and
    rank 2 (token 1 top-k 0); routes recorded bare (no dst_rank). Both combines time out
    (wait_end outcome timeout) and trap right after, DeepEP-style: their traces end there."""
    cl = Classic(1, faults={"invalid": {(0, 0, 0, 1): 8, (0, 2, 1, 0): 8},
                            "timeout": {(0, 0, 0): 40, (0, 2, 1): 40}})
    return cl.run(), roots([("MT501", 0, 0), ("MT501", 2, 0)],
                           "the two invalid routes; the trapped ranks are not MT103 roots")


@case
def classic_route_in_send_filter():
    """Issue 9 item 9: the kernel records its routes inside the send loop (only pairs it sends, with
    dst_rank and slot), so rank 2's pair (token 1, top-k 0) with expert 9 has no route event at all.
    All the trace shows: every other pair of rank 2 is routed, this one is not, and rank 2's combine
    waits on its status slot. The best diagnosis points at rank 2's dispatch (it never sent the pair)."""
    cl = Classic(1, keep=("dst_rank", "slot"), faults={"invalid": {(0, 2, 1, 0): 9}, "routes": "filter"})
    return cl.run(), roots([(("MT501", "MT101"), 2, None)],
                           "the dropped pair is invisible: the root is at rank 2 (the owner that never "
                           "sent it), inferred from the missing route, or the stuck wait itself")


@case
def classic_cut_prefix():
    """Issue 9 item 7: two clean rounds, but the JSON-lines dump lost the start of every core (a
    buffer flushed late): each core's first event is above seq 0 and mid-kernel (no kernel_begin,
    waits whose writes are gone). The contract makes seq strictly increasing per core, gap-free
    only for rings; a JSONL core whose first event is not a kernel_begin, at seq > 0, is a cut."""
    tr = Classic(2).run()
    round0 = [e for e in tr.events if e["launch"] == 0]
    cut = round0[len(round0) * 2 // 5]["_t"]
    return tr, clean("cut prefix: whatever looks wrong lies in the gap; partial-trace notes only"), \
        {"cut_before": cut}


@case
def classic_barrier_all_cores_clean():
    """Issue 9 item 4: two clean rounds with the seed's BARRIER_ALL_RANKS() before the combine
    sends, an opaque barrier_all recorded on every core. Every combine wait, on core 0 and core
    1, is satisfied by status puts issued after that barrier, over flags last round also set."""
    return Classic(2, barrier="all").run(), clean("legal layout: barrier_all on every core")


@case
def classic_barrier_core0_clean():
    """The same two rounds with the barrier recorded on core 0 only, every core following it
    through a scope-core barrier before and after: core 1 never records a scope-all barrier,
    yet its combine waits come after it (through the core barriers) like core 0's."""
    return Classic(2, barrier="core0").run(), clean("legal layout: core 0 + core-scope barriers")


@case
def classic_barrier_all_cores_off_by_one():
    """The ready off-by-one (rank 1 core 0 writes rank 2's ready slots one too far) with the
    barrier_all on every core: rank 2 core 0 hangs in dispatch, so rank 2 never reaches the
    combine barrier, and every core of ranks 0, 1, 3 hangs inside it."""
    cl = Classic(1, barrier="all", faults={"ready_shift": (0, 1, 2)})
    return cl.run(), roots([("MT105", 1, 0)], "the misdirected ready put; the barrier waiters on every "
                           "core are symptoms, not lost wake-ups")


@case
def classic_barrier_core0_off_by_one():
    """The same off-by-one with the barrier on core 0 only: ranks 0, 1, 3 hang with core 0 in
    the scope-all barrier and core 1 in the scope-core barrier after it."""
    cl = Classic(1, barrier="core0", faults={"ready_shift": (0, 1, 2)})
    return cl.run(), roots([("MT105", 1, 0)], "the misdirected ready put; the barrier waiters are symptoms")
