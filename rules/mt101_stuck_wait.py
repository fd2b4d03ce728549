"""MT101: a wait that never ended, with who should have released it and why they never did."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Cmp

from . import _hang
from .analysis import Stage, WaitForGraph
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


class StuckWait(Rule):
    """A wait_until whose condition never held: the trace ends inside it, or it timed out.

    What it does
        Finds every wait_begin with no wait_end after it on its core by the
        end of the trace, and every wait_end with outcome timeout. For each it
        names the slot (region[slot] of the waiting rank, slot = offset //
        slot_words), the comparison and target, the slot's last known value,
        and its expected producers: from the region's index (token_topk: the
        rank owning the expert of that route; segment and dispatch: the source
        rank; rank: the slot's rank) or, without one, from who wrote the slot
        in earlier launches. Each producer gets a verdict: itself stuck,
        finished without writing (with the dropped route or clamped row that
        explains it), wrote another value (a generation already past the
        target under ==), wrote another slot or peer, stopped mid-kernel, or
        its dump is missing. The hit's caused_by links the root causes found
        by following those verdicts through the wait-for graph.

    Why it matters
        A hung all-to-all shows the same spinning wait on many ranks; the
        useful answer is the one rank and event that never released it. The
        symptoms are grouped by (site, region, cmp, target) in extra.class,
        so a report can print one line per class under its root cause.

    Example
        Combine on rank 0 waits on combine_status[3] (token 1, top-k 1) eq 1;
        the route of that pair carries expert 9 of 4, so dispatch sent it
        nowhere and no rank ever writes that status slot. The MT101 hit is
        caused by the MT501 hit on the route event.

    Evidence
        The stuck wait_begin (and its timeout wait_end), the producers'
        writes into the slot where they wrote a wrong value, and the events
        the root causes name (route, deliver, misdirected write, last event
        of a stopped rank).
    """

    code = "MT101"
    name = "stuck-wait"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A wait never ended (or timed out); names the slot, its producers and why they never wrote"
    requires = (Stage.WAIT_FOR,)
    cites = ("MT101", "MT102", "MT103", "MT104", "MT105", "MT201", "MT202", "MT204", "MT301", "MT501")
    infers_from = ("index", "slot_words", "reset", "monotonic", "params")

    def check(self, trace, ctx):
        wf = ctx.stage(WaitForGraph)
        nodes = wf.waits()
        if not nodes:
            return
        stops = wf.stops
        members, causes = [], []
        for n in nodes:
            own = stops.get(n.rank)
            stopped_at = None
            cited = tuple(n.caused_by)
            if not n.roots and n.cycle is None and own is not None and own.how == "stopped":
                # Another core of the waiting rank stopped mid-kernel: the kernel trapped (an abort
                # kills every core of the rank), so the wait never returned, whatever arrived.
                stopped_at = own.key[2]
                cited += (("MT103", own.key),)
            members.append(_unended(wf, n, stopped_at))
            causes.append(cited)
        columns, tables = coded_columns((
            *zip(UnendedWait._fields, zip(*members)), ("caused_by", causes),
            ("blocks", [((n.rank, n.core),) for n in nodes]), ("confidence", [n.confidence for n in nodes]),
            ("defect", [defect_of(n) for n in nodes])))
        roles, rows = _hang.evidence([rows_of(n) for n in nodes])
        yield HitColumns(code=self.code, fields=UnendedWait, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=roles, rows=rows, key=np.array([n.key for n in nodes], np.int64))


class UnendedWait(NamedTuple):
    """A stuck wait: where it waits, for what, and its verdicts on the producers it expects."""

    rank: int
    core: int
    launch: int
    site: int | None
    region: str
    slot: int
    words: int
    cmp: str | None  # None: its wait_begin was lost (it timed out), so what it waited for is unknown
    target: int
    timed_out: bool
    current: int | None  # the slot's last known value, and how the message words it
    current_text: str
    producers: tuple  # the wait-for graph's verdicts on its expected producers
    in_cycle: bool  # it sits in a deadlock cycle
    roots: tuple  # the root causes (code, key) the graph follows its verdicts to
    gaps: tuple  # the lost parts of the trace its verdicts touch
    stopped_at: int | None  # the seq of the last event of another core of its rank that stopped mid-kernel


def _unended(wf, n, stopped_at: int | None) -> UnendedWait:
    return UnendedWait(n.rank, n.core, n.launch, n.site, wf.region_names[n.region], n.slot, n.words,
                       Cmp(n.cmp).wire if n.cmp >= 0 else None, n.target, n.end_row >= 0, n.current,
                       n.current_text, tuple(n.verdicts), n.cycle is not None, tuple(n.roots), tuple(n.gaps),
                       stopped_at)


def _message(f: UnendedWait) -> str:
    return _waited(f) + ("" if f.stopped_at is None else
                         f"; another core of rank {f.rank} stopped mid-kernel (last event at seq {f.stopped_at}): "
                         f"the rank's kernel died, and this wait with it")


def _waited(f: UnendedWait) -> str:
    if f.cmp is None:
        return (f"rank {f.rank} core {f.core} launch {f.launch}: a wait on {f.region}"
                f"[{f.slot}] timed out; its wait_begin was lost to ring wrap")
    what = "timed out" if f.timed_out else "never ended"
    words = f" ({f.words} words)" if f.words > 1 else ""
    head = (f"rank {f.rank} core {f.core} launch {f.launch}: wait on {f.region}[{f.slot}]{words} "
            f"{f.cmp} {f.target} {what} ({f.current_text})")
    body = _hang.listed([v.text for v in _blocking(f.producers)], 4, " producers")
    tail = ""
    if f.in_cycle:
        tail = " (part of a deadlock cycle)"
    elif not f.roots:
        tail = " (root cause: nothing outside this wait explains it)"
    return f"{head}: {body}{tail}{_hang.gap_note(f.gaps)}"


def _extra(f: UnendedWait) -> dict:
    # The class (site, region, cmp, target): the stuck waits a report prints as one line.
    return {"class": [f.site, f.region, f.cmp, f.target], "slot": f.slot, "current": f.current,
            "timeout": f.timed_out, "producers": _hang.producers_json(f.producers),
            "roots": _hang.roots_json(f.roots), "gaps": list(f.gaps)}


def _blocking(verdicts) -> list:
    """The verdicts on producers that did not do their part (all of them where each did)."""
    return [v for v in verdicts if v.blocker] or list(verdicts)


def defect_of(n) -> str:
    """The defect the wait shows, from its fields: how it ended, what its blocking producers did
    (their verdicts' statuses), and whether a cycle or nothing outside it explains it."""
    if n.cmp < 0:
        return "timed-out, wait_begin lost"
    what = "timed-out" if n.end_row >= 0 else "never-ended"
    tail = " cycle" if n.cycle is not None else (" unexplained" if not n.roots else "")
    return f"{what}: {'+'.join(sorted({v.status for v in _blocking(n.verdicts)}))}{tail}{' gap' if n.gaps else ''}"


def rows_of(n) -> tuple:
    rows = [("stuck wait", n.row)]
    if n.end_row >= 0 and n.end_row != n.row:
        rows.append(("timeout", n.end_row))
    for v in n.verdicts:
        rows.extend(v.rows)
    return tuple(dict.fromkeys(rows))
