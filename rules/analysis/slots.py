"""Which rank writes a slot of an indexed region: the one reading of ``ingest.manifest.SLOT_INDEX``.

Two analyses ask it: the wait-for graph (the producer a stuck wait expects,
and whether a write went to a slot its writer does not own) and inference
(which index names the writers of the writes seen into a region). They ask
the same question of the same contract, so they share this answer.

The contract's mappings (P ranks, E_l experts per rank, B tokens, K top-k):

- ``token_topk``: slot = token*K + topk on the token owner; written by the
  rank owning the route's expert, expert // E_l. A route's ``dst_rank`` is
  what the kernel computed (docs/trace-format.md: evidence, "whatever its
  value"), not the mapping: a kernel that sends a pair elsewhere is what a
  diagnosis has to find, so it must not define who owes the slot.
- ``segment``: slot = local_expert*P + src_rank; written by src_rank.
- ``dispatch``: slot = (src_rank*E_l + local_expert)*(B*K) + i; written by src_rank.
- ``rank``: slot = the writer's rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.contract import Kind

UNKNOWN = -1  # the trace cannot say: no route recorded for the slot, or the index's parameters are unknown
NOBODY = -2  # no rank can write it: the route's expert is out of range, or the slot is past the last rank


@dataclass(frozen=True)
class SlotParams:
    """The kernel parameters the mappings read; 0 where one is unknown."""

    ranks: int
    topk: int = 0
    tokens: int = 0
    experts_per_rank: int = 0
    num_experts: int | None = None  # None: ranks * experts_per_rank

    def knows(self, index: str | None) -> bool:
        """Whether every parameter ``index`` reads is known."""
        if index == "token_topk":
            return bool(self.topk and self.experts_per_rank)
        if index == "dispatch":
            return bool(self.tokens and self.topk and self.experts_per_rank)
        return index in ("segment", "rank")


@dataclass(frozen=True, eq=False)
class Routes:
    """Every route event of a trace, found by (rank, launch, token, topk).

    Where a pair was recorded twice the first in row order answers: that is
    the one the kernel read first, and both analyses must agree on it.
    """

    keys: np.ndarray  # sorted route keys (``_key``)
    rows: np.ndarray  # the route event of each key
    experts: np.ndarray  # its expert id, int64 (as read: may be out of range)
    launches: int
    tokens: int
    topks: int

    @classmethod
    def of(cls, trace) -> Routes:
        """The routes of ``trace``'s view, built once per view (inference and the wait-for tables both ask)."""
        from ._cache import cached

        return cached(trace, "routes", lambda: cls._build(trace))

    @classmethod
    def _build(cls, trace) -> Routes:
        trace.load(["kind", "rank", "launch", "token", "topk", "expert"])
        launches = int(trace["launch"].max()) + 1 if trace.n else 1
        rows = np.flatnonzero(trace["kind"] == Kind.ROUTE)
        if not len(rows):
            empty = np.zeros(0, np.int64)
            return cls(empty, empty, empty, launches, 0, 0)
        token = trace["token"][rows].astype(np.int64)
        topk = trace["topk"][rows].astype(np.int64)
        dims = (launches, int(token.max()) + 1, int(topk.max()) + 1)
        keys = _key(trace["rank"][rows], trace["launch"][rows], token, topk, dims)
        order = np.argsort(keys, kind="stable")
        return cls(keys[order], rows[order], trace["expert"][rows[order]].astype(np.int64), *dims)

    def find(self, rank, launch, token, topk) -> np.ndarray:
        """Position (into ``keys``) of the route of each (rank, launch, token, topk); -1 where none."""
        rank, launch, token, topk = np.broadcast_arrays(*(np.asarray(x, np.int64) for x in (rank, launch, token, topk)))
        out = np.full(rank.shape, -1, np.int64)
        if not len(self.keys):
            return out
        # Out of the table's ranges a key would alias another pair's.
        inside = ((token >= 0) & (token < self.tokens) & (topk >= 0) & (topk < self.topks)
                  & (launch >= 0) & (launch < self.launches))
        key = _key(rank, launch, token, topk, (self.launches, self.tokens, self.topks))
        at = np.minimum(np.searchsorted(self.keys, key), len(self.keys) - 1)
        hit = inside & (self.keys[at] == key)
        out[hit] = at[hit]
        return out

    def experts_at(self, at: np.ndarray) -> np.ndarray:
        """The expert id of the route at each position ``at``; -1 where ``at`` is -1 (no route).
        An expert id as read may be -1 itself: where that matters, test ``at``."""
        if not len(self.experts):
            return np.full(np.shape(at), -1, np.int64)
        return np.where(at >= 0, self.experts[np.maximum(at, 0)], -1)

    def rows_of(self, rank, launch, token, topk) -> np.ndarray:
        """The route event of each (rank, launch, token, topk); -1 where none."""
        at = self.find(rank, launch, token, topk)
        if not len(self.rows):
            return at
        return np.where(at >= 0, self.rows[np.maximum(at, 0)], -1)


def _key(rank, launch, token, topk, dims: tuple[int, int, int]) -> np.ndarray:
    launches, tokens, topks = dims
    return ((np.asarray(rank, np.int64) * launches + np.asarray(launch, np.int64)) * tokens
            + np.asarray(token, np.int64)) * topks + np.asarray(topk, np.int64)


def producer_of(index: str | None, slot, owner, launch, routes: Routes, params: SlotParams) -> np.ndarray:
    """The rank that writes each ``slot`` of rank ``owner``'s region in ``launch``, by the region's
    ``index``: a rank, ``UNKNOWN`` or ``NOBODY``. ``slot``, ``owner`` and ``launch`` broadcast."""
    slot, owner, launch = np.broadcast_arrays(*(np.asarray(x, np.int64) for x in (slot, owner, launch)))
    if not params.knows(index):
        return np.full(slot.shape, UNKNOWN, np.int64)
    ranks = params.ranks
    if index == "rank":
        return np.where((slot >= 0) & (slot < ranks), slot, NOBODY)
    if index == "segment":
        return slot % ranks
    per_rank, topk = params.experts_per_rank, params.topk
    if index == "dispatch":
        return (slot // (params.tokens * topk)) // per_rank
    at = routes.find(owner, launch, slot // topk, slot % topk)
    expert = routes.experts_at(at)
    num_experts = params.num_experts if params.num_experts is not None else ranks * per_rank
    # An expert id out of range is owned by no rank (MT501): nobody will write its slot.
    owner_rank = np.where(expert >= 0, expert, 0) // per_rank
    valid = (expert >= 0) & (expert < num_experts) & (owner_rank < ranks)
    return np.where(at >= 0, np.where(valid, owner_rank, NOBODY), UNKNOWN)
