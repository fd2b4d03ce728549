"""Corpus traces of issue 18: cut prefixes at other points than ``classic_cut_prefix``'s, and one
defect seen at many places (which must stay one root class).

A cut here is a JSON-lines dump whose cores start above seq 0: a buffer flushed late, at one real
time for every core, or from each core's own point (``{(rank, core): seq}``: that core's dump
starts at its event ``seq``). Whatever the cut hides (a reset, a wait's begin, a peer's write)
may only weaken a finding to a partial-trace note: a clean run stays clean.
"""

from __future__ import annotations

from .classic import Classic
from .generation import Generation
from .reduce_scatter import ReduceScatter
from .registry import case, clean, roots
from .udma_counts import UdmaCounts


def seq_of(tr, rank, core, launch, kind, nth=0, **fields):
    """The seq of the ``nth`` event of ``kind`` (with ``fields``) on (rank, core) in ``launch``."""
    hits = [e["seq"] for e in tr.events if (e["rank"], e["core"], e["launch"], e["kind"]) == (rank, core, launch, kind)
            and all(e.get(k) == v for k, v in fields.items())]
    return hits[nth]


def time_of(tr, rank, core, seq):
    return next(e["_t"] for e in tr.events if (e["rank"], e["core"], e["seq"]) == (rank, core, seq))


@case
def udma_cut_after_signal():
    """Issue 18 item 4: two clean launches of the UDMA count exchange as JSON lines, but rank 3
    core 0's dump starts right after its launch-1 done signal to rank 0 (everything before is
    cut; the other cores are whole). Rank 0's wait on done[3] in launch 1 ends on that signal,
    which the trace no longer holds, and no event of rank 3 in the trace writes done[3] at all:
    a missing write of a rank never seen writing the word is still a gap, not a stale flag."""
    tr = UdmaCounts(2).run()
    signal = seq_of(tr, 3, 0, 1, "signal", peer=0)
    return tr, clean("rank 3 core 0 cut after its done signal: partial-trace notes only"), \
        {"cut_before": {(3, 0): signal + 1}}


@case
def udma_cut_each_core():
    """The UDMA count exchange with every core's dump starting at its own point of launch 0
    (just after its first udma quiet, its first done signal, or its reset writes): some cores
    lost their launch-0 resets, some the adds a peer's counts rest on."""
    tr = UdmaCounts(2).run()
    cut = {(r, c): seq_of(tr, r, c, 0, ("quiet", "signal")[(r + c) % 2]) + 1 for r in range(4) for c in range(2)}
    cut[(1, 0)] = seq_of(tr, 1, 0, 0, "write", nth=1) + 1  # after rank 1's resets of recv_count and done
    return tr, clean("each core cut at its own point of launch 0: notes only"), {"cut_before": cut}


@case
def classic_cut_after_reset():
    """Two clean classic rounds cut (every core at one real time) right after rank 1 core 0's
    first ready reset of round 1: its round-0 resets and the round-1 puts before the cut are gone."""
    tr = Classic(2).run()
    reset = seq_of(tr, 1, 0, 1, "write", region="ready")
    return tr, clean("cut right after a reset: notes only"), {"cut_before": time_of(tr, 1, 0, reset) + 1}


@case
def classic_cut_mid_wait():
    """Two clean classic rounds; each core 0's dump starts between the wait_begin and the
    wait_end of its second count wait of round 1 (a wait_end with no begin), each core 1's at
    its round-1 core barrier."""
    tr = Classic(2).run()
    cut = {}
    for r in range(4):
        cut[(r, 0)] = seq_of(tr, r, 0, 1, "wait_end", nth=1)
        cut[(r, 1)] = seq_of(tr, r, 1, 1, "barrier_begin")
    return tr, clean("cut mid-wait: notes only"), {"cut_before": cut}


@case
def classic_cut_before_round_two_wait():
    """Two clean classic rounds; every core 0's dump starts right before its first wait of
    round 1 (all of round 0, and round 1's sends and routes, are cut); core 1 is whole."""
    tr = Classic(2).run()
    cut = {(r, 0): seq_of(tr, r, 0, 1, "wait_begin") for r in range(4)}
    return tr, clean("cut before the first wait of round 2: notes only"), {"cut_before": cut}


@case
def generation_cut_each_rank():
    """Two clean launches of the generation barrier; each rank's dump starts at its own point of
    launch 0 (rank r after its r-th barrier-1 signal): the signals a peer's waits ended on are cut."""
    tr = Generation(2).run()
    cut = {(r, 0): seq_of(tr, r, 0, 0, "signal", nth=r) + 1 for r in range(4)}
    return tr, clean("generation signals cut: notes only"), {"cut_before": cut}


@case
def rs_cut_inside_atomic_window():
    """Two clean reduce-scatter launches as JSON lines; rank 2's cores start inside launch 0's
    atomic window (after ``atomic_mode add``, core 0) and after its first get (core 1)."""
    tr = ReduceScatter(2, layout="all").run()
    cut = {(2, 0): seq_of(tr, 2, 0, 0, "atomic_mode") + 1, (2, 1): seq_of(tr, 2, 1, 0, "get") + 1}
    return tr, clean("cut inside an atomic window: notes only"), {"cut_before": cut}



@case
def udma_roce_amo_unquieted_two_peers():
    """Issue 18 item 5: the UDMA count exchange over RoCE atomics, and rank 1 core 0 (serving
    ranks 0 and 2) calls no roce quiet in either launch: its adds to both peers are relied on by
    its done signals before they land, and the peers' resets of recv_count in launch 1 race the
    adds of launch 0 still in flight. One defect at one site: one root class (MT404, its two
    launches); the resets' races (MT203) and count mismatches (MT502) are its symptoms."""
    u = UdmaCounts(2, engine="roce", no_quiet={(g, 1, 0) for g in range(2)}, late=40)
    return u.run(), roots([("MT404", 1, 0)], "one root class: rank 1 core 0's amos relied on before a roce quiet")


@case
def udma_roce_quiet_missing_everywhere():
    """Issue 18 item 5: the same exchange where the kernel has no roce quiet at all: every core of
    every rank, both launches, relies on its RoCE adds (to every peer it serves) before they land.
    16 places of one defect: one MT404 root class, the reset races and count mismatches symptoms."""
    nq = {(g, r, c) for g in range(2) for r in range(4) for c in range(2)}
    u = UdmaCounts(2, engine="roce", no_quiet=nq, late=40)
    return u.run(), roots([("MT404", None, None)], "one root class at every core: the missing roce quiet")



@case
def udma_count_not_reset():
    """Issue 18 item 5: rank 1's core 0 never resets recv_count (a counter region, reset 0 in the
    manifest) in any of three launches, while every other rank does: each launch's adds of all four
    ranks pile onto the last one's, rank 1 reads more rows than were announced from every sender
    (MT502) and in launch 2 takes more than its capacity (MT302). One defect, one root class: MT202
    at rank 1, its launches places of the class, the mismatches and the overrun its symptoms."""
    u = UdmaCounts(3, annotated=True, keep={(g, 1, "recv_count") for g in range(3)})
    return u.run(), roots([(("MT202", "MT201"), 1, None)], "one root class: rank 1's counter never reset; "
                          "the count mismatches and the capacity overrun are symptoms")
