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
def reach_counts(starts: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Per node, how many other nodes its edges reach, transitively (``reach``'s row lengths)."""
    n = len(starts) - 1
    seen = np.full(n, -1, np.int64)
    frontier = np.empty(max(len(targets), 1), np.int64)
    out = np.zeros(n, np.int64)
    for v in range(n):
        if starts[v] == starts[v + 1]:
            continue
        seen[v] = v
        count = 0
        tail = 0
        for e in range(starts[v], starts[v + 1]):
            w = targets[e]
            if seen[w] != v:
                seen[w] = v
                frontier[tail] = w
                tail += 1
        head = 0
        while head < tail:
            s = frontier[head]
            head += 1
            count += 1
            for e in range(starts[s], starts[s + 1]):
                w = targets[e]
                if seen[w] != v:
                    seen[w] = v
                    frontier[tail] = w
                    tail += 1
        out[v] = count
    return out


@kernel
def reach(starts: np.ndarray, targets: np.ndarray, out_starts: np.ndarray) -> tuple:
    """Every node's reach, breadth first: the nodes (other than itself) its edges lead to,
    transitively, each once, in the order first found, with its distance (1: a direct edge).
    ``out_starts`` is the exclusive cumulative sum of ``reach_counts``."""
    n = len(starts) - 1
    seen = np.full(n, -1, np.int64)
    nodes = np.empty(out_starts[n], np.int64)
    depth = np.empty(out_starts[n], np.int64)
    for v in range(n):
        if starts[v] == starts[v + 1]:
            continue
        seen[v] = v
        tail = out_starts[v]
        for e in range(starts[v], starts[v + 1]):
            w = targets[e]
            if seen[w] != v:
                seen[w] = v
                nodes[tail] = w
                depth[tail] = 1
                tail += 1
        head = out_starts[v]
        while head < tail:
            s = nodes[head]
            d = depth[head] + 1
            head += 1
            for e in range(starts[s], starts[s + 1]):
                w = targets[e]
                if seen[w] != v:
                    seen[w] = v
                    nodes[tail] = w
                    depth[tail] = d
                    tail += 1
    return nodes, depth
