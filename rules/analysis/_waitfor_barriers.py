"""Stuck barriers: which participants never reached the barrier instance.

A barrier instance is the k-th barrier of one scope within one launch on
every participant (the epoch-counter barriers of SHMEM and DeepEP's
barrier_block both work this way).  Participants: for scope core, the cores
of the same rank; for all / team, every rank of the manifest times the cores
that ever ran a barrier of that scope, so a rank that died before its first
barrier still shows up as missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ingest.contract import Kind, Scope

from ._phases import barrier_instances
from ._scan import IN_BARRIER, IN_WAIT, STOPPED
from ._waitfor_producers import Verdict

if TYPE_CHECKING:  # pragma: no cover - the builder imports these modules
    from ._waitfor_build import Builder


def _table(b: Builder):
    if not hasattr(b, "_bar"):
        t = b.trace
        rows, inst, is_begin = barrier_instances(t["kind"], t["scope"], t["launch"], t.segments)
        b._bar = (rows, inst, is_begin)
        b._bar_counts = {}
    return b._bar


def stuck_rows(b: Builder) -> list[int]:
    rows = b.seg_open[b.seg_state == IN_BARRIER]
    return [int(r) for r in rows]


def node(b: Builder, i: int, row: int, Node):
    t = b.trace
    rows, inst, _ = _table(b)
    j = int(np.searchsorted(rows, row))
    n = Node(i, "MT102", row, -1, int(t["rank"][row]), int(t["core"][row]), int(t["seq"][row]),
             int(t["launch"][row]))
    site = int(t["site"][row])
    n.site = None if site == t.null("site") else site
    n.scope = int(t["scope"][row])
    n.instance = int(inst[j])
    return n


def _counts(b: Builder, launch: int, scope: int, begins: bool = True) -> np.ndarray:
    """Barrier begins (or ends) of (launch, scope) reached per segment."""
    rows, inst, is_begin = _table(b)
    k = (launch, scope, begins)
    if k not in b._bar_counts:
        t = b.trace
        sel = (is_begin == int(begins)) & (t["launch"][rows] == launch) & (t["scope"][rows] == scope)
        seg_of = np.searchsorted(t.segments, rows[sel], side="right") - 1
        counts = np.zeros(len(t.segments) - 1, np.int64)
        np.maximum.at(counts, seg_of, inst[sel].astype(np.int64))
        b._bar_counts[k] = counts
    return b._bar_counts[k]


def participants(b: Builder, n) -> list[tuple[int, int]]:
    if n.scope == Scope.CORE:
        return [(n.rank, int(c)) for c in b.seg_core[b.seg_rank == n.rank]]
    rows, _, _ = _table(b)
    t = b.trace
    cores = np.unique(t["core"][rows[t["scope"][rows] == n.scope]]).tolist()
    return [(r, int(c)) for r in range(b.ranks) for c in cores]


def explain(b: Builder, n) -> None:
    counts = _counts(b, n.launch, n.scope)
    ends = _counts(b, n.launch, n.scope, begins=False)
    seg_at = {(int(r), int(c)): s for s, (r, c) in enumerate(zip(b.seg_rank, b.seg_core))}
    seen_missing: set[int] = set()
    for r, c in participants(b, n):
        if r in b.missing:
            if r not in seen_missing:
                seen_missing.add(r)
                n.verdicts.append(Verdict(r, "barrier", "missing", f"rank {r}: its dump is missing",
                                          causes=(("MT103", b.stop_key(r)),), gap=f"no events from rank {r}"))
            continue
        s = seg_at.get((r, c))
        who = f"rank {r} core {c}"
        if s is None:
            n.verdicts.append(Verdict(r, "barrier", "unknown", f"{who} has no events at all",
                                      gap=f"no events from {who}"))
            continue
        if counts[s] >= n.instance:
            # Reached it, never left it, and stuck in a wait: the barrier's own wait (a
            # cross-rank barrier every core records, run by one core's waits) holds it up.
            if ends[s] < n.instance and int(b.seg_state[s]) == IN_WAIT and int(b.seg_last_launch[s]) == n.launch \
                    and (r, c) != (n.rank, n.core):
                e = b.node_at_row.get(int(b.seg_open[s]))
                if e is not None:
                    n.verdicts.append(Verdict(r, "barrier", "stuck", f"rank {r} core {c} entered it and is stuck "
                                              f"inside it ({b.node_text(e)})", edges=(e,),
                                              gap=b.gap_of_core(r, c)))
            continue
        last = int(b.seg_last_launch[s])
        state = int(b.seg_state[s])
        gap = b.gap_of_core(r, c)
        if last == n.launch and state in (IN_WAIT, IN_BARRIER):
            e = b.node_at_row.get(int(b.seg_open[s]))
            n.verdicts.append(Verdict(r, "barrier", "stuck", f"{who} never reached it: it is itself stuck "
                                      f"({b.node_text(e)})", edges=(e,) if e is not None else (), gap=gap))
        elif last == n.launch and state == STOPPED or last < n.launch:
            n.verdicts.append(Verdict(r, "barrier", "stopped" if last == n.launch else "not-started",
                                      f"{who} never reached it: its trace ends "
                                      + ("mid-kernel" if last == n.launch else f"after launch {last}"),
                                      causes=(("MT103", b.stop_key(r)),), gap=gap))
        elif b.trace.intact_from.get((r, c), 0) > n.launch:
            # Its barrier count starts at its first surviving event: the entries may be lost.
            n.verdicts.append(Verdict(r, "barrier", "unknown", f"{who}: unknown: {gap or 'events lost'}, so "
                                      f"whether it entered barrier #{n.instance} is not in the trace", gap=gap))
        else:
            held = _held_by_siblings(b, s, n.launch)
            if held:
                # It ended its kernel; the next kernel of the launch (the one with this barrier)
                # starts on its rank only once every core ended that one (stream order).
                n.verdicts.append(Verdict(r, "barrier", "stuck", f"{who} finished its kernel; the next one waits "
                                          f"for its rank's other cores (stream order): "
                                          + "; ".join(f"rank {r} {b.node_text(e)}" for e in held[:2]),
                                          edges=tuple(held), gap=gap))
                continue
            n.verdicts.append(Verdict(r, "barrier", "skipped", f"{who} finished launch {n.launch} without "
                                      f"entering barrier #{n.instance}: a code path skips it", gap=gap))


def _held_by_siblings(b: Builder, s: int, launch: int) -> list[int]:
    """Stuck nodes of the other cores of segment s's rank in ``launch``, when s's trace ends with a
    kernel_end: s cannot start its rank's next kernel before they end theirs."""
    t = b.trace
    last_row = int(t.segments[s + 1]) - 1
    if int(t["kind"][last_row]) != int(Kind.KERNEL_END):
        return []
    r = int(b.seg_rank[s])
    out = []
    for o in np.flatnonzero(b.seg_rank == r).tolist():
        if o != s and int(b.seg_last_launch[o]) == launch and int(b.seg_state[o]) in (IN_WAIT, IN_BARRIER):
            e = b.node_at_row.get(int(b.seg_open[o]))
            if e is not None:
                out.append(e)
    return out
