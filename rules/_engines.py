"""What the engine-limit rules (MT7xx) share: the transport an operation took, the
element types each engine supports, and one hit per (core, launch, site) group.

The transport of an amo (``regions.amo_transport``, where the completion pass
reads it too) is the manifest's per-peer map (``transport``: the unified API
dispatches ``aclshmem_*_atomic_add`` on ``topo_list[pe]``) where it states one
for (rank, peer), else the engine the event names. Puts and gets name
their engine API (``aclshmemx_sdma_get_nbi``), so theirs is the event's.
The type tables are the atomic-add pattern's (seed 004, §2.1-2.6).
"""

from __future__ import annotations

import numpy as np

from ingest.contract import DType, Engine, PipeOp  # noqa: F401  (Engine: the rules name transports through E)

from . import _hits as H
from ._jit import kernel
from .analysis import HappensBefore, cached
from .analysis import codes as C
from .analysis import regions as R
from .analysis.regions import amo_transport  # noqa: F401  (the MT7xx rules and MT603 read it here)
from .base import Confidence
from .hit_columns import HitColumns, coded

CROSS_CORE_WAIT = int(PipeOp.CROSS_CORE_WAIT)
NO_COVER = 2**31 - 1  # the barrier phase of an operation no quiet completes in its launch

# Element types the MTE transport alone carries (the unified API aborts elsewhere).
MTE_ONLY = (DType.INT8, DType.INT16, DType.HALF, DType.BFLOAT16)
# MTE scalar atomics only Ascend950 has (910B / 910C, i.e. A2 / A3, do not).
EXT_TYPES = (DType.UINT32, DType.INT64, DType.UINT64)
PLATFORMS_WITHOUT_EXT = ("A2", "A3")
# Bytes per element of each type: what an amo's region says of its type where the event names none
# (the amo's offset counts elements of its region, so it works on one element of that size).
DTYPE_BYTES = {DType.INT8: 1, DType.INT16: 2, DType.INT32: 4, DType.INT64: 8, DType.UINT32: 4,
               DType.UINT64: 8, DType.HALF: 2, DType.BFLOAT16: 2, DType.FLOAT: 4}


def dtype_in(trace, types) -> np.ndarray:
    return C.one_of(trace["dtype"], [int(t) for t in types])


def _widths(types, every: bool) -> np.ndarray:
    """Element sizes whose types all lie in ``types`` (every) or none of them do (not every)."""
    sizes = sorted(set(DTYPE_BYTES.values()))
    return np.array([w for w in sizes if all((t in types) == every for t, b in DTYPE_BYTES.items() if b == w)],
                    np.int64)


def undeclared_width(trace, types, every: bool = True) -> np.ndarray:
    """Amo rows with no `dtype` whose region's element size every type of that size in ``types``
    has (every=True: the width alone says the type is one of them), or none has (every=False:
    the width alone rules them out)."""
    rt = R.region_table(trace)
    amo = np.flatnonzero(trace["kind"] == C.K_AMO)  # the few amo rows, not trace-long temporaries
    reg = trace["region"][amo].astype(np.int64)
    ok = (trace["dtype"][amo] == C.NULL8) & (reg >= 0) & (reg < len(rt["elem_bytes"]))
    out = np.zeros(trace.n, bool)
    out[amo[ok]] = np.isin(rt["elem_bytes"][reg[ok]], _widths(set(types), every))
    return out


def element_bytes(trace, row: int) -> int:
    return int(R.region_table(trace)["elem_bytes"][int(trace["region"][row])])


def aborted_at(trace) -> np.ndarray:
    """Rows that are their core's last event in the trace, inside a kernel (no kernel_end follows):
    where a unified-API abort (trap) leaves a core."""
    def build():
        n = trace.n
        last = np.zeros(n, bool)
        if n:
            last[trace.segments[1:] - 1] = True
        return last & (trace["kind"] != C.K_END)
    return cached(trace, "aborted_at", build)


def site_hits(rule, trace, rows: np.ndarray, role: str, fields: type, render, at_rows=None, certain=None):
    """One member per (rank, core, launch, site) group of ``rows`` (one misused call site is one root),
    as a batch of typed hits (``HitColumns``): the group's first row's ``fields``, each a trace
    column as ``describe`` names it, else ``at_rows``' (the rule's own facts: an array per row, or
    a function of the first rows, for a fact not worth an array as long as the trace),
    and ``operations``, the group's size; ``certain``: per row, certain or else inferred (all
    certain where None). ``render`` words a member's message (``per_site`` adds the count),
    ``site_extra`` is its extra."""
    groups = H.by_site(trace, rows)
    if not groups:
        return []
    at_rows = at_rows or {}
    first = np.array([int(g[0]) for g in groups], np.int64)
    last = np.array([int(g[-1]) if len(g) > 1 else -1 for g in groups], np.int64)
    named = tuple(f for f in fields._fields if f not in at_rows and f != "operations")
    described = H.described(trace, first, tuple(dict.fromkeys(("rank", "core") + named)))
    columns, tables = {}, {}
    for name in fields._fields:
        values = ([len(g) for g in groups] if name == "operations" else described[name] if name in named
                  else _at(at_rows[name], first))
        columns[name], tables[name] = coded(values)
    if certain is not None:
        columns["confidence"], tables["confidence"] = coded(
            Confidence.CERTAIN if c else Confidence.INFERRED for c in np.asarray(certain)[first].tolist())
    columns["rests_on"], tables["rests_on"] = coded(((r, c),) for r, c in zip(described["rank"], described["core"]))
    key = H.row_keys(trace, first)
    return [HitColumns(code=rule.code, fields=fields, render=render, extra=site_extra, columns=columns,
                       tables=tables, roles=(role, "last of the group"), rows=np.stack((first, last), axis=1),
                       key=key)]


def _at(values, rows: np.ndarray) -> list:
    """``site_hits``' ``at_rows`` value at ``rows``, as Python values."""
    found = values(rows) if callable(values) else np.asarray(values)[rows]
    return found.tolist() if isinstance(found, np.ndarray) else list(found)


def per_site(f, message: str) -> str:
    """A site's message with its count of operations, where it has several."""
    return message + (f"; {f.operations} such operations from this site" if f.operations > 1 else "")


def site_extra(f) -> dict:
    return {"operations": f.operations}


def how_known(certain: np.ndarray, by_width: np.ndarray | None = None):
    """``site_hits``' ``how`` of a type rule, per first row: "dtype" where the event names the type,
    "width" where only its region's element size says, else "abort" (the trace ends there)."""
    def at(first: np.ndarray) -> np.ndarray:
        width = by_width[first] if by_width is not None else np.zeros(len(first), bool)
        return np.where(certain[first], "dtype", np.where(width, "width", "abort"))
    return at


def amo_at(f, what: str = "amo") -> str:
    """Where a type rule's amo is, as its message opens: its place, op, target and seq."""
    return (f"rank {f.rank} core {f.core} launch {f.launch}: {what} {f.op} to rank {f.peer} "
            f"{f.region}[{f.offset}] at seq {f.seq}")


def over(mapped: bool) -> str:
    """How an amo's transport is known: the manifest's map, or the event's own engine."""
    return "by the manifest's transport map" if mapped else "as the event names it"



@kernel
def _observed_kernel(seg, kind, pipe_op, phase, out):
    for s in range(len(seg) - 1):
        seen = False
        for i in range(seg[s], seg[s + 1]):
            if kind[i] == C.K_BEGIN or (i > seg[s] and phase[i] != phase[i - 1]):
                seen = False
            out[i] = seen
            if kind[i] == C.K_WEND or (kind[i] == C.K_PIPE and pipe_op[i] == CROSS_CORE_WAIT):
                seen = True


def flag_observed(trace, order: HappensBefore) -> np.ndarray:
    """Per row: whether its core observed a flag (a wait_end, a cross-core WaitFlag) earlier in
    the same launch and barrier phase. Two cores of a rank are ordered here by barriers and
    sync_all only; such an observation may be a hand-over the phases cannot see, so a rule that
    would call two cores' operations concurrent holds back on it."""
    def build():
        out = np.zeros(trace.n, np.bool_)
        if trace.n:
            _observed_kernel(trace.segments, trace["kind"], trace["pipe_op"], order.phase_core, out)
        return out
    return cached(trace, "flag_observed", build)


def cover_phase(order: HappensBefore, rows: np.ndarray) -> np.ndarray:
    """The barrier phase (phase_core) of the quiet that completes each of ``rows``; NO_COVER if none."""
    phase = order.phase_core
    cov = order.completed_at()[rows]
    return np.where(cov >= 0, phase[np.maximum(cov, 0)], NO_COVER).astype(np.int64)
