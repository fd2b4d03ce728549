"""Region properties as arrays indexable by a region column, each row's target region and extent,
and the transport each amo took.

View-level facts of the manifest the rules read (declared annotations, the
rest inferred): every stage and rule may read them, none owns them.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Role

from .._jit import kernel
from ._cache import cached
from .codes import K_AMO, K_GET, NULL64


def region_table(trace) -> dict[str, np.ndarray]:
    def build():
        regs = trace.manifest.regions
        flaglike = [r.role in (Role.FLAG, Role.COUNTER) or r.reset is not None or r.monotonic for r in regs]
        return {
            "role": np.array([int(r.role) for r in regs] or [0], dtype=np.int64),
            "elem_bytes": np.array([r.elem_bytes for r in regs] or [1], dtype=np.int64),
            "length": np.array([r.length for r in regs] or [0], dtype=np.int64),
            "base": np.array([r.base for r in regs] or [0], dtype=np.int64),
            "has_reset": np.array([r.reset is not None for r in regs] or [False]),
            "reset": np.array([r.reset if r.reset is not None else 0 for r in regs] or [0], dtype=np.int64),
            "monotonic": np.array([r.monotonic for r in regs] or [False]),
            "flaglike": np.array(flaglike or [False]),
        }
    return cached(trace, "region_table", build)


def amo_transport(trace) -> tuple[np.ndarray, np.ndarray]:
    """(transport, from_map) per row: the engine each amo took, and whether the manifest's map said so.

    The manifest's per-peer map (``transport``: the unified API dispatches
    ``aclshmem_*_atomic_add`` on ``topo_list[pe]``) where it states one for
    (rank, peer), else the engine the event names; other rows keep their engine.
    """
    def build():
        kind, engine = trace["kind"], trace["engine"]
        m = trace.manifest
        if m.transport is None:  # the event's engine everywhere: the column itself, nothing mapped
            return engine, np.broadcast_to(False, engine.shape)
        out, mapped = engine.copy(), np.zeros(trace.n, bool)  # the engine column's type: engines fit it
        table = np.array([[-1 if e is None else int(e) for e in row] for row in m.transport], np.int64)
        rows = np.flatnonzero(kind == K_AMO)
        rank, peer = trace["rank"][rows].astype(np.int64), trace["peer"][rows].astype(np.int64)
        ok = (peer >= 0) & (peer < m.ranks)
        t = np.full(len(rows), -1, np.int64)
        t[ok] = table[rank[ok], peer[ok]]
        use = t >= 0
        out[rows[use]] = t[use]
        mapped[rows[use]] = True
        return out, mapped
    return cached(trace, "amo_transport", build)


def target_region(trace) -> np.ndarray:
    """Region each row writes into (a get's local destination), -1 if none; int16 like the column."""
    def build():
        kind, region = trace["kind"], trace["region"]
        local = trace["local_region"] if bool((kind == K_GET).any()) else region
        out = np.empty(trace.n, np.int16)
        _target_kernel(kind, region, local, out)
        return out
    return cached(trace, "target_region", build)


def extent(trace) -> np.ndarray:
    """Elements a row writes at its target: ceil(nbytes / elem_bytes), 1 for signal/amo/wait."""
    def build():
        out = np.empty(trace.n, np.int64)
        _extent_kernel(target_region(trace), trace["nbytes"], region_table(trace)["elem_bytes"], out)
        return out
    return cached(trace, "extent", build)


# One pass each: the numpy forms made several int64 temporaries of the trace's length.
@kernel
def _target_kernel(kind, region, local_region, out):
    for i in range(len(kind)):
        r = local_region[i] if kind[i] == K_GET else region[i]
        out[i] = r if r >= 0 else -1


@kernel
def _extent_kernel(treg, nbytes, elem_bytes, out):
    for i in range(len(treg)):
        r = treg[i]
        if r < 0:
            out[i] = 0
            continue
        nb = nbytes[i]
        eb = elem_bytes[r]
        if nb == NULL64:
            out[i] = 1
        else:
            out[i] = (max(nb, 0) + eb - 1) // eb if eb != 0 else 0  # numpy's x // 0 is 0
