"""numba kernels of the cause graph (``analyzer.causes``): typed arrays in, arrays out.

The graph is in CSR form: node v's edges are ``targets[starts[v]:starts[v + 1]]``.
A report can have a million findings, most of them symptoms of a few roots;
these passes are linear in the nodes plus what they output, where the same
walks over Python lists cost ~20 us a finding.
"""

from __future__ import annotations

import numpy as np

from ingest._jit import kernel


@kernel
def on_or_behind_cycles(starts: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per node, whether it survives peeling the nodes no edge enters (Kahn's order): every node on
    a cycle does, and the nodes its edges lead to; on an acyclic graph, none."""
    n = len(starts) - 1
    entering = np.zeros(n, np.int64)
    for e in range(len(targets)):
        entering[targets[e]] += 1
    queue = np.empty(n, np.int64)
    tail = 0
    for v in range(n):
        if entering[v] == 0:
            queue[tail] = v
            tail += 1
    head = 0
    while head < tail:
        v = queue[head]
        head += 1
        for e in range(starts[v], starts[v + 1]):
            w = targets[e]
            entering[w] -= 1
            if entering[w] == 0:
                queue[tail] = w
                tail += 1
    return entering > 0


@kernel
def reach(fill: bool, starts: np.ndarray, targets: np.ndarray, out_starts: np.ndarray,
          nodes: np.ndarray, depths: np.ndarray, counts: np.ndarray) -> None:
    """Every node's reach, breadth first: the nodes (other than itself) its edges lead to,
    transitively, each once, in the order first found, with its distance (1: a direct edge).
    Called twice: without ``fill`` it writes each node's count to ``counts``; with it, the nodes and
    distances to ``nodes`` / ``depths`` from ``out_starts`` (the counts' exclusive cumulative sum)."""
    n = len(starts) - 1
    seen = np.full(n, -1, np.int64)
    queue = np.empty(max(len(targets), 1), np.int64)  # each node found once per walk, by an edge
    level = np.empty(max(len(targets), 1), np.int64)
    for v in range(n):
        if starts[v] == starts[v + 1]:
            continue
        seen[v] = v
        head = tail = 0
        for e in range(starts[v], starts[v + 1]):
            w = targets[e]
            if seen[w] != v:
                seen[w] = v
                queue[tail] = w
                level[tail] = 1
                tail += 1
        while head < tail:
            s = queue[head]
            d = level[head] + 1
            head += 1
            for e in range(starts[s], starts[s + 1]):
                w = targets[e]
                if seen[w] != v:
                    seen[w] = v
                    queue[tail] = w
                    level[tail] = d
                    tail += 1
        if fill:
            nodes[out_starts[v]:out_starts[v] + tail] = queue[:tail]
            depths[out_starts[v]:out_starts[v] + tail] = level[:tail]
        else:
            counts[v] = tail
