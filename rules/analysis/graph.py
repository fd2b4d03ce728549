"""Graph algorithms the analyses and the engine share (one implementation each)."""

from __future__ import annotations

from typing import Sequence


def strongly_connected(edges: Sequence[Sequence[int]]) -> list[list[int]]:
    """Tarjan's strongly connected components of nodes 0..n-1 (``edges[v]``: v's successors), each
    emitted after every component it reaches (sinks first); iterative, so a chain of stuck waits or
    of symptoms thousands deep does not hit the recursion limit."""
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
