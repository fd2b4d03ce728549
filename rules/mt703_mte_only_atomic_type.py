"""MT703: an int8 / int16 / half / bfloat16 atomic to a peer not reached over MTE."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _engines as E
from .analysis import codes as C
from .analysis import regions as R
from .base import Family, Rule, Severity


class MteOnlyAtomicType(Rule):
    """An atomic of a type only MTE carries, to a peer reached over UDMA or RoCE.

    What it does
        Flags every `amo` whose `dtype` is int8, int16, half or bfloat16 and
        whose transport (the manifest's per-peer `transport` map where it
        names one, else the event's engine) is not MTE. Where the event
        gives no `dtype`, its region's `elem_bytes` still says the type's
        size: an amo on 1- or 2-byte elements over UDMA or RoCE is one of
        those four types whatever its name, and is flagged as inferred. An
        amo of no stated type on wider elements is flagged (inferred) only
        where the core's trace ends at it, at a UDMA amo inside the kernel:
        the abort leaves a core there (RoCE amos of that shape are MT701's).
        One hit per (rank, core, launch, site).

    Why it matters
        The unified API generates these four types for the MTE path only
        (HCCS within a node); on any other transport it calls
        `kernel_abort`. The rank stops and its peers hang waiting for it.

    Example
        manifest transport[1][3] = "udma"; amo udma add peer=3 acc[4] dtype=half
        -- accumulate in float or int32 over UDMA, or keep the peer on MTE.

    Evidence
        The amo (first); with several from one site, the last of them.
        Optional fields: the amo's `dtype` makes it certain; without it the
        required fields still decide by the region's `elem_bytes` (1 or 2
        bytes: inferred) or, on wider elements, only by the trace ending at
        a UDMA amo (inferred). The manifest's `transport` map, where given,
        overrides the event's `engine`; the event's `engine` suffices.
    """

    code = "MT703"
    name = "mte-only-atomic-type"
    family = Family.ENGINE_LIMIT
    severity = Severity.ERROR
    summary = "int8/int16/half/bfloat16 atomic to a peer not reached over MTE (MTE-only types: abort)"

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        transport, mapped = E.amo_transport(trace)
        amo = trace["kind"] == C.K_AMO
        off_mte = amo & (transport != C.E_MTE) & (transport >= 0)
        certain = off_mte & E.dtype_in(trace, E.MTE_ONLY)
        by_width = off_mte & E.undeclared_width(trace, E.MTE_ONLY)
        unknown = amo & (transport == C.E_UDMA) & (trace["dtype"] == C.NULL8) & E.aborted_at(trace)
        rows = np.flatnonzero(certain | by_width | unknown)

        elem_bytes = R.region_table(trace)["elem_bytes"]
        region = trace["region"]
        yield from E.site_hits(
            self, trace, rows, "non-mte amo", NonMteAmo, _message, certain=certain,
            at_rows={"transport": lambda first: [E.Engine(int(t)).wire for t in transport[first]],
                     "mapped": mapped,
                     "how": E.how_known(certain, by_width),
                     "element_bytes": lambda first: elem_bytes[np.clip(region[first], 0, len(elem_bytes) - 1)]})


class NonMteAmo(NamedTuple):
    """A site's first amo of an MTE-only type on another transport."""

    rank: int
    core: int
    launch: int
    op: str
    peer: int
    region: str
    offset: int
    seq: int
    dtype: str | None
    transport: str  # the engine it took
    mapped: bool  # the transport is the manifest's map's (else the event's engine)
    how: str  # dtype: the event names the type; width: none, its region's element size says; abort: the trace ends
    element_bytes: int  # of the amo's region
    operations: int


def _message(f: NonMteAmo) -> str:
    where = f"{E.amo_at(f)} goes over {f.transport} ({E.over(f.mapped)})"
    if f.how == "dtype":
        return E.per_site(f, where + f" with dtype {f.dtype}: only the MTE path supports int8/int16/half/bfloat16 "
                             "atomics; the unified API aborts the kernel")
    if f.how == "width":
        return E.per_site(f, where + f" with no dtype recorded, on a region of {f.element_bytes}-byte elements: every "
                             "atomic type that size (int8; int16, half, bfloat16) is MTE-only, which "
                             f"{f.transport} does not carry (the type is inferred from the region's elem_bytes)")
    return E.per_site(f, where + " with no dtype recorded, and the core's trace ends there inside the kernel: the "
                         "abort the unified API gives an MTE-only type (int8, int16, half, bfloat16) on UDMA")
