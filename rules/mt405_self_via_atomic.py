"""MT405: the own rank's contribution read through the atomic-add path."""

from __future__ import annotations

import numpy as np

from . import _hits as H
from .analysis import CoreScan, Stage
from .analysis import codes as C
from .base import Family, Rule, Severity


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
        for g in H.groups(rows, win[rows], trace["site"][rows]):
            r, o = int(g[0]), int(win[g[0]])
            d = trace.describe(r)
            more = f"; {len(g)} self gets from this site in the window" if len(g) > 1 else ""
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: get from its own rank "
                   f"{d['region']}[{d['offset']}] into {d['local_region']}[{d['local_offset']}] at seq {d['seq']} "
                   f"inside the atomic-add window opened at seq {int(trace['seq'][o])}: the self "
                   f"contribution is added through the atomic path (double counted){more}")
            yield self.hit(msg, rows=(("self get", r), ("atomic add", o)),
                           key=(d["rank"], d["core"], d["seq"]), rests_on=((d["rank"], d["core"]),),
                           extra={"gets": int(len(g))})
