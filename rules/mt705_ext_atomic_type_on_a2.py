"""MT705: a uint32 / int64 / uint64 MTE atomic on a platform without them (A2 / A3)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _engines as E
from .analysis import codes as C
from .base import Family, Rule, Severity


class ExtAtomicTypeOnA2(Rule):
    """An MTE atomic of a type only Ascend950 supports, on an A2 or A3 platform.

    What it does
        Where the manifest names the platform `A2` or `A3` (910B / 910C),
        flags every `amo` over MTE (the manifest's transport map, else the
        event's engine) whose `dtype` is uint32, int64 or uint64, and, as
        inferred, every MTE amo with no `dtype` on a region of 8-byte
        elements (int64 or uint64, whatever its name). Where the manifest
        names no platform, or the event no `dtype` on 4-byte elements, an
        MTE amo is flagged as inferred when the core's trace ends there
        inside the kernel (and its dtype, if recorded, is one of the three;
        1- or 2-byte elements rule all three out): MTE takes every other
        atomic type on every platform, so an abort right at an MTE atomic
        is this one. A manifest naming Ascend950 (or a platform
        the rule does not know) silences it. One hit per (rank, core,
        launch, site).

    Why it matters
        910B and 910C have MTE2 atomics for int8/int16/int32/half/bfloat16/
        float only; the uint32/int64/uint64 scalar atomic add exists on
        Ascend950 alone. On A2/A3 the call has no implementation: the
        kernel aborts at it (the unified API's answer to a type a path
        lacks), the rank stops and the sum it feeds is never made.

    Example
        manifest platform "A2"; amo mte add peer=1 counter[0] dtype=int64
        -- use int32 on A2/A3.

    Evidence
        The amo (first); with several from one site, the last of them.
        Needs the manifest's optional `platform` for a certain finding (and
        the amo's `dtype`); with the platform but no `dtype`, the region's
        `elem_bytes` decides 8-byte elements (inferred); with no platform,
        only a core whose trace ends at the MTE amo is flagged (inferred).
    """

    code = "MT705"
    name = "ext-atomic-type-on-a2"
    family = Family.ENGINE_LIMIT
    severity = Severity.ERROR
    summary = "uint32/int64/uint64 MTE atomic on an A2/A3 (910B/910C) platform, which lacks them"

    def check(self, trace, ctx):
        platform = trace.manifest.platform
        if trace.n == 0 or (platform is not None and platform not in E.PLATFORMS_WITHOUT_EXT):
            return
        transport, mapped = E.amo_transport(trace)
        mte = (trace["kind"] == C.K_AMO) & (transport == C.E_MTE)
        ext = E.dtype_in(trace, E.EXT_TYPES)
        certain = mte & ext if platform is not None else np.zeros(trace.n, bool)
        # No dtype: 8-byte elements are int64 or uint64 (both Ascend950-only); 1- or 2-byte ones none of the three.
        by_width = mte & E.undeclared_width(trace, E.EXT_TYPES) if platform is not None else np.zeros(trace.n, bool)
        unknown = (mte & ~certain & ~by_width & (ext | (trace["dtype"] == C.NULL8)) & E.aborted_at(trace)
                   & ~E.undeclared_width(trace, E.EXT_TYPES, every=False))
        rows = np.flatnonzero(certain | by_width | unknown)

        yield from E.site_hits(
            self, trace, rows, "ext-type amo", ExtTypeAmo, _message, certain=certain,
            at_rows={"platform": lambda first: [platform] * len(first),
                     "how": E.how_known(certain, by_width)})


class ExtTypeAmo(NamedTuple):
    """A site's first uint32/int64/uint64 MTE amo where the platform lacks them."""

    rank: int
    core: int
    launch: int
    op: str
    peer: int
    region: str
    offset: int
    seq: int
    dtype: str | None
    platform: str | None  # the manifest's
    how: str  # dtype: the event names the type; width: none, 8-byte elements; abort: the trace ends there
    operations: int


def _message(f: ExtTypeAmo) -> str:
    where = E.amo_at(f, "mte amo")
    if f.how == "dtype":
        return E.per_site(f, where + f" with dtype {f.dtype} on platform {f.platform}: the uint32/int64/uint64 MTE "
                             "atomics exist on Ascend950 only")
    if f.how == "width":
        return E.per_site(f, where + " with no dtype recorded, on a region of 8-byte elements (int64 or uint64, "
                             f"inferred from its elem_bytes) on platform {f.platform}: the 64-bit MTE atomics exist "
                             "on Ascend950 only")
    what = "no dtype recorded" if f.dtype is None else f"dtype {f.dtype}"
    on = "no platform named" if f.platform is None else f"platform {f.platform}"
    return E.per_site(f, where + f" with {what} and {on}, and the core's trace ends there inside the kernel: MTE "
                         "takes every other atomic type on every platform, so this is the abort an A2/A3 "
                         "(910B/910C) gives a uint32/int64/uint64 MTE atomic")
