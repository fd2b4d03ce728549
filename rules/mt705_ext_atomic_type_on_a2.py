"""MT705: a uint32 / int64 / uint64 MTE atomic on a platform without them (A2 / A3)."""

from __future__ import annotations

import numpy as np

from . import _engines as E
from . import _passes as P
from .base import Confidence, Family, Rule, Severity


class ExtAtomicTypeOnA2(Rule):
    """An MTE atomic of a type only Ascend950 supports, on an A2 or A3 platform.

    What it does
        Where the manifest names the platform `A2` or `A3` (910B / 910C),
        flags every `amo` over MTE (the manifest's transport map, else the
        event's engine) whose `dtype` is uint32, int64 or uint64. Without a
        platform in the manifest the rule says nothing. One hit per (rank,
        core, launch, site).

    Why it matters
        910B and 910C have MTE2 atomics for int8/int16/int32/half/bfloat16/
        float only; the uint32/int64/uint64 scalar atomic add exists on
        Ascend950 alone. On A2/A3 the call is not there: the add is not
        performed, and the counter or sum it feeds is wrong.

    Example
        manifest platform "A2"; amo mte add peer=1 counter[0] dtype=int64
        -- use int32 on A2/A3.

    Evidence
        The amo (first); with several from one site, the last of them.
    """

    code = "MT705"
    name = "ext-atomic-type-on-a2"
    family = Family.ENGINE_LIMIT
    severity = Severity.ERROR
    summary = "uint32/int64/uint64 MTE atomic on an A2/A3 (910B/910C) platform, which lacks them"

    def check(self, trace, ctx):
        platform = trace.manifest.platform
        if trace.n == 0 or platform not in E.PLATFORMS_WITHOUT_EXT:
            return
        transport, mapped = E.amo_transport(trace)
        rows = np.flatnonzero((trace["kind"] == P.K_AMO) & (transport == P.E_MTE) & E.dtype_in(trace, E.EXT_TYPES))

        def describe(r, d):
            return (f"rank {d['rank']} core {d['core']} launch {d['launch']}: mte amo {d['op']} to rank {d['peer']} "
                    f"{d['region']}[{d['offset']}] at seq {d['seq']} with dtype {d['dtype']} on platform {platform}: "
                    f"the uint32/int64/uint64 MTE atomics exist on Ascend950 only", Confidence.CERTAIN)
        yield from E.hits_by_site(self, trace, rows, describe, "ext-type amo")
