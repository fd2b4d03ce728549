"""MT403: a plain local write issued inside an atomic-add window."""

from __future__ import annotations

import numpy as np

from . import _hits as H
from .analysis import CoreScan, Stage
from .analysis import codes as C
from .base import Family, Rule, Severity


class PlainWriteInAtomic(Rule):
    """A plain write to local memory while the core's atomic mode is add.

    What it does
        Flags every `write` event, and every put to the core's own rank,
        issued between `atomic_mode add` and the next `atomic_mode none` of
        its core (a column predicate over the shared atomic-window pass).
        One hit per (window, call site), with the number of writes.

    Why it matters
        Atomic mode turns every subsequent UB/L1 to GM write of the core into
        an add, not only the transfers the window was opened for. A copy or
        a flag reset meant to overwrite adds to the old value instead: the
        buffer ends up holding old + new, and a reset flag keeps its value.

    Example
        atomic_mode add; get mte peer=1 -> out; write ready[0] = 0; atomic_mode none
        -- move the reset out of the window.

    Evidence
        The write (first) and the `atomic_mode add` that opened the window.
    """

    code = "MT403"
    name = "plain-write-in-atomic"
    family = Family.MISSING_DRAIN
    severity = Severity.ERROR
    summary = "Plain local write (write, or put to own rank) inside an atomic-add window"
    requires = (Stage.CORE_SCAN,)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        kind = trace["kind"]
        win = ctx.stage(CoreScan).atomic_window()
        own = (kind == C.K_PUT) & (trace["peer"] == trace["rank"])  # both int16
        rows = np.flatnonzero((win >= 0) & ((kind == C.K_WRITE) | own))
        # One hit per (window, site): a loop of writes in one window is one misplaced copy.
        first, writes = H.group_heads(rows, win[rows], trace["site"][rows])
        opened = win[first]
        # The fields the message names, a column at a time (not trace.describe per hit).
        named = ("rank", "core", "launch", "kind", "region", "offset", "nbytes", "seq")
        d = H.described(trace, first, named)
        columns = (first.tolist(), opened.tolist(), trace["seq"][opened].tolist(), writes.tolist(),
                   *(d[f] for f in named))
        for r, o, seq_o, n, rank, core, launch, kind_name, region, offset, nbytes, seq in zip(*columns):
            more = f"; {n} writes from this site in the window" if n > 1 else ""
            msg = (f"rank {rank} core {core} launch {launch}: {kind_name} to "
                   f"{region}[{offset}] ({nbytes} B) at seq {seq} inside the "
                   f"atomic-add window opened at seq {seq_o}: it adds instead of overwriting{more}")
            yield self.hit(msg, rows=(("plain write", r), ("atomic add", o)),
                           key=(rank, core, seq), rests_on=((rank, core),), extra={"writes": n})
