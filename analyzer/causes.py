"""The cause graph of a report: findings as nodes, ``caused_by`` as edges symptom -> cause.

Kept apart from the engine because it is pure graph work on integer indices,
testable without a trace.
"""

from __future__ import annotations

from typing import Any, Sequence


def strongly_connected(edges: Sequence[Sequence[int]]) -> list[list[int]]:
    """Tarjan's components, iteratively (a long chain of symptoms must not hit the recursion limit)."""
    n = len(edges)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    comps: list[list[int]] = []
    counter = 0
    for start in range(n):
        if index[start] != -1:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            if i < len(edges[v]):
                work.append((v, i + 1))
                w = edges[v][i]
                if index[w] == -1:
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                comps.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comps


def break_cycles(causes: list[list[int]], order_key: Sequence[Any]) -> dict[int, list[int]]:
    """Make every cycle with no cause outside it end in one root; returns {root: cycle members}.

    The root is the member with the smallest ``order_key``; only its edges
    into the cycle are removed, so the others stay its (transitive) symptoms.
    A cycle that does have an outside cause keeps its edges: its members are
    symptoms of that cause and need no root of their own.
    """
    out: dict[int, list[int]] = {}
    for comp in strongly_connected(causes):
        if len(comp) < 2:
            continue
        members = set(comp)
        if any(c not in members for v in comp for c in causes[v]):
            continue
        root = min(comp, key=lambda v: order_key[v])
        causes[root] = [c for c in causes[root] if c not in members]
        out[root] = sorted(comp)
    return out


def explained_by(causes: Sequence[Sequence[int]]) -> list[dict[int, int]]:
    """For each node, every node that reaches it through cause edges, with its distance (1 = direct)."""
    n = len(causes)
    symptoms: list[list[int]] = [[] for _ in range(n)]
    for v, cs in enumerate(causes):
        for c in cs:
            symptoms[c].append(v)
    out: list[dict[int, int]] = []
    for v in range(n):
        depth: dict[int, int] = {}
        frontier, d = list(symptoms[v]), 1
        while frontier:  # breadth first, so each symptom gets its shortest distance
            nxt = []
            for s in frontier:
                if s != v and s not in depth:
                    depth[s] = d
                    nxt.extend(symptoms[s])
            frontier, d = nxt, d + 1
        out.append(depth)
    return out
