"""MT405: the own rank's contribution read through the atomic-add path."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from .analysis import CoreScan, Stage
from .analysis import codes as C
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


class SelfViaAtomic(Rule):
    """A get from the core's own rank inside an atomic-add window.

    What it does
        Flags every `get` whose peer is the issuing rank, issued between
        `atomic_mode add` and the next `atomic_mode none` of its core. One
        hit per (window, call site), with the number of gets.

    Why it matters
        In the reduce-scatter pattern the self contribution is written to the
        output directly, and the atomic loop skips the own rank. Reading the
        own slot through the add path counts it twice (or, when the direct
        write was skipped instead, reads a workspace that was never filled).

    Example
        atomic_mode add; for r in ranks: get mte peer=r -> out; atomic_mode none
        on rank 0 with r == 0 included -- skip r == my rank.

    Evidence
        The get (first) and the `atomic_mode add` that opened the window.
    """

    code = "MT405"
    name = "self-via-atomic"
    family = Family.MISSING_DRAIN
    severity = Severity.ERROR
    summary = "Self contribution accumulated through the atomic path (double counting)"
    requires = (Stage.CORE_SCAN,)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        win = ctx.stage(CoreScan).atomic_window()
        own = (trace["kind"] == C.K_GET) & (trace["peer"] == trace["rank"])  # both int16
        rows = np.flatnonzero(own & (win >= 0))
        # One hit per (window, site): the tiles of one self contribution are one mistake.
        groups = H.groups(rows, win[rows], trace["site"][rows])
        if not groups:
            return
        first = np.array([int(g[0]) for g in groups], np.int64)
        opened = win[first].astype(np.int64)
        d = H.described(trace, first, tuple(f for f in SelfGet._fields if f not in ("window_seq", "gets")))
        columns, tables = coded_columns((*d.items(), ("window_seq", trace["seq"][opened].tolist()),
                                         ("gets", [len(g) for g in groups]),
                                         ("rests_on", [((r, c),) for r, c in zip(d["rank"], d["core"])])))
        yield HitColumns(code=self.code, fields=SelfGet, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=("self get", "atomic add"), rows=np.stack((first, opened), axis=1),
                         key=H.row_keys(trace, first))


class SelfGet(NamedTuple):
    """A site's first get of its own rank's memory inside an atomic-add window."""

    rank: int
    core: int
    launch: int
    region: str
    offset: int
    local_region: str
    local_offset: int
    seq: int
    window_seq: int  # the atomic_mode add that opened the window
    gets: int  # self gets from the site in the window


def _message(f: SelfGet) -> str:
    more = f"; {f.gets} self gets from this site in the window" if f.gets > 1 else ""
    return (f"rank {f.rank} core {f.core} launch {f.launch}: get from its own rank {f.region}[{f.offset}] into "
            f"{f.local_region}[{f.local_offset}] at seq {f.seq} inside the atomic-add window opened at seq "
            f"{f.window_seq}: the self contribution is added through the atomic path (double counted){more}")


def _extra(f: SelfGet) -> dict:
    return {"gets": f.gets}
