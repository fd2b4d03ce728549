"""Blocks: a trace's launches cut into runs of whole launches of every rank.

The layout is described in ``ingest.dataset``; these are the pieces the writer
(and the benchmark's trace assembly) use to decide where blocks end and which
rows start a new row group.  An edge is a launch after which a block ends; the
last block runs from the last edge on, so it takes launches no count has seen.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from .ingest_report import Block


def launch_counts(launches: list[pa.ChunkedArray]) -> tuple[np.ndarray, np.ndarray]:
    """Distinct launch values of some columns, ascending, with how many rows hold each."""
    vals, counts = [], []
    for col in launches:
        a = col.chunk(0).to_numpy() if col.num_chunks == 1 else col.to_numpy()
        if not len(a):
            continue
        lo, hi = int(a.min()), int(a.max())
        if hi - lo < 1 << 22:  # launch indices are dense: count without sorting
            c = np.bincount(a - lo)
            nz = np.flatnonzero(c)
            vals.append(nz + lo)
            counts.append(c[nz])
        else:
            v, c = np.unique(a, return_counts=True)
            vals.append(v)
            counts.append(c)
    return merge_counts(list(zip(vals, counts)))


def merge_counts(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """(values, counts) pairs as one: each value once, ascending, with its counts summed."""
    pairs = [(v, c) for v, c in pairs if len(v)]
    if not pairs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    v, inv = np.unique(np.concatenate([v for v, _ in pairs]), return_inverse=True)
    return v.astype(np.int64), np.bincount(inv, weights=np.concatenate([c for _, c in pairs])).astype(np.int64)


def cut_blocks(values: np.ndarray, counts: np.ndarray, target: int) -> np.ndarray:
    """Block edges: the launches after which a block of at least ``target`` events ends.

    Blocks are runs of whole launches of every rank (so a window of blocks
    holds each launch it touches complete on every core); the last block runs
    from the last edge on, so it takes launches no count has seen yet.
    """
    edges, acc = [], 0
    for v, c in zip(values.tolist(), counts.tolist()):
        acc += c
        if acc >= target:
            edges.append(v)
            acc = 0
    if edges and edges[-1] == values[-1]:
        edges.pop()  # nothing after it: the last block is the open one
    return np.array(edges, np.int64)


def edges_from(launch: pa.ChunkedArray, ranks: np.ndarray, all_ranks: int, target: int) -> np.ndarray:
    """Block edges from the first rows added, scaled to the whole trace.

    Edges only decide where blocks end, never what a block holds, so an
    estimate from the first source (a rank's ring dump is 1/P of the trace)
    keeps every rank's encoding free to start at once; the exact counts are
    taken at commit.
    """
    values, counts = launch_counts([launch])
    here = len(np.unique(ranks))
    return cut_blocks(values, counts * max(all_ranks / max(here, 1), 1.0), target)


def blocks_of(values: np.ndarray, counts: np.ndarray, edges: np.ndarray) -> list[Block]:
    """The blocks these launch counts fill between ``edges`` (empty blocks dropped)."""
    if not len(values):
        return []
    block = np.searchsorted(edges, values, side="left")
    out = []
    for k in np.unique(block).tolist():
        m = block == k
        out.append(Block(int(values[m][0]), int(values[m][-1]), int(counts[m].sum())))
    return out


def row_cuts(core: np.ndarray, launch: np.ndarray, edges: np.ndarray | None) -> np.ndarray | None:
    """Rows of a (core, seq)-ordered rank where a row group must start: each (core, block) run its own."""
    if edges is None or not len(edges):
        return None
    block = np.searchsorted(edges, launch, side="left")
    return np.flatnonzero((core[1:] != core[:-1]) | (block[1:] != block[:-1])) + 1
