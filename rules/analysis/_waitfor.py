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

from dataclasses import MISSING, dataclass, field, fields, make_dataclass
from types import MappingProxyType
from typing import ClassVar, Mapping

from ingest.contract import Cmp, Kind

from ..base import Confidence
from . import _waitfor_barriers as barriers
from ._cache import cached
from ._waitfor_build import Builder, Stop, stuck_words
from ._waitfor_producers import Verdict, classify, expected
from ._waitfor_stale import aliased_routes
from .graph import strongly_connected
from .stages import Stage


class _Facts:
    """What a node says, read off its fields (shared by the frozen node and its draft)."""

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
class Node(_Facts):
    """A stuck wait (MT101) or a stuck barrier (MT102), as the graph settled it."""

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
    verdicts: tuple[Verdict, ...] = ()
    caused_by: tuple = ()
    roots: tuple = ()
    cycle: tuple | None = None  # the MT104 key when the node sits in a deadlock cycle


# The node while the graph is built: the same fields, mutable, its verdicts a list. Each is
# frozen into a Node once the graph is condensed; nothing outside this package sees a draft.
def _draft_field(f):
    if f.name == "verdicts":
        return f.name, list, field(default_factory=list)
    return (f.name, f.type) if f.default is MISSING else (f.name, f.type, field(default=f.default))


_Draft = make_dataclass("_Draft", [_draft_field(f) for f in fields(Node)], bases=(_Facts,))


def _frozen(d) -> Node:
    values = {f.name: getattr(d, f.name) for f in fields(Node)}
    return Node(**{**values, "verdicts": tuple(d.verdicts)})


@dataclass(frozen=True)
class Cycle:
    key: tuple
    members: tuple[int, ...]


@dataclass(frozen=True)
class Misdirected:
    """A producer's write that landed on another slot or rank than the one a stuck wait needs."""

    row: int  # the write's event
    owner: int  # the rank whose slot it wrote
    launch: int
    target: str  # "region[slot] of rank r": what it wrote
    waits: tuple[int, ...]  # the ids of the stuck nodes that expected it
    aliased: tuple[tuple, ...]  # (MT501, key, text, row): the writer's invalid routes that shift its slots


@dataclass(frozen=True)
class WaitForGraph:
    """The analysis' result, computed once per view: the stuck nodes (their verdicts and cause
    links settled before it is built), the deadlock cycles, the stopped ranks, the misdirected
    writes, and what of the trace a rule quotes beside them (region names, ranks' gaps)."""

    stage: ClassVar[Stage] = Stage.WAIT_FOR

    nodes: tuple[Node, ...]
    cycles: tuple[Cycle, ...]
    stops: Mapping[int, Stop]  # rank -> how it stopped: ranks that died, stopped early or are missing
    wrong: Mapping[tuple, Misdirected]  # MT105 key -> the misdirected write
    region_names: tuple[str, ...] = ()
    rank_gaps: Mapping[int, str] = field(default_factory=dict)  # rank -> what of its trace is lost

    def waits(self) -> list[Node]:
        return [n for n in self.nodes if n.code == "MT101"]

    def barriers(self) -> list[Node]:
        return [n for n in self.nodes if n.code == "MT102"]

    def node(self, ref: tuple) -> Node | None:
        for n in self.nodes:
            if n.ref == tuple(ref):
                return n
        return None

    def node_text(self, n: Node) -> str:
        """'core 1 waits on ready[3]', 'core 0 in barrier #2 of launch 1': what the node is stuck in."""
        name = self.region_names[n.region] if n.code == "MT101" else None
        return stuck_words(n.code, n.core, n.launch, n.instance, n.end_row >= 0, name, n.slot)

    def root_causes(self) -> dict[tuple, list[Node]]:
        """Every root cause with the stuck nodes it explains (STAT-style counts)."""
        out: dict[tuple, list[Node]] = {}
        for n in self.nodes:
            for r in (n.roots or (n.ref,)):
                out.setdefault(r, []).append(n)
        return out

    def class_of(self, n: Node) -> tuple:
        """(site, region name, cmp, target): the stuck waits a report prints as one line."""
        name = self.region_names[n.region] if n.region >= 0 else None
        return (n.site, name, Cmp(n.cmp).wire if n.cmp >= 0 else None, n.target)

    def classes(self) -> dict[tuple, list[Node]]:
        """Stuck waits grouped by ``class_of``: one line per class in a report."""
        out: dict[tuple, list[Node]] = {}
        for n in self.waits():
            out.setdefault(self.class_of(n), []).append(n)
        return out


def analyze(trace) -> WaitForGraph:
    """The wait-for analysis of ``trace``, memoized on the TraceView object."""
    return cached(trace, "waitfor", lambda: _analyze(trace), Stage.WAIT_FOR)


def _analyze(trace) -> WaitForGraph:
    b = Builder(trace)
    nodes: list = []  # drafts, frozen once condensed
    for begin, end in zip(b.stuck_begin.tolist(), b.stuck_end.tolist()):
        nodes.append(_wait_node(b, len(nodes), begin, end))
    for row in barriers.stuck_rows(b):
        nodes.append(barriers.node(b, len(nodes), row, _Draft))
    b.attach(nodes)
    for n in nodes:
        if n.code == "MT101":
            _explain_wait(b, n)
        else:
            barriers.explain(b, n)
    cycles = _condense(nodes)
    tb = b.tables
    wrong = {key: Misdirected(e["row"], int(tb.w_owner[e["write"]]), int(tb.w_launch[e["write"]]),
                              b.write_text(e["write"]), tuple(dict.fromkeys(e["waits"])),
                              tuple(aliased_routes(b, key[0], int(trace["launch"][e["row"]]))))
             for key, e in sorted(b.wrong.items())}
    ranks = set(b.missing) | {r for r, _ in b.lost}
    gaps = {r: g for r in sorted(ranks) if (g := b.gap_of_rank(r))}
    return WaitForGraph(tuple(_frozen(n) for n in nodes), tuple(cycles), MappingProxyType(b.stops()),
                        MappingProxyType(wrong), tuple(r.name for r in trace.manifest.regions),
                        MappingProxyType(gaps))


def _wait_node(b: Builder, i: int, begin: int, end: int):
    t = b.trace
    row = begin if begin >= 0 else end
    region = int(t["region"][row])
    offset = int(t["offset"][row])
    n = _Draft(i, "MT101", row, end, int(t["rank"][row]), int(t["core"][row]), int(t["seq"][row]),
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


def _explain_wait(b: Builder, n) -> None:
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


def _condense(nodes: list) -> list[Cycle]:
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
            cycles.append(Cycle(first.key, tuple(sorted(comp))))
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


__all__ = ["analyze", "WaitForGraph", "Misdirected", "Node", "Cycle", "Stop", "Verdict", "Kind"]
