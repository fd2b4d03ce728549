"""MT403: a plain local write issued inside an atomic-add window."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Kind

from . import _hits as H
from .analysis import CoreScan, Stage
from .analysis import codes as C
from .analysis.groups import group_columns
from .base import Family, Rule, Severity
from .hit_columns import HitColumns


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
        if not len(first):
            return
        opened = win[first]
        # Every hit's fields as columns (``HitColumns``): a window of copies can hold tens of thousands.
        at = {name: trace[name][first] for name in ("rank", "core", "launch", "seq", "region", "offset", "nbytes")}
        kinds, kind_of = np.unique(trace["kind"][first], return_inverse=True)
        places = group_columns([at["rank"], at["core"]])
        yield HitColumns(
            code=self.code, fields=PlainWrite, render=_message, extra=_extra,
            columns={**{name: at[name] for name in ("rank", "core", "launch", "region", "offset", "nbytes", "seq")},
                     "kind": kind_of.astype(np.int8), "opened_seq": trace["seq"][opened], "writes": writes,
                     "rests_on": places.inverse},
            tables={"kind": tuple(Kind(k).wire for k in kinds.tolist()),
                    "region": tuple(r.name for r in trace.declared.regions),
                    "rests_on": tuple(((r, c),) for r, c in places.values.T.tolist())},
            nulls={name: trace.null(name) for name in ("launch", "region", "offset", "nbytes")},
            roles=("plain write", "atomic add"), rows=np.stack((first, opened), axis=1).astype(np.int64),
            key=np.stack([at[name].astype(np.int64) for name in ("rank", "core", "seq")], axis=1))


class PlainWrite(NamedTuple):
    """A plain write in an atomic-add window: its message and extra are rendered from these."""

    rank: int
    core: int
    launch: int | None
    kind: str  # the write's kind, as the trace names it (write, put)
    region: str | None
    offset: int | None
    nbytes: int | None
    seq: int
    opened_seq: int  # the atomic_mode add that opened the window
    writes: int  # writes from this site in the window


def _message(f: PlainWrite) -> str:
    more = f"; {f.writes} writes from this site in the window" if f.writes > 1 else ""
    return (f"rank {f.rank} core {f.core} launch {f.launch}: {f.kind} to {f.region}[{f.offset}] ({f.nbytes} B) "
            f"at seq {f.seq} inside the atomic-add window opened at seq {f.opened_seq}: it adds instead of "
            f"overwriting{more}")


def _extra(f: PlainWrite) -> dict:
    return {"writes": f.writes}
