"""The cause graph's walks for ``analyzer.causes.link``, over CSR arrays.

Nodes are a report's drafts, edges symptom -> cause, in CSR form (``starts``,
``targets``: node v cites ``targets[starts[v]:starts[v + 1]]``). Linear passes
in numba (``analyzer._cause_kernels``); the Python around them only where the
graph has a cycle, which real reports rarely do.
"""

from __future__ import annotations

from itertools import chain
from typing import Mapping, Sequence

import numpy as np

from rules.analysis.graph import strongly_connected


def positions(starts: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Where the edges of ``rows`` lie in a CSR graph's targets, row after row, each row's in order."""
    lengths = starts[rows + 1] - starts[rows]
    offsets = np.zeros(len(rows), np.int64)
    np.cumsum(lengths[:-1], out=offsets[1:])
    return np.repeat(starts[rows] - offsets, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


def reversed_csr(starts: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The graph with every edge turned round, each node's new edges in the order of their old source."""
    n = len(starts) - 1
    sources = np.repeat(np.arange(n, dtype=np.int64), np.diff(starts))
    order = np.argsort(targets, kind="stable")
    rstarts = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(targets, minlength=n), out=rstarts[1:])
    return rstarts, sources[order]


def break_cycles(starts: np.ndarray, targets: np.ndarray, order_rank: Sequence[int]
                 ) -> tuple[np.ndarray, np.ndarray, dict[int, list[int]]]:
    """Make every cycle with no cause outside it end in one root: the graph (CSR) with those edges
    removed, and {root: cycle members}.

    The root is the member first in report order (smallest ``order_rank``); only its edges
    into the cycle are removed, so the others stay its (transitive) symptoms.
    A cycle that does have an outside cause keeps its edges: its members are
    symptoms of that cause and need no root of their own.
    """
    from ._cause_kernels import on_or_behind_cycles

    left = np.flatnonzero(on_or_behind_cycles(starts, targets)).tolist()
    if not left:  # acyclic: the common case, one linear pass
        return starts, targets, {}
    rows = {v: targets[starts[v]:starts[v + 1]].tolist() for v in left}
    local = {v: i for i, v in enumerate(left)}  # the components of what survived peeling are the cycles
    edges = [[local[c] for c in rows[v] if c in local] for v in left]
    out: dict[int, list[int]] = {}
    cut: dict[int, list[int]] = {}
    for comp in strongly_connected(edges):
        if len(comp) < 2:
            continue
        comp = [left[i] for i in comp]
        members = set(comp)
        if any(c not in members for v in comp for c in rows[v]):
            continue
        root = min(comp, key=lambda v: order_rank[v])
        cut[root] = [c for c in rows[root] if c not in members]
        out[root] = sorted(comp)
    return (*with_rows(starts, targets, cut), out)


def with_rows(starts: np.ndarray, targets: np.ndarray, rows: Mapping[int, Sequence[int]]
              ) -> tuple[np.ndarray, np.ndarray]:
    """The CSR graph with the edges of each node in ``rows`` replaced by the ones given there."""
    if not rows:
        return starts, targets
    n = len(starts) - 1
    keep = np.ones(len(targets), bool)
    for v in rows:
        keep[starts[v]:starts[v + 1]] = False
    sources = np.concatenate((np.repeat(np.arange(n, dtype=np.int64), np.diff(starts))[keep],
                              np.repeat(np.fromiter(rows, np.int64, len(rows)),
                                        np.fromiter(map(len, rows.values()), np.int64, len(rows)))))
    ends = np.concatenate((targets[keep], np.fromiter(chain.from_iterable(rows.values()), np.int64)))
    order = np.argsort(sources, kind="stable")  # a replaced node's old edges are gone: no row mixes
    out = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(sources, minlength=n), out=out[1:])
    return out, ends[order]


def explained(starts: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each node of the cause graph (CSR), every node that reaches it through cause edges, with
    its distance (1 = direct): (starts, nodes, depths) in CSR form, each row in the order a
    breadth-first walk finds them."""
    from ._cause_kernels import reach

    starts, targets = reversed_csr(starts, targets)  # cause -> its direct symptoms
    none = np.zeros(0, np.int64)
    counts = np.zeros(len(starts) - 1, np.int64)
    reach(False, starts, targets, none, none, none, counts)
    out_starts = np.zeros(len(starts), np.int64)
    np.cumsum(counts, out=out_starts[1:])
    nodes, depths = np.empty(out_starts[-1], np.int64), np.empty(out_starts[-1], np.int64)
    reach(True, starts, targets, out_starts, nodes, depths, counts)
    return out_starts, nodes, depths
