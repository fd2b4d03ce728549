"""The cause graph's linear passes (analyzer._cause_graph, numba) against plain walks over lists."""

from __future__ import annotations

import random

import pytest

from _drafts import csr

from analyzer._cause_graph import break_cycles, explained
from rules.analysis.graph import strongly_connected


def _graph(rng: random.Random, n: int, edges: int, back: float) -> list[list[int]]:
    """Random causes: mostly to a lower node (acyclic), a share ``back`` to a higher one (cycles)."""
    causes: list[list[int]] = [[] for _ in range(n)]
    for _ in range(edges):
        v = rng.randrange(1, n)
        c = rng.randrange(0, v) if rng.random() >= back else rng.randrange(v, n)
        if c != v and c not in causes[v]:
            causes[v].append(c)
    return causes


def _explained_by(causes):
    """Every node's reach over the reversed edges, breadth first, as {node: distance} in the order found."""
    symptoms: list[list[int]] = [[] for _ in causes]
    for v, cs in enumerate(causes):
        for c in cs:
            symptoms[c].append(v)
    out = []
    for v in range(len(causes)):
        depth: dict[int, int] = {}
        frontier, d = list(symptoms[v]), 1
        while frontier:
            nxt = []
            for s in frontier:
                if s != v and s not in depth:
                    depth[s] = d
                    nxt.extend(symptoms[s])
            frontier, d = nxt, d + 1
        out.append(depth)
    return out


def _break_cycles(causes, rank):
    out = {}
    for comp in strongly_connected(causes):
        if len(comp) < 2:
            continue
        members = set(comp)
        if any(c not in members for v in comp for c in causes[v]):
            continue
        root = min(comp, key=lambda v: rank[v])
        causes[root] = [c for c in causes[root] if c not in members]
        out[root] = sorted(comp)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_reach_and_cycles_are_the_plain_walks(seed):
    rng = random.Random(seed)
    n = rng.choice((1, 2, 8, 60, 400))
    causes = _graph(rng, n, rng.randrange(0, 3 * n), rng.choice((0.0, 0.02, 0.3)))
    rank = [rng.randrange(n) for _ in range(n)]
    plain = [list(c) for c in causes]
    cut_starts, cut_targets, cycles = break_cycles(*csr(causes), rank)
    assert cycles == _break_cycles(plain, rank)
    assert [cut_targets[cut_starts[v]:cut_starts[v + 1]].tolist() for v in range(n)] == plain
    starts, nodes, depths = explained(cut_starts, cut_targets)
    want = _explained_by(plain)
    for v in range(n):
        row = slice(starts[v], starts[v + 1])
        assert list(zip(nodes[row].tolist(), depths[row].tolist())) == list(want[v].items())


def test_the_sample_has_cycles_and_long_chains():
    """The cases above are not all acyclic, and not all shallow."""
    rng = random.Random(3)
    cyclic = sum(bool(break_cycles(*csr(_graph(rng, 60, 120, 0.3)), list(range(60)))[2]) for _ in range(20))
    chain = [[v - 1] if v else [] for v in range(50)]
    starts, nodes, depths = explained(*csr(chain))
    assert cyclic > 0 and starts[1] - starts[0] == 49 and depths.max() == 49
