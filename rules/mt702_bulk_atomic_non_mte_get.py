"""MT702: a get on SDMA, UDMA or RoCE inside an atomic-add window (no inline reduce there)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _engines as E
from .analysis import CoreScan, Stage
from .analysis import codes as C
from .base import Family, Rule, Severity


class BulkAtomicNonMteGet(Rule):
    """A get on an engine without inline reduce, issued inside an atomic-add window.

    What it does
        Flags every `get` on the SDMA, UDMA or RoCE engine issued between
        `atomic_mode add` and the next `atomic_mode none` of its core. One
        hit per (rank, core, launch, site), with the count.

    Why it matters
        `SetAtomicAdd<T>()` turns the core's MTE3 writes into adds; only an
        MTE get's destination write goes through MTE3. An SDMA, UDMA or
        RoCE get writes its destination plainly: every peer's tile
        overwrites the last one instead of adding to it, and the reduction
        keeps one contribution. Without MTE, reduce through UB (the SDMA
        fallback: get into UB, add, write back).

    Example
        atomic_mode add int32; get sdma peer=1 workspace[0..8] -> d_out[0]; atomic_mode none
        -- use the MTE get for the bulk atomic, or the SDMA fallback.

    Evidence
        The get (first); with several from one site, the last of them.
        Needs no optional field: the get's `engine` and the core's
        `atomic_mode` events are required. Certain where it fires.
    """

    code = "MT702"
    name = "bulk-atomic-non-mte-get"
    family = Family.ENGINE_LIMIT
    severity = Severity.ERROR
    summary = "SDMA/UDMA/RoCE get inside an atomic-add window: no inline reduce on that engine"
    requires = (Stage.CORE_SCAN,)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        eng = trace["engine"]
        win = ctx.stage(CoreScan).atomic_window()
        rows = np.flatnonzero((trace["kind"] == C.K_GET) & (win >= 0)
                              & ((eng == C.E_SDMA) | (eng == C.E_UDMA) | (eng == C.E_ROCE)))

        yield from E.site_hits(self, trace, rows, "non-mte get", NonMteGet, _message,
                               at_rows={"window_seq": lambda first: trace["seq"][win[first]]})


class NonMteGet(NamedTuple):
    """A site's first get into an atomic-add window on an engine with no inline reduce."""

    rank: int
    core: int
    launch: int
    engine: str
    peer: int
    region: str
    offset: int
    local_region: str
    local_offset: int
    seq: int
    window_seq: int  # the atomic_mode add that opened the window
    operations: int


def _message(f: NonMteGet) -> str:
    return E.per_site(f, f"rank {f.rank} core {f.core} launch {f.launch}: {f.engine} get from rank {f.peer} "
                         f"{f.region}[{f.offset}] into {f.local_region}[{f.local_offset}] at seq {f.seq} inside "
                         f"the atomic-add window opened at seq {f.window_seq}: {f.engine} has no inline reduce, "
                         f"its write overwrites instead of adding")
