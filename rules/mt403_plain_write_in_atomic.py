"""MT403: a plain local write issued inside an atomic-add window."""

from __future__ import annotations

import numpy as np

from . import _hits as H
from .analysis import CoreScan, Stage
from .analysis import codes as C
from .base import Confidence, Family, Rule, Severity


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
        for g in H.groups(rows, win[rows], trace["site"][rows]):
            r, o = int(g[0]), int(win[g[0]])
            d = trace.describe(r)
            more = f"; {len(g)} writes from this site in the window" if len(g) > 1 else ""
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: {d['kind']} to "
                   f"{d.get('region')}[{d.get('offset')}] ({d.get('nbytes')} B) at seq {d['seq']} inside the "
                   f"atomic-add window opened at seq {int(trace['seq'][o])}: it adds instead of overwriting{more}")
            conf = H.confidence_for(trace, cores=[(d["rank"], d["core"])]) or Confidence.CERTAIN
            yield self.hit(msg, rows=(("plain write", r), ("atomic add", o)),
                           key=(d["rank"], d["core"], d["seq"]), confidence=conf, extra={"writes": int(len(g))})
