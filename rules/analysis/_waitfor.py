"""The wait-for analysis of a hung trace, computed once per TraceView.

``analyze(trace)`` finds the stuck waits (no wait_end by the trace's end, or
a timeout) and the stuck barriers, asks of each who should have released it
(``_waitfor_producers``) and what they did instead, links the stuck nodes
into a wait-for graph (MUST-style) and condenses it: a node's root causes
are the explanations that point outside the graph, reached through the
nodes it waits behind; a cycle with no outside cause is a deadlock.

Cause links are (code, (rank, core, seq)) of the cause's primary event:
MT501 the route, MT301 the deliver, MT204 the wait_begin, MT105 the
misdirected write, MT103 the last event of the stopped core
((rank,) for a missing dump: it has no event), MT101 / MT102 the stuck
wait_begin / barrier_begin, MT104 the smallest wait_begin of the cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ingest.contract import Cmp, Kind

from ..base import Confidence
from . import _waitfor_barriers as barriers
from ._cache import cached
from ._waitfor_build import Builder
from ._waitfor_producers import Verdict, classify, expected
from .graph import strongly_connected
from .stages import Stage


@dataclass
class Node:
    """A stuck wait (MT101) or a stuck barrier (MT102)."""

    id: int
    code: str
    row: int  # the wait_begin / barrier_begin; the timeout wait_end if its begin was lost
    end_row: int  # the timeout wait_end, or -1
    rank: int
    core: int
    seq: int
    launch: int
    site: int | None = None
    region: int = -1
    offset: int = -1
    slot: int = -1
    cmp: int = -1
    target: int = 0
    words: int = 1
    skey: int = -1
    scope: int = -1
    instance: int = 0
    current: int | None = None
    current_text: str = ""
    verdicts: list[Verdict] = field(default_factory=list)
    caused_by: tuple = ()
    roots: tuple = ()
    cycle: tuple | None = None  # the MT104 key when the node sits in a deadlock cycle

    @property
    def key(self) -> tuple[int, int, int]:
        return (self.rank, self.core, self.seq)

    @property
    def ref(self) -> tuple[str, tuple]:
        return (self.code, self.key)

    @property
    def edges(self) -> list[int]:
        return list(dict.fromkeys(e for v in self.verdicts if v.blocker for e in v.edges))

    @property
    def causes(self) -> list[tuple]:
        return list(dict.fromkeys(c for v in self.verdicts if v.blocker for c in v.causes))

    @property
    def gaps(self) -> list[str]:
        return list(dict.fromkeys(v.gap for v in self.verdicts if v.gap))

    @property
    def confidence(self) -> Confidence:
        """partial-trace where a gap in the trace touches the explanation; inferred where the
        producer comes from the protocol (index, routes, history); certain otherwise."""
        if self.gaps:
            return Confidence.PARTIAL_TRACE
        if any(v.via in ("index", "route", "history", "barrier") for v in self.verdicts):
            return Confidence.INFERRED
        return Confidence.CERTAIN


@dataclass(frozen=True)
class Cycle:
    key: tuple
    members: list[int]


@dataclass(frozen=True)
class WaitForGraph:
    """The analysis' result, computed once per view: the stuck nodes (their verdicts and cause
    links settled before it is built), the deadlock cycles, the stopped ranks, the misdirected
    writes, and the tables the verdicts were read from (for rules that quote them)."""

    stage: ClassVar[Stage] = Stage.WAIT_FOR

    nodes: list[Node]
    cycles: list[Cycle]
    stops: dict  # rank -> (key, kind, rows, gap): ranks that died, stopped early or are missing
    wrong: dict  # MT105 key -> (row, text, expected_by node ids)
    builder: Builder

    def waits(self) -> list[Node]:
        return [n for n in self.nodes if n.code == "MT101"]

    def barriers(self) -> list[Node]:
        return [n for n in self.nodes if n.code == "MT102"]

    def node(self, ref: tuple) -> Node | None:
        for n in self.nodes:
            if n.ref == tuple(ref):
                return n
        return None

    def root_causes(self) -> dict[tuple, list[Node]]:
        """Every root cause with the stuck nodes it explains (STAT-style counts)."""
        out: dict[tuple, list[Node]] = {}
        for n in self.nodes:
            for r in (n.roots or (n.ref,)):
                out.setdefault(r, []).append(n)
        return out

    def classes(self) -> dict[tuple, list[Node]]:
        """Stuck waits grouped by (site, region, cmp, target): one line per class in a report."""
        out: dict[tuple, list[Node]] = {}
        for n in self.waits():
            out.setdefault(class_of(self.builder.trace, n), []).append(n)
        return out


def class_of(trace, n: Node) -> tuple:
    name = trace.manifest.regions[n.region].name if n.region >= 0 else None
    return (n.site, name, Cmp(n.cmp).wire if n.cmp >= 0 else None, n.target)


def analyze(trace) -> WaitForGraph:
    """The wait-for analysis of ``trace``, memoized on the TraceView object."""
    return cached(trace, "waitfor", lambda: _analyze(trace), Stage.WAIT_FOR)


def _analyze(trace) -> WaitForGraph:
    b = Builder(trace)
    nodes: list[Node] = []
    for begin, end in zip(b.stuck_begin.tolist(), b.stuck_end.tolist()):
        nodes.append(_wait_node(b, len(nodes), begin, end))
    for row in barriers.stuck_rows(b):
        nodes.append(barriers.node(b, len(nodes), row, Node))
    b.attach(nodes)
    for n in nodes:
        if n.code == "MT101":
            _explain_wait(b, n)
        else:
            barriers.explain(b, n)
    cycles = _condense(nodes)
    return WaitForGraph(nodes, cycles, b.stops(), b.wrong, b)


def _wait_node(b: Builder, i: int, begin: int, end: int) -> Node:
    t = b.trace
    row = begin if begin >= 0 else end
    region = int(t["region"][row])
    offset = int(t["offset"][row])
    n = Node(i, "MT101", row, end, int(t["rank"][row]), int(t["core"][row]), int(t["seq"][row]),
             int(t["launch"][row]))
    site = int(t["site"][row])
    n.site = None if site == t.null("site") else site
    n.region, n.offset = region, offset
    n.slot = b.tables.slot_of(region, offset)
    n.skey = int(b.tables.skey(n.rank, region, n.slot))
    if begin >= 0:
        n.cmp, n.target = int(t["cmp"][row]), int(t["value"][row])
        words = int(t.wait_words[row])
        n.words = 1 if words == t.null("words") else words
    n.current, n.current_text = b.current_value(n)
    return n


def _explain_wait(b: Builder, n: Node) -> None:
    if n.cmp < 0:  # the begin was lost: we do not know what it waited for
        n.verdicts.append(Verdict(None, "trace", "unknown", "its wait_begin was lost to ring wrap",
                                  gap=b.gap_of_core(n.rank, n.core)))
        return
    producers, early = expected(b, n)
    n.verdicts.extend(early)
    for p, via, why in producers:
        n.verdicts.append(classify(b, n, p, via, why))
    if not n.verdicts:
        n.verdicts.append(Verdict(None, "none", "unknown", "no producer is known for this slot "
                                  "(the region has no index and nobody wrote it before)"))


def _condense(nodes: list[Node]) -> list[Cycle]:
    """Root causes per strongly connected component, sinks first."""
    comps = strongly_connected([n.edges for n in nodes])  # node ids are their indices
    comp_of = {v: i for i, c in enumerate(comps) for v in c}
    roots_of: list[tuple] = []
    cycles: list[Cycle] = []
    for ci, comp in enumerate(comps):  # Tarjan emits a component after all it reaches
        members = [nodes[v] for v in comp]
        roots: dict = {}
        for m in members:
            for c in m.causes:
                roots[c] = None
            for e in m.edges:
                if comp_of[e] != ci:
                    roots.update(dict.fromkeys(roots_of[comp_of[e]]))
        cyclic = len(comp) > 1 or any(m.id in m.edges for m in members)
        cyc = None
        if not roots and cyclic:
            first = min(members, key=lambda m: m.key)
            cyc = ("MT104", first.key)
            cycles.append(Cycle(first.key, sorted(comp)))
            roots[cyc] = None
        roots_of.append(tuple(roots) if roots else ((members[0].ref,) if len(members) == 1 else ()))
        for m in members:
            m.cycle = cyc[1] if cyc else None
            direct = dict.fromkeys(m.causes)
            for e in m.edges:
                if comp_of[e] != ci:
                    direct[nodes[e].ref] = None
            if cyc:
                direct[cyc] = None
            for r in roots:
                direct[r] = None
            direct.pop(m.ref, None)
            m.caused_by = tuple(direct)
            m.roots = tuple(r for r in roots if r != m.ref)
    return cycles


__all__ = ["analyze", "WaitForGraph", "Node", "Cycle", "Verdict", "class_of", "Kind"]
