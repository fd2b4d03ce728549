"""The contract's integer codes as plain module constants, and row-number arrays.

numba freezes a module-level int as a constant where a kernel reads it, so the
kernels and rules compare ``kind[i] == K_PUT`` against these rather than
against ``Kind.PUT`` (an enum member numba cannot type). Every value comes
from ``ingest.contract``; nothing is restated.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Engine, Kind, Op, PipeOp, Scope

# Plain ints: numba freezes module-level ints as constants.
K_BEGIN, K_END = int(Kind.KERNEL_BEGIN), int(Kind.KERNEL_END)
K_PUT, K_GET, K_PUTSIG = int(Kind.PUT), int(Kind.GET), int(Kind.PUT_SIGNAL)
K_SIGNAL, K_AMO, K_QUIET, K_FENCE = int(Kind.SIGNAL), int(Kind.AMO), int(Kind.QUIET), int(Kind.FENCE)
K_WBEGIN, K_WEND, K_WRITE = int(Kind.WAIT_BEGIN), int(Kind.WAIT_END), int(Kind.WRITE)
K_PIPE, K_AMODE = int(Kind.PIPE_SYNC), int(Kind.ATOMIC_MODE)
K_BBEGIN, K_BEND = int(Kind.BARRIER_BEGIN), int(Kind.BARRIER_END)
E_MTE, E_SDMA, E_UDMA, E_ROCE, E_LOCAL, E_ALL = (int(e) for e in (
    Engine.MTE, Engine.SDMA, Engine.UDMA, Engine.ROCE, Engine.LOCAL, Engine.ALL))
E_P2P, E_IBGDA = int(Engine.P2P), int(Engine.IBGDA)
N_ENGINES = len(Engine)
OP_SET, OP_ADD = int(Op.SET), int(Op.ADD)
SCOPE_ALL = int(Scope.ALL)
PIPE_SYNC_ALL = int(PipeOp.SYNC_ALL)
NULL8, NULL16, NULL32, NULL64 = -(2**7), -(2**15), -(2**31), -(2**63)


def row_dtype(n: int):
    """Row numbers of a trace of ``n`` events: int32 while they fit, half the memory of int64."""
    return np.int32 if n < 2**31 else np.int64


def rows_full(n: int) -> np.ndarray:
    """A per-row array of row numbers, -1 everywhere (a pass writes the rows it finds)."""
    return np.full(n, -1, row_dtype(n))


def one_of(column: np.ndarray, values) -> np.ndarray:
    """Per element of ``column``, whether it equals one of ``values`` (a few codes: kinds, regions).

    One comparison per value: ``np.isin`` builds a table over the column's range and gathers
    through it, ~10x slower on a trace's int8 kind column (78 ms against 7 ms at 8 M events).
    More than a few values go to ``np.isin``.
    """
    values = np.asarray(values).reshape(-1)
    if len(values) > 8:
        return np.isin(column, values)
    out = np.zeros(len(column), np.bool_)
    for v in values.tolist():
        out |= column == v
    return out
