"""The one slot-index reading (rules.analysis.slots) that the wait-for graph and inference share."""

from __future__ import annotations

import numpy as np
from test_waitfor import CLASSIC, KB, KE, hits, open_fixture, wb, write_trace

from ingest.contract import Kind
from rules.analysis.slots import NOBODY, UNKNOWN, Routes, SlotParams, producer_of
from rules.analysis.wait_for import wait_for as analyze


class _Routes:
    """A trace of route events only, with the columns ``Routes.of`` reads."""

    def __init__(self, routes: list[tuple[int, int, int, int, int]]):  # (rank, launch, token, topk, expert)
        cols = np.array(routes, np.int64).reshape(-1, 5).T
        self.n = cols.shape[1]
        self._cols = {"rank": cols[0], "launch": cols[1], "token": cols[2], "topk": cols[3], "expert": cols[4],
                      "kind": np.full(self.n, int(Kind.ROUTE), np.int8)}

    def load(self, names):
        pass

    def __getitem__(self, name):
        return self._cols[name]


PARAMS = SlotParams(ranks=2, topk=2, tokens=2, experts_per_rank=2, num_experts=4)


def test_token_topk_names_the_expert_owner_or_nobody():
    # Rank 0, launch 0: token 0 -> experts 3 and 0; token 1 topk 0 -> expert 9 (out of range),
    # topk 1 -> -1 (negative). Token 1 of launch 1 has no route.
    routes = Routes.of(_Routes([(0, 0, 0, 0, 3), (0, 0, 0, 1, 0), (0, 0, 1, 0, 9), (0, 0, 1, 1, -1),
                                (0, 1, 0, 0, 2)]))
    got = producer_of("token_topk", np.arange(4), 0, 0, routes, PARAMS)
    assert got.tolist() == [1, 0, NOBODY, NOBODY]
    assert producer_of("token_topk", [0, 2], 0, 1, routes, PARAMS).tolist() == [1, UNKNOWN]


def test_token_topk_duplicate_route_first_recorded_wins():
    routes = Routes.of(_Routes([(0, 0, 0, 0, 3), (0, 0, 0, 0, 0)]))
    assert producer_of("token_topk", 0, 0, 0, routes, PARAMS).tolist() == 1


def test_the_other_indexes_and_unknown_parameters():
    routes = Routes.of(_Routes([]))
    slots = np.arange(10)
    assert producer_of("rank", slots[:3], 0, 0, routes, PARAMS).tolist() == [0, 1, NOBODY]
    assert producer_of("segment", slots[:4], 1, 0, routes, PARAMS).tolist() == [0, 1, 0, 1]
    # (src_rank * E_l + local_expert) * (B * K) + i, B * K = 4, E_l = 2: src 1 from slot 8.
    assert producer_of("dispatch", slots, 1, 0, routes, PARAMS).tolist() == [0] * 8 + [1] * 2
    assert producer_of("token_topk", slots[:2], 0, 0, routes, PARAMS).tolist() == [UNKNOWN] * 2
    bare = SlotParams(ranks=2)
    for index in ("token_topk", "dispatch", None):
        assert producer_of(index, slots[:2], 0, 0, routes, bare).tolist() == [UNKNOWN] * 2


def test_wait_for_names_the_expert_owner_not_the_routes_dst_rank(tmp_path):
    # Where the two slot formulas disagreed: the wait-for graph took a route's in-range dst_rank
    # as the producer, inference the owner of its expert. The contract (SLOT_INDEX: "written by
    # the rank owning the route's expert") says the owner. Rank 0's kernel computed dst_rank 0
    # for token 1 topk 0, whose expert 3 rank 1 owns (2 experts per rank): rank 1 owes the slot,
    # and finished without writing it.
    d = write_trace(tmp_path / "t", CLASSIC, {
        (0, 0): [KB, {"kind": "route", "token": 1, "topk": 0, "expert": 3, "dst_rank": 0},
                 wb("status", 16, words=8)],
        (1, 0): [KB, KE],
    })
    t = open_fixture(d, tmp_path)
    (n,) = analyze(t).waits()
    assert [(v.rank, v.via) for v in n.verdicts] == [(1, "route")]
    (h,) = hits(t, "MT101")
    assert "rank 1 (owns expert 3" in h.message


def test_wait_for_an_expert_past_the_last_rank_has_no_producer(tmp_path):
    # num_experts 8 but 2 ranks x 2 local experts: expert 5 passes the range check, yet no rank
    # owns it. The old formula named rank 2, which does not exist.
    man = {**CLASSIC, "params": {**CLASSIC["params"], "num_experts": 8}}
    d = write_trace(tmp_path / "t", man, {
        (0, 0): [KB, {"kind": "route", "token": 1, "topk": 0, "expert": 5}, wb("status", 16, words=8)],
        (1, 0): [KB, KE],
    })
    (n,) = analyze(open_fixture(d, tmp_path)).waits()
    assert [(v.rank, v.status) for v in n.verdicts] == [(None, "invalid-route")]
