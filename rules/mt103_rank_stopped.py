"""MT103: a rank whose trace ends mid-kernel, or whose dump is missing while others wait on it."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Kind

from . import _hang
from .analysis import Stage, WaitForGraph
from .base import Confidence, Family, Rule, Severity, hits_of
from .hit_columns import HitColumns, coded_columns


class RankStopped(Rule):
    """A rank that stopped inside a kernel, or is missing from the dumps, while others need it.

    What it does
        Fires for every rank with a core whose trace ends inside a kernel
        (no kernel_end after its last kernel_begin) and not inside a wait or
        a barrier: it stopped emitting while running. Also fires for a rank
        a stuck wait or barrier depends on whose trace ends before that
        launch began, or that has no events at all (its dump is missing;
        the key is then (rank,) since there is no event to name, and the
        evidence is the waits that expect it).

    Why it matters
        The rank that died (trap, ECC error, killed process) or whose dump
        was lost is the root cause of every wait that expects it; the
        waiting ranks are only symptoms. Naming it first saves combing
        through dozens of identical stuck waits.

    Example
        Rank 2 issues a put and then nothing: no wait, no kernel_end. Rank 0
        waits on ready[2] forever. MT103 names rank 2 core 0's last event;
        the MT101 hit on rank 0 is caused by it.

    Evidence
        The last event of each stopped core (or the waits that expect a
        missing rank). Confidence partial-trace where the rank's dump is
        missing or its ring lost events, inferred otherwise (a dump cut at
        that point looks the same as a rank that died there).
    """

    code = "MT103"
    name = "rank-stopped"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A rank stopped mid-kernel or its dump is missing while others wait on it"
    requires = (Stage.WAIT_FOR,)
    cites = ("MT101", "MT102", "MT103", "MT104", "MT105", "MT201", "MT202", "MT204", "MT301", "MT501",
             "MT701", "MT703", "MT705")
    # An atomic the unified API aborts on (MT701, MT703, MT705) explains a core that stops right at it.
    ABORTS = ("MT701", "MT703", "MT705")
    infers_from = ("index", "slot_words", "params")

    def check(self, trace, ctx):
        wf = ctx.stage(WaitForGraph)
        waiting: dict = {}
        for n in wf.nodes:
            for c in n.causes:
                if c[0] == "MT103":
                    waiting.setdefault(tuple(c[1]), []).append(n)
        members = []
        for rank, (key, how, rows, gap) in wf.stops.items():
            waiters = waiting.get(tuple(key), [])
            if how != "stopped" and not waiters:
                continue
            aborts = self._aborts(trace, rows) if how == "stopped" else ()
            stopped = _stopped(trace, rank, key, how, rows, gap, bool(aborts), tuple(n.key for n in waiters))
            if how == "missing":
                ev = tuple(("waits on it", n.row) for n in waiters[:8])
            else:
                ev = tuple(("last event", r) for r in (rows if how == "stopped" else rows[:1]))
            # A missing dump has no event of its own: the finding is placed at the missing rank
            # (SARIF and CI blame it), not at the first waiter whose event is its evidence.
            place = (("rank", rank), ("core", None), ("region", None), ("offset", None), ("site", None),
                     ("source", None), ("launch", min(n.launch for n in waiters))) if how == "missing" and waiters else ()
            members.append((stopped, ev, tuple(key), place, aborts))
        # A missing dump's key is (rank,), a stopped core's (rank, core, seq): a batch's keys are one
        # array of one width, so each width is a batch of its own (the report orders findings by
        # their fields, not by batch).
        for width in sorted({len(m[2]) for m in members}, reverse=True):
            yield self._batch([m for m in members if len(m[2]) == width])

    def _batch(self, members: list) -> HitColumns:
        fields = [m[0] for m in members]
        columns, tables = coded_columns((
            *zip(StoppedRank._fields, zip(*fields)),
            ("confidence", [Confidence.PARTIAL_TRACE if (f.lost or f.how == "missing") else Confidence.INFERRED
                            for f in fields]),
            ("location", [m[3] for m in members]), ("caused_by", [m[4] for m in members]),
            # "Ends before the launch others wait in" says only that the rank made no progress:
            # where one of its cores is the waiter of a root's stuck wait, it spins there (the
            # engine then makes this that root's symptom); a rank that died says more than that.
            ("stalls", [((f.rank, None),) if f.how == "not-started" else () for f in fields]),
            # One defect per way the rank stopped (and whether the unified API aborted it there).
            ("defect", [f"{f.how}{' at an abort' if f.aborted else ''}{' gap' if f.lost else ''}" for f in fields])))
        tables["location"] = tuple(dict(items) for items in tables["location"])
        roles, rows = _hang.evidence([m[1] for m in members])
        return HitColumns(code=self.code, fields=StoppedRank, render=_message, extra=_extra, columns=columns,
                          tables=tables, roles=roles, rows=rows, key=np.array([m[2] for m in members], np.int64))

    def _aborts(self, trace, rows) -> tuple:
        """The abort hits (MT701, MT703, MT705) whose atomic is the last event of one of the stopped cores."""
        last = {int(r) for r in rows}
        return tuple((code, h.key) for code in self.ABORTS for h in hits_of(trace, code)
                     if last & {row for _, row in h.rows})


def _stopped(trace, rank: int, key: tuple, how: str, rows: tuple, gap, aborted: bool, waiters: tuple) -> "StoppedRank":
    """The fields of a stop of the wait-for graph: what the message says of each way to stop."""
    if how == "stopped":
        return StoppedRank(rank, how, Kind(int(trace["kind"][rows[0]])).wire, key[2],
                           tuple(int(trace["core"][r]) for r in rows), None, gap, aborted, waiters)
    launch = (int(trace["launch"][rows[0]]) if rows else -1) if how == "not-started" else None
    return StoppedRank(rank, how, None, None, (), launch, gap, aborted, waiters)


class StoppedRank(NamedTuple):
    """A rank that stopped mid-kernel, ended early or left no dump, and the stuck nodes that expect it."""

    rank: int
    how: str  # stopped (mid-kernel), not-started (its trace ends before the launch others wait in), missing
    last_kind: str | None  # stopped: the kind and seq of its first stopped core's last event
    last_seq: int | None
    cores: tuple  # stopped: the cores whose trace ends mid-kernel
    launch: int | None  # not-started: the launch its trace ends after (-1: it has no event)
    lost: str | None  # what of its trace is lost (ring wrap, missing dump)
    aborted: bool  # it stopped at an atomic the unified API aborts on
    waiters: tuple  # the keys of the stuck waits and barriers that expect it


def _message(f: StoppedRank) -> str:
    also = ""
    if f.waiters:
        who = sorted({(k[0], k[1]) for k in f.waiters})
        ws = ", ".join(f"rank {r} core {c}" for r, c in who[:6]) + (" ..." if len(who) > 6 else "")
        also = f"; {len(f.waiters)} stuck waits/barriers expect it ({ws})"
    if f.how == "missing":
        msg = f"rank {f.rank}: no events at all (its dump is missing){also}"
    elif f.how == "stopped":
        msg = (f"rank {f.rank}: trace ends mid-kernel on core(s) {', '.join(map(str, f.cores))}, outside any wait "
               f"(last event {f.last_kind} at seq {f.last_seq}): the rank died or its dump was cut{also}")
    else:
        msg = f"rank {f.rank}: trace ends after launch {f.launch}, before the launch others wait in{also}"
    msg += _hang.gap_note((f.lost,) if f.lost else ())
    return msg + ("; it stopped at an atomic the unified API aborts on" if f.aborted else "")


def _extra(f: StoppedRank) -> dict:
    return {"rank": f.rank, "how": f.how, "waiters": [list(k) for k in f.waiters], "gap": f.lost}
