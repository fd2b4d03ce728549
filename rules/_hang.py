"""What the hang rules (MT101-MT108) share in their typed hits: the stuck nodes they name, the
evidence rows of members whose roles differ, and the pieces of wording more than one of them uses.

A hang rule's member names a variable list of rows (a stuck wait's producers' writes, the
last event of each stopped core, every member of a cycle), each with its role; a batch has
one tuple of roles for all members (``HitColumns.rows``), so ``evidence`` lays each member's
rows on one sequence of roles that keeps every member's order (a report lists the evidence
in that order, its first row places the finding).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .analysis.wait_for import stuck_words


class StuckNode(NamedTuple):
    """A stuck wait (MT101) or barrier (MT102) of the wait-for graph, as another hang names it."""

    code: str
    rank: int
    core: int
    seq: int
    launch: int
    instance: int  # a barrier's number within its launch and scope
    timed_out: bool
    region: str | None  # the waited region's name (None: a barrier)
    slot: int

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.rank, self.core, self.seq)


def stuck_node(wf, n) -> StuckNode:
    """The ``StuckNode`` of the wait-for graph ``wf``'s node ``n``."""
    region = wf.region_names[n.region] if n.code == "MT101" else None
    return StuckNode(n.code, n.rank, n.core, n.seq, n.launch, n.instance, n.end_row >= 0, region, n.slot)


def stuck_text(n: StuckNode) -> str:
    """'core 1 waits on ready[3]', 'core 0 in barrier #2 of launch 1': what the node is stuck in,
    worded as the wait-for graph words it."""
    return stuck_words(n.code, n.core, n.launch, n.instance, n.timed_out, n.region, n.slot)


def listed(texts, shown: int, more: str = "") -> str:
    """The first ``shown`` of ``texts`` joined by "; ", then how many more there are."""
    out = "; ".join(texts[:shown])
    return out + (f"; and {len(texts) - shown} more{more}" if len(texts) > shown else "")


def gap_note(gaps) -> str:
    """The note closing a message whose explanation touches lost parts of the trace."""
    return f" [gap: {'; '.join(gaps)}]" if gaps else ""


def producers_json(verdicts) -> list[dict]:
    """A stuck node's verdicts on its expected producers, as its extra lists them."""
    return [v.to_json() for v in verdicts]


def roots_json(roots) -> list[list]:
    """A stuck node's root causes (code, key), as its extra lists them."""
    return [[c, list(k)] for c, k in roots]


def evidence(members) -> tuple[tuple[str, ...], np.ndarray]:
    """``members``' evidence (per member, its (role, row) pairs in order) as a batch's ``roles`` and
    (members, roles) ``rows``, -1 where a member lacks a role. A role may repeat; the roles are
    one sequence that holds each member's as a subsequence, so each member's rows keep their order."""
    roles: list[str] = []
    for rows in members:  # merge each member's roles in: reuse the next equal one, else insert one
        at = 0
        for role, _ in rows:
            found = _next(roles, role, at)
            if found < 0:
                roles.insert(at, role)
                found = at
            at = found + 1
    out = np.full((len(members), len(roles)), -1, np.int64)
    for i, rows in enumerate(members):  # a subsequence of roles: the leftmost match finds a place for each
        at = 0
        for role, row in rows:
            at = _next(roles, role, at)
            out[i, at] = row
            at += 1
    return tuple(roles), out


def _next(roles: list[str], role: str, at: int) -> int:
    """The first index from ``at`` of ``role`` in ``roles``, -1 if none."""
    try:
        return roles.index(role, at)
    except ValueError:
        return -1
