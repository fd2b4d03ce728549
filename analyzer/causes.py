"""The cause graph of a report, and the one place that decides root causes.

Findings are nodes, ``caused_by`` edges symptom -> cause. ``link`` takes every
finding of a diagnosis and decides which are roots: a finding is a root only
if no other finding explains it, where "explains" is

(a) a cause it cites (the rule's ``caused_by`` pairs) that was reported;
(b) a root whose stuck wait or barrier blocks the place this finding says
    made no progress (the rule's ``stalls`` against the root's ``blocks``):
    a rank that is itself the waiter of a root cause is that root's symptom,
    never a second root (its trace "ends early" because it spins in that wait);
(c) and, apart from the graph: a finding whose conclusion rests on the
    absence of an event that may lie in a gap of the trace (the rule's
    ``gap``: a cut start, a ring wrap, a missing dump) is never an error or
    warning, whatever its rule or the configuration says: it is a
    partial-trace note naming the gap. A finding whose evidence lies where
    the trace lost events (the rule's ``rests_on``: a ring wrap on that core,
    a missing dump) keeps its severity and is of confidence partial-trace.

Rules state those facts on their hits; none applies the policy itself. Kept
apart from the engine because it is graph work on findings and integer
indices, testable without a trace; the report's order is in
``analyzer.engine``'s docstring. (a)'s resolution of cited causes to drafts is
``analyzer._cause_cites``; the graph walks are ``analyzer._cause_graph``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import chain
from typing import Mapping, Sequence

import numpy as np

from rules.analysis.groups import group_columns

from ._cause_cites import Keys, cited
from ._cause_graph import break_cycles, explained, positions, reversed_csr, with_rows
from ._cause_order import order_ranks
from .draft import LOCATION_FIELDS, Draft
from .draft_table import Drafts
from .finding import Finding, fingerprint, normalize_key, severity_rank


def partial_trace_message(message: str, gap: str) -> str:
    """(c): the message of a finding that is a partial-trace note, naming the gap its missing event may be in."""
    return f"{message} [partial trace: {gap}; the missing event may be in the gap]"


def waiter_causes(severity: np.ndarray, waits: Mapping[int, tuple], starts: np.ndarray, targets: np.ndarray,
                  order_rank: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """(b): a root whose every stalled place is blocked by another finding's stuck wait becomes
    that finding's symptom: the waiter of a root, or of one of its symptoms, spins in that wait.
    Only a blocker at least as severe (``severity``: each draft's ``severity_rank``) explains it,
    so an error never hides under a note, and never one it explains itself (no cycle). ``waits``
    holds the (blocks, stalls) of the drafts that name either, (rank, core) places as
    ``rules.base.Hit`` names them; the cause graph is CSR, returned with those edges added."""
    uncaused = np.diff(starts) == 0
    stalled = sorted(i for i, (_, stalls) in waits.items() if stalls and uncaused[i])
    if not stalled:
        return starts, targets
    blocks = {j: _places(b) for j, (b, _) in waits.items() if b}
    by_rank: dict[int, list[int]] = {}  # a 64-rank hang has 10^5 stuck waits: look up by rank
    for j in sorted(blocks):
        for r in {r for r, _ in blocks[j]}:
            by_rank.setdefault(r, []).append(j)
    back = None  # cause -> its direct symptoms (reversed CSR), built where a walk needs it
    added: dict[int, list[int]] = {}  # edges added here, cause -> symptoms
    rows: dict[int, list[int]] = {}
    for i in stalled:
        places = _places(waits[i][1])
        fits = [j for j in by_rank.get(places[0][0], ()) if j != i and severity[j] >= severity[i]
                and all(_blocked(place, blocks[j]) for place in places)]
        if fits:
            back = back or reversed_csr(starts, targets)
            mine = _reaching(back, added, i)
            fits = [j for j in fits if j not in mine]
        if fits:
            j = min(fits, key=lambda j: order_rank[j])
            rows[i] = [j]
            added.setdefault(j, []).append(i)
    return with_rows(starts, targets, rows)


def _blocked(place: tuple, blocks: Sequence[tuple[int, int]]) -> bool:
    rank, core = place
    return any(r == rank and (core is None or c == core) for r, c in blocks)


def _reaching(back: tuple[np.ndarray, np.ndarray], added: Mapping[int, list[int]], x: int) -> set[int]:
    """Every finding that reaches ``x`` through cause edges (one breadth-first walk)."""
    starts, symptoms = back
    seen: set[int] = set()
    frontier = [x]
    while frontier:
        nxt = []
        for v in frontier:
            for s in chain(symptoms[starts[v]:starts[v + 1]].tolist(), added.get(v, ())):
                if s not in seen:
                    seen.add(s)
                    nxt.append(s)
        frontier = nxt
    return seen


@dataclass(frozen=True)
class Linked:
    """What ``link`` decided, by report number (``drafts.item(n)`` is finding F{n+1}, report order):
    each draft's level after (c) (``level``, ids into ``levels``); its causes and the symptoms
    it explains, in CSR form (row n of ``causes`` is ``cause_numbers[cause_starts[n]:cause_starts[n + 1]]``,
    report numbers ascending; a root has none); the causes it names that were not reported
    (``missing``: an index into ``missing_texts``, -1 none), the members of the cycle it roots
    (``cycles``), and its count among the findings of its rule and place (``twin``: 2, 3, ...
    where another had it first, else 0: fingerprints unique per report). A ``Finding`` is built
    only for what a report lists (``finding``)."""

    drafts: Drafts
    levels: tuple[str, ...]
    level: np.ndarray
    cause_starts: np.ndarray
    cause_numbers: np.ndarray
    explain_starts: np.ndarray
    explain_numbers: np.ndarray
    missing: np.ndarray
    missing_texts: tuple[tuple[str, ...], ...] = ()
    cycles: Mapping[int, list[str]] = field(default_factory=dict)
    twin: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.drafts)

    def level_of(self, n: int) -> str:
        return self.levels[self.level[n]]

    def causes(self, n: int) -> np.ndarray:
        return self.cause_numbers[self.cause_starts[n]:self.cause_starts[n + 1]]

    def explains(self, n: int) -> np.ndarray:
        return self.explain_numbers[self.explain_starts[n]:self.explain_starts[n + 1]]

    def is_root(self, n: int) -> bool:
        return self.cause_starts[n] == self.cause_starts[n + 1]

    def message(self, n: int) -> str:
        return message(self.drafts.item(n))

    def finding(self, n: int, defect_class: str = "") -> Finding:
        """Finding F{n+1}, its evidence rows ``pending`` (``analyzer.evidence.resolve`` describes them)."""
        d = self.drafts.item(n)
        hit = d.hit
        extra = dict(hit.extra)
        for k, v in hit.location.items():
            if k not in LOCATION_FIELDS:
                extra.setdefault(k, v)  # a place the Location has no field for (e.g. peer): keep it visible
        confidence = "partial-trace" if d.partial else getattr(hit.confidence, "value", hit.confidence)
        if d.inferred:
            extra["inferred"] = list(d.inferred)
            if confidence == "certain":
                confidence = "inferred"
        if hit.gap:  # (c)
            extra["partial_trace"] = hit.gap
            confidence = "partial-trace"
        if self.missing[n] >= 0:
            extra["causes_not_reported"] = list(self.missing_texts[self.missing[n]])
        if n in self.cycles:
            extra["cycle"] = list(self.cycles[n])
        location = d.location
        fp = fingerprint(hit.code, location)
        if self.twin is not None and self.twin[n] > 1:  # the same rule and place twice: unique per report
            fp = f"{fp}-{self.twin[n]}"
        return Finding(id=finding_id(n), code=hit.code, family=d.family, name=d.rule.name,
                       severity=self.level_of(n), confidence=confidence, message=self.message(n),
                       location=location, caused_by=tuple(map(finding_id, self.causes(n).tolist())),
                       fingerprint=fp, extra=extra, key=normalize_key(hit.key),
                       explains=tuple(map(finding_id, self.explains(n).tolist())), defect_class=defect_class,
                       defect=hit.defect, pending=(tuple(hit.rows), d.seq, d.window))


def finding_id(n: int) -> str:
    """The id of the finding numbered ``n`` in report order: F1 for 0."""
    return f"F{n + 1}"


def link(drafts: Drafts | Sequence[Draft]) -> Linked:
    """Decide the roots ((a)-(c) of the module doc), order the report and number it F1..Fn."""
    if not isinstance(drafts, Drafts):
        drafts = Drafts.of(list(drafts))
    n = len(drafts)
    levels = drafts.levels if "note" in drafts.levels else (*drafts.levels, "note")
    level = np.where(drafts.gap, levels.index("note"), drafts.level)  # (c)
    severity = np.array([severity_rank(lv) for lv in levels], np.int64)[level]
    keys = Keys(drafts)
    starts, targets, missing, missing_texts = cited(drafts, keys)
    rank = order_ranks(drafts, -severity, keys, lambda i: message(drafts.item(i)))
    starts, targets, cycles = break_cycles(starts, targets, rank)
    if drafts.waits:
        starts, targets = waiter_causes(severity, drafts.waits, starts, targets, rank)
    ex_starts, ex_nodes, depths = explained(starts, targets)
    order = _report_order(starts, severity, rank, ex_starts, ex_nodes, depths)
    number = np.empty(n, np.int64)
    number[order] = np.arange(n)
    named = {int(number[i]): [finding_id(number[j]) for j in sorted(members, key=number.__getitem__)]
             for i, members in cycles.items()}
    ordered = drafts.take(order)
    cause_starts, cause_numbers = _renumbered(starts, targets, number, order)
    explain_starts, explain_numbers = _renumbered(ex_starts, ex_nodes, number, order)
    return Linked(ordered, levels, level[order], cause_starts, cause_numbers, explain_starts, explain_numbers,
                  missing[order], missing_texts, named, _twins(ordered))


def message(d: Draft) -> str:
    """The draft's message as the report words it: (c)'s note appended where it rests on a gap."""
    hit = d.hit
    return partial_trace_message(hit.message, hit.gap) if hit.gap else hit.message


def _twins(drafts: Drafts) -> np.ndarray:
    """Each draft's count among those before it, itself included, of its rule at its place (what
    the fingerprint hashes, ``analyzer.finding.fingerprint``); 0 where it is the first."""
    n = len(drafts)
    if not n:
        return np.zeros(0, np.int64)
    place = drafts.place
    groups = group_columns([drafts.code, place[:, 0], place[:, 1], place[:, 2], drafts.region, place[:, 3],
                            place[:, 4]])
    by = np.argsort(groups.inverse, kind="stable")  # each group's drafts in report order
    run_start = np.zeros(n, bool)
    run_start[0] = True
    run_start[1:] = groups.inverse[by][1:] != groups.inverse[by][:-1]
    starts = np.maximum.accumulate(np.where(run_start, np.arange(n), 0))
    count = np.empty(n, np.int64)
    count[by] = np.arange(n) - starts + 1
    return np.where(count > 1, count, 0)


def _report_order(starts: np.ndarray, severity: np.ndarray, rank: np.ndarray, ex_starts: np.ndarray,
                  ex_nodes: np.ndarray, depths: np.ndarray) -> np.ndarray:
    """Roots first (severity, then symptoms explained, then the order key), then each root's symptoms
    not placed yet, nearest first (distance, then the order key). ``starts``: the cause graph's
    CSR rows (a root has none); ``ex_*``: what each explains (``explained``)."""
    n = len(starts) - 1
    rank_ = np.asarray(rank, np.int64)
    counts = np.diff(ex_starts)
    roots = np.flatnonzero(np.diff(starts) == 0)
    roots = roots[np.lexsort((rank_[roots], -counts[roots], -severity[roots]))]
    # Every root's symptoms, root by root in report order, each root's nearest first; a symptom
    # is placed where it first appears.
    at = positions(ex_starts, roots)
    symptom = ex_nodes[at]
    runs = np.lexsort((rank_[symptom], depths[at], np.repeat(np.arange(len(roots)), counts[roots])))
    symptom = symptom[runs]
    _, first = np.unique(symptom, return_index=True)
    placed = np.concatenate((roots, symptom[np.sort(first)]))
    left = np.ones(n, bool)
    left[placed] = False
    return np.concatenate((placed, np.flatnonzero(left)))  # unreachable: cycles are broken


def _renumbered(starts: np.ndarray, targets: np.ndarray, number: np.ndarray, order: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """The graph with node i renamed ``number[i]``: rows in report order, each row ascending."""
    lengths = np.diff(starts)
    row = np.repeat(number, lengths)
    value = number[targets]
    by = np.lexsort((value, row))
    out_starts = np.zeros(len(starts), np.int64)
    np.cumsum(lengths[order], out=out_starts[1:])
    return out_starts, value[by]


def _places(places: Sequence) -> tuple:
    """A hit's (rank, core) places as plain ints, core None where the hit names the whole rank."""
    if not places:
        return ()
    return tuple((int(r), None if c is None else int(c)) for r, c in places)
