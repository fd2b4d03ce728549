"""MT701: a float atomic sent over RoCE, which has integer atomics only."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import DType

from . import _engines as E
from .analysis import codes as C
from .base import Family, Rule, Severity


class FloatAtomicOverRoce(Rule):
    """A float atomic add to a peer the kernel reaches over RoCE.

    What it does
        Flags every `amo` whose `dtype` is float and whose transport is RoCE:
        the manifest's per-peer `transport` map where it names one for
        (rank, peer), as the unified API dispatches on `topo_list[pe]`,
        else the engine the event names. Where the event gives no `dtype`
        but the core's trace ends at a RoCE amo, inside the kernel, the
        amo is flagged as inferred: that is where the unified API's abort
        of an unsupported type leaves a core (half, bfloat16, int8 and
        int16 abort on RoCE too, but an amo on 1- or 2-byte elements is
        one of those, MT703's). One hit per (rank, core, launch, site).

    Why it matters
        RoCE atomics take int32, uint32, int64 and uint64 only. The unified
        `aclshmem_float_atomic_add` aborts the kernel (`kernel_abort`) on a
        RoCE peer: the rank stops, and every peer that waits on it hangs.
        No quiet fixes that; the reduction must go over MTE or UDMA, or be
        done in integers.

    Example
        manifest transport[0][2] = "roce"; amo udma add peer=2 acc[0] dtype=float
        -- then rank 0 core 0 emits nothing more; ranks 1-3 wait on done[0].

    Evidence
        The amo (first); with several from one site, the last of them.
        Optional fields: the amo's `dtype` (float) makes it certain. Without
        it the required fields cannot tell a float from an int32 or uint32
        (all 4 bytes, and RoCE takes the two integers), so only a core whose
        trace ends at the RoCE amo is flagged, inferred. The manifest's
        `transport` map, where given, overrides the event's `engine`.
    """

    code = "MT701"
    name = "float-atomic-over-roce"
    family = Family.ENGINE_LIMIT
    severity = Severity.ERROR
    summary = "Float atomic to a peer reached over RoCE (integer atomics only: the unified API aborts)"

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        transport, mapped = E.amo_transport(trace)
        roce = (trace["kind"] == C.K_AMO) & (transport == C.E_ROCE)
        certain = roce & (trace["dtype"] == int(DType.FLOAT))
        # An undeclared type on 1- or 2-byte elements is an MTE-only one: MT703's, not a float.
        unknown = roce & (trace["dtype"] == C.NULL8) & E.aborted_at(trace) & ~E.undeclared_width(trace, E.MTE_ONLY)
        rows = np.flatnonzero(certain | unknown)

        yield from E.site_hits(self, trace, rows, "roce amo", RoceFloat, _message, certain=certain,
                               at_rows={"mapped": mapped, "how": E.how_known(certain)})


class RoceFloat(NamedTuple):
    """A site's first float (or untyped, aborting) amo over RoCE."""

    rank: int
    core: int
    launch: int
    op: str
    peer: int
    region: str
    offset: int
    seq: int
    mapped: bool  # the transport is the manifest's map's (else the event's engine)
    how: str  # dtype: the event names float; abort: no dtype, and the core's trace ends there
    operations: int


def _message(f: RoceFloat) -> str:
    where = f"{E.amo_at(f)} goes over RoCE ({E.over(f.mapped)})"
    if f.how == "dtype":
        return E.per_site(f, where + " with dtype float: RoCE atomics are integer only (int32/uint32/int64/uint64); "
                             "the unified API aborts the kernel")
    return E.per_site(f, where + " with no dtype recorded, and the core's trace ends there inside the kernel: the "
                         "abort the unified API gives a float (or half, bfloat16, int8, int16) atomic over RoCE")
