"""The drawn events of one timeline: slices for what has a duration, instants for the rest.

A process per rank (pid = rank), a thread per core (tid = core).  Kernels,
waits and barriers are slices from their begin to their end event; every
other event (puts, signals, quiets, atomics, wait_end, ...) is an instant:
a slice of at most one cycle, never reaching the core's next event, so the
slices on a core nest exactly and a flow can bind to it in both Perfetto
(the enclosing slice at the flow's ts) and chrome://tracing (same pid, tid,
ts and category).  A begin with no end is drawn to the next event of its
core, or, when it is the core's last open operation, to the end of its
rank's trace (the post-mortem moment), and is marked: its name starts with
STUCK (NEVER ENDED for a kernel), its args say ``stuck: true``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from ingest.contract import Kind

from ._fields import FAMILY, fields, label

CATEGORY = "moetrace"
_OPENS = {Kind.KERNEL_BEGIN: "kernel", Kind.WAIT_BEGIN: "wait", Kind.BARRIER_BEGIN: "barrier"}
_CLOSES = {Kind.KERNEL_END: "kernel", Kind.WAIT_END: "wait", Kind.BARRIER_END: "barrier"}


def us(cycles: int | float) -> float:
    """Chrome JSON counts µs; one cycle is drawn as one ns, exactly, whatever the clock."""
    return cycles / 1000


class Drawn(NamedTuple):
    """The drawn rows, in trace order, and what each is drawn with."""
    rows: np.ndarray   # trace rows
    ts: np.ndarray     # placed cycles
    gap: np.ndarray    # cycles up to the next event of the same core (at most one)
    kind: np.ndarray
    info: list[dict]   # the event's fields, as its slice's args


@dataclass
class Drawing:
    events: list[dict] = field(default_factory=list)
    anchor: dict[int, dict] = field(default_factory=dict)  # trace row -> the drawn event it binds to
    stuck: list[dict] = field(default_factory=list)        # the STUCK / NEVER ENDED slices
    flows: list[dict] = field(default_factory=list)        # s / f pairs (analyzer.timeline._flows)


def draw(trace, rows: np.ndarray, ts: np.ndarray) -> Drawing:
    """``rows``: drawn trace rows in trace order ((rank, core, seq)); ``ts``: their placed cycles."""
    d = Drawing()
    if not len(rows):
        return d
    rank = trace["rank"][rows].astype(np.int64)
    core = trace["core"][rows].astype(np.int64)
    kind = trace["kind"][rows]
    new_core = np.ones(len(rows), bool)
    new_core[1:] = (rank[1:] != rank[:-1]) | (core[1:] != core[:-1])
    gap = np.ones(len(rows), np.int64)  # up to the next event of the same core
    same = ~new_core[1:]
    gap[:-1][same] = np.minimum(1, ts[1:][same] - ts[:-1][same])
    rank_end = {}
    for r in np.unique(rank).tolist():
        on = rank == r
        rank_end[r] = int((ts[on] + gap[on]).max())
    info = fields(trace, rows)
    seq = trace["seq"][rows].tolist()
    launch = trace["launch"][rows].tolist()
    for i, f in enumerate(info):
        f["seq"], f["launch"] = seq[i], launch[i]
    starts = np.flatnonzero(new_core).tolist() + [len(rows)]
    drawn = Drawn(rows, ts, gap, kind, info)
    for a, b in zip(starts[:-1], starts[1:]):
        _core(d, drawn, a, b, int(rank[a]), int(core[a]), rank_end[int(rank[a])])
    return d


def _core(d: Drawing, drawn: Drawn, a: int, b: int, r: int, c: int, rank_end: int) -> None:
    """Draw rows a .. b - 1 of ``drawn``, the events of rank r's core c."""
    rows, ts, gap, kind, info = drawn
    open_: list[tuple[str, int, dict]] = []  # (what, index, its slice event), innermost last

    def close(i_end: int | None, end_at: int, ended: bool) -> None:
        what, i, ev = open_.pop()
        ev["dur"] = us(max(0, end_at - ts[i]))
        if not ended:
            stuck = "NEVER ENDED" if what == "kernel" else "STUCK"
            ev["name"] = f"{stuck} {ev['name']}"
            ev["args"]["stuck"] = True
            ev["cname"] = "terrible"
            d.stuck.append(ev)
        elif i_end is not None:
            ev["args"]["end"] = {"kind": Kind(int(kind[i_end])).wire, **info[i_end]}
            ev["args"]["duration_cycles"] = int(ts[i_end] - ts[i])

    for i in range(a, b):
        k = Kind(int(kind[i]))
        t = int(ts[i])
        row = int(rows[i])
        f = info[i]
        what_opens, what_closes = _OPENS.get(k), _CLOSES.get(k)
        if what_opens is not None or k == Kind.KERNEL_END:
            # A wait or barrier still open when anything else opens, or the kernel ends, never ended.
            while open_ and open_[-1][0] != "kernel" and (what_opens is not None or what_closes == "kernel"):
                close(None, t, ended=False)
        if what_closes is not None:
            while open_ and open_[-1][0] != what_closes and open_[-1][0] != "kernel":
                close(None, t, ended=False)
        ev = _event(k, f, r, c, t, int(gap[i]))
        if what_opens is not None:
            ev["args"]["stuck"] = False
            open_.append((what_opens, i, ev))
        d.events.append(ev)
        d.anchor[row] = ev
        if what_closes is not None and open_ and open_[-1][0] == what_closes:
            if k == Kind.WAIT_END and f.get("outcome") == "timeout":
                open_[-1][2]["cname"] = "bad"
            close(i, t + int(gap[i]), ended=True)
    while open_:
        close(None, rank_end, ended=False)


def _event(k: Kind, f: dict, r: int, c: int, t: int, gap: int) -> dict:
    args = {"kind": k.wire, "family": FAMILY.get(k, "other"), "rank": r, "core": c, **f}
    return {"name": label(k, f), "cat": CATEGORY, "ph": "X", "pid": r, "tid": c, "ts": us(t),
            "dur": us(gap), "args": args}
