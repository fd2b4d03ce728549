"""MT102: a barrier that some participants never reached, so the others never left it."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Scope

from . import _hang
from .analysis import Stage, WaitForGraph
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


class BarrierIncomplete(Rule):
    """A barrier_begin with no barrier_end: names the participants that never arrived.

    What it does
        A barrier instance is the k-th barrier of one scope within one launch
        on each participant (the cores of the rank for scope core; every rank
        of the manifest, on the cores that run barriers of that scope, for
        all and team). For every core whose trace ends inside a barrier, it
        lists the participants whose count of barriers in that launch and
        scope stays below k, and what each did instead: stuck in a wait or
        another barrier (followed through the wait-for graph), stopped
        mid-kernel or missing its dump, or finished the launch without ever
        entering the barrier (a code path that skips it).

    Why it matters
        A barrier that never completes hangs every rank that reached it; the
        cause is always on a rank that did not. DeepEP's "timeout check
        failed: rank = 7, thread = 0, value = 1024" means rank 0 never
        arrived, but the message names the waiter; this names the absentee.

    Example
        Ranks 0 and 1 enter their second barrier_all of launch 3; rank 2 is
        still waiting on count[5] of its own dispatch. Each of the two stuck
        barriers is a hit naming rank 2, caused by rank 2's stuck wait.

    Evidence
        The stuck barrier_begin; the causes name the absentees' stuck waits
        or last events.
    """

    code = "MT102"
    name = "barrier-incomplete"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A barrier some participants never reached, so it never completed"
    requires = (Stage.WAIT_FOR,)
    cites = ("MT101", "MT102", "MT103", "MT104", "MT105", "MT201", "MT202", "MT204", "MT301", "MT501")
    infers_from = ("index", "slot_words", "reset", "monotonic", "params")

    def check(self, trace, ctx):
        nodes = ctx.stage(WaitForGraph).barriers()
        if not nodes:
            return
        members = [IncompleteBarrier(n.rank, n.core, n.launch, n.site, n.instance, _scope(n.scope), tuple(n.verdicts),
                                     tuple(n.roots), tuple(n.gaps)) for n in nodes]
        columns, tables = coded_columns((
            *zip(IncompleteBarrier._fields, zip(*members)), ("caused_by", [n.caused_by for n in nodes]),
            ("blocks", [((n.rank, n.core),) for n in nodes]), ("confidence", [n.confidence for n in nodes]),
            ("defect", [_defect(f) for f in members])))
        yield HitColumns(code=self.code, fields=IncompleteBarrier, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=("stuck barrier",), rows=np.array([[n.row] for n in nodes], np.int64),
                         key=np.array([n.key for n in nodes], np.int64))


class IncompleteBarrier(NamedTuple):
    """A barrier a core entered and never left, and the wait-for graph's verdicts on its participants."""

    rank: int
    core: int
    launch: int
    site: int | None
    instance: int  # its number among the barriers of its scope in the launch
    scope: str
    participants: tuple  # the verdicts on the participants (blockers: the ones that never arrived)
    roots: tuple  # the root causes (code, key) the graph follows the verdicts to
    gaps: tuple  # the lost parts of the trace the verdicts touch


def _scope(scope: int) -> str:
    return Scope(scope).wire if 0 <= scope < len(Scope) else str(scope)


def _absent(f: IncompleteBarrier) -> list:
    return [v for v in f.participants if v.blocker]


def _defect(f: IncompleteBarrier) -> str:
    """One defect per scope and what the absent participants did (or a lost wake-up)."""
    statuses = "+".join(sorted({v.status for v in _absent(f)})) or "lost-wakeup"
    return f"{f.scope}: {statuses}{' gap' if f.gaps else ''}"


def _message(f: IncompleteBarrier) -> str:
    absent = _absent(f)
    head = (f"rank {f.rank} core {f.core} launch {f.launch}: barrier #{f.instance} "
            f"(scope {f.scope}) never completed")
    body = (_hang.listed([v.text for v in absent], 6) if absent
            else "every participant reached it, yet it never left (a lost wake-up)")
    return f"{head}: {body}{_hang.gap_note(f.gaps)}"


def _extra(f: IncompleteBarrier) -> dict:
    return {"class": [f.site, "barrier", f.scope, f.instance], "missing": [[v.rank, v.status] for v in _absent(f)],
            "producers": _hang.producers_json(f.participants), "roots": _hang.roots_json(f.roots),
            "gaps": list(f.gaps)}
