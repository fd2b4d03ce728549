"""MT703: an int8 / int16 / half / bfloat16 atomic to a peer not reached over MTE."""

from __future__ import annotations

import numpy as np

from . import _engines as E
from .analysis import codes as C
from .base import Confidence, Family, Rule, Severity


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

        def describe(r, d):
            eng = E.Engine(int(transport[r])).wire
            where = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: amo {d['op']} to rank {d['peer']} "
                     f"{d['region']}[{d['offset']}] at seq {d['seq']} goes over {eng} ({E.over(trace, mapped, r)})")
            if certain[r]:
                return (where + f" with dtype {d['dtype']}: only the MTE path supports int8/int16/half/bfloat16 "
                        "atomics; the unified API aborts the kernel", Confidence.CERTAIN)
            if by_width[r]:
                return (where + f" with no dtype recorded, on a region of {E.element_bytes(trace, r)}-byte "
                        "elements: every atomic type that size (int8; int16, half, bfloat16) is MTE-only, which "
                        f"{eng} does not carry (the type is inferred from the region's elem_bytes)",
                        Confidence.INFERRED)
            return (where + " with no dtype recorded, and the core's trace ends there inside the kernel: the "
                    "abort the unified API gives an MTE-only type (int8, int16, half, bfloat16) on UDMA",
                    Confidence.INFERRED)
        yield from E.hits_by_site(self, trace, rows, describe, "non-mte amo")
