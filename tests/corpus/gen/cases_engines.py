"""Corpus traces of the UDMA / engine contract (issue 18 item 6; see udma_send.py for the protocol).

"full": every region annotation and optional field, plus the manifest's platform (Ascend950)
and transport map (udma to every peer); "bare": neither, and the amos carry no dtype unless the
name says so. The faults sit on launch 0 rank 0 core 1 (serving ranks 1 and 3), or, in the
sibling-core layouts, on launch 0 rank 0 (core 0 sends, core 1 helps).
"""

from __future__ import annotations

from .registry import case, clean, roots
from .udma_send import UdmaSend

AT = (0, 0, 1)  # (launch, rank, core) of the faulty sends


def run(u: UdmaSend, *, corrupt: bool):
    """The trace, after checking the script did what the case says (a wrong tile landed, or none)."""
    tr = u.run()
    assert bool(u.corrupt) == corrupt, u.corrupt
    return tr


# ---- MT408: a put's source reused before the quiet that completes it ----------------------
@case
def udma_send_clean_full():
    """Two clean launches of the UDMA tile send, full manifest: each staging slot is refilled only
    after ``aclshmemx_udma_quiet`` of the put that read it, RMA and AMO to a PE are separated by a
    quiet, and the count atomics are int32."""
    return run(UdmaSend(2, full=True), corrupt=False), clean("source reused only after its quiet")


@case
def udma_send_clean_bare():
    """The two clean launches with a bare manifest and no dtype on the amos (4-byte count words:
    a type UDMA carries, whatever its name)."""
    return run(UdmaSend(2, dtype=False), corrupt=False), clean("bare: nothing to flag without the optional fields")


@case
def udma_source_refill_before_quiet():
    """Full manifest: rank 0 core 1 puts to ranks 1 and 3 from the same staging slot with one UDMA
    quiet after both, refilling the slot for rank 3 before it: rank 1 receives rank 3's tile."""
    u = UdmaSend(1, full=True, faults={AT: "refill"})
    return run(u, corrupt=True), roots([("MT408", 0, 1)], "the refill of stage[8] before the UDMA quiet")


@case
def udma_source_get_refill():
    """Bare: the refill is an MTE get (from x on rank 2) into the staging slot, completed by
    ``aclshmem_quiet``, which completes no UDMA work: the put to rank 1 is still open."""
    u = UdmaSend(1, faults={AT: "get_refill"})
    return run(u, corrupt=True), roots([("MT408", 0, 1)], "the get landing in the put's source")


@case
def udma_source_mte_quiet():
    """Bare: the put is followed by ``aclshmem_quiet`` (an MTE quiet: it completes no UDMA work)
    before the refill; the UDMA quiet comes only after both puts."""
    u = UdmaSend(1, faults={AT: "mte_quiet"})
    return run(u, corrupt=True), roots([("MT408", 0, 1)], "an MTE quiet does not complete a UDMA put")


@case
def udma_source_tail_word():
    """Bare: after each put of its 8-word tile, rank 0 core 1 writes the tile's last word (its
    trailer) into the staging slot before the quiet: one word inside the source range."""
    u = UdmaSend(1, faults={AT: "tail_word"})
    return run(u, corrupt=True), roots([("MT408", 0, 1)], "a one-word write inside the 8-word source")


@case
def udma_source_sibling_clean():
    """Two clean launches in the sibling-core layout: core 1 fills core 0's staging slot, a
    sync_all hands it over, core 0 puts and quiets, a sync_all hands it back, core 1 refills."""
    return run(UdmaSend(2, helper="fill"), corrupt=False), clean("sync_all after the quiet orders the refill")


@case
def udma_source_sibling_refill():
    """Full manifest, sibling-core layout: on rank 0 core 0 hands the slot back (sync_all) before
    its put's UDMA quiet, and core 1 refills it while the engine may still read it."""
    u = UdmaSend(1, full=True, helper="fill", early_handback=True)
    return run(u, corrupt=True), roots([("MT408", 0, 1)], "core 1's refill, no barrier after core 0's quiet")


@case
def udma_source_sibling_refill_bare():
    """The sibling-core refill with a bare manifest."""
    u = UdmaSend(1, helper="fill", early_handback=True)
    return run(u, corrupt=True), roots([("MT408", 0, 1)], "bare: the same single root")


@case
def udma_source_sibling_copy():
    """Bare, sibling-core layout: core 1 refills the slot with a put to its own rank (a GM-to-GM
    copy from x, completed by an MTE quiet) after the early hand-back."""
    u = UdmaSend(1, helper="fill", fill_put=True, early_handback=True)
    return run(u, corrupt=True), roots([("MT408", 0, 1)], "a put to self landing in the source")


@case
def udma_source_sibling_copy_clean():
    """Two clean launches of the self-copy refill, handed back after the quiet."""
    return run(UdmaSend(2, helper="fill", fill_put=True), corrupt=False), clean("self-copy after the hand-back")


# ---- MT603: RMA and AMO to one PE outstanding together ------------------------------------
@case
def udma_rma_amo_same_core():
    """Bare: rank 0 core 1 issues each count atomic before the quiet of the tile put to the same
    PE (one quiet after both)."""
    u = UdmaSend(1, faults={AT: "amo_unquieted"})
    return run(u, corrupt=False), roots([("MT603", 0, 1), ("MT401", None, None, "optional")],
                                        "the amo issued while the put to that PE is open")


@case
def udma_rma_amo_sibling_clean():
    """Two clean launches with core 1 adding the counts of core 0's tiles, after a sync_all that
    follows core 0's UDMA quiet of the put."""
    return run(UdmaSend(2, helper="count"), corrupt=False), clean("the barrier orders the put's quiet first")


@case
def udma_rma_amo_sibling_bare():
    """Bare: on rank 0 core 0 passes the sync_all before its put's UDMA quiet, so core 1's count
    atomic to the same PE is issued while the put may be outstanding (one UDMA queue per PE)."""
    u = UdmaSend(1, helper="count", early_handback=True)
    return run(u, corrupt=False), roots([("MT603", 0, 1)], "core 1's amo against core 0's open put")


@case
def udma_rma_amo_sibling_full():
    """The sibling-core RMA/AMO overlap with a full manifest."""
    u = UdmaSend(1, full=True, helper="count", early_handback=True)
    return run(u, corrupt=False), roots([("MT603", 0, 1)], "full: the same single root")


# ---- MT703: a half atomic over UDMA -----------------------------------------------------
@case
def udma_half_atomic_bare():
    """Bare: rank 0 core 1 adds each tile's weight into wsum (2-byte elements) with a UDMA atomic
    whose event names no dtype; the engine API returns and the trace goes on."""
    u = UdmaSend(1, dtype=False, faults={AT: "half_weight"})
    return run(u, corrupt=False), roots([("MT703", 0, 1)], "a 2-byte atomic over UDMA, inferred from elem_bytes")


@case
def udma_half_atomic_abort_bare():
    """Bare, no dtype: the unified API aborts at the half atomic over UDMA; the core's trace ends
    at that amo and ranks 1 and 3 wait for its done flags forever."""
    u = UdmaSend(1, dtype=False, faults={AT: "half_abort"})
    return run(u, corrupt=False), roots([("MT703", 0, 1)], "the abort; the stuck waits are its symptoms")


@case
def udma_half_atomic_full():
    """Full manifest (transport udma), dtype half on the amo; the trace goes on."""
    u = UdmaSend(1, full=True, faults={AT: "half_weight"})
    return run(u, corrupt=False), roots([("MT703", 0, 1)], "dtype half over UDMA")


@case
def udma_float_atomic_clean():
    """Two clean launches adding each tile's weight as a float UDMA atomic (wsumf, 4-byte
    elements, dtype float): a type UDMA supports."""
    u = UdmaSend(2, faults={(g, 0, 1): "float_weight" for g in range(2)})
    return run(u, corrupt=False), clean("float atomics over UDMA are supported")
