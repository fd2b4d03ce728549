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
``analyzer.engine``'s docstring.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from ._cause_graph import break_cycles, csr, explained, positions
from ._cause_order import order_ranks
from .draft import LOCATION_FIELDS, Draft
from .finding import Finding, fingerprint, jsonable, normalize_key, severity_rank


def partial_trace_message(message: str, gap: str) -> str:
    """(c): the message of a finding that is a partial-trace note, naming the gap its missing event may be in."""
    return f"{message} [partial trace: {gap}; the missing event may be in the gap]"


def level(d: Draft) -> str:
    """(c): the draft's severity, a note where its evidence may lie in a gap of the trace."""
    return "note" if d.hit.gap else d.severity


def waiter_causes(levels: Sequence[str], blocks: Sequence[tuple], stalls: Sequence[tuple],
                  causes: list[list[int]], order_key: Sequence[Any]) -> None:
    """(b): a root whose every stalled place is blocked by another finding's stuck wait becomes
    that finding's symptom (in place, on ``causes``): the waiter of a root, or of one of its
    symptoms, spins in that wait. Only a blocker at least as severe explains it, so an error
    never hides under a note, and never one it explains itself (no cycle). ``blocks`` and
    ``stalls`` are each finding's (rank, core) places, as ``rules.base.Hit`` names them."""
    stalled = [i for i, places in enumerate(stalls) if places and not causes[i]]
    if not stalled:
        return
    by_rank: dict[int, list[int]] = {}  # a 64-rank hang has 10^5 stuck waits: look up by rank
    for j, places in enumerate(blocks):
        for r in {r for r, _ in places}:
            by_rank.setdefault(r, []).append(j)
    back: dict[int, list[int]] = {}  # cause -> its direct symptoms
    for v, cs in enumerate(causes):
        for c in cs:
            back.setdefault(c, []).append(v)
    for i in stalled:
        places = stalls[i]
        fits = [j for j in by_rank.get(places[0][0], ()) if j != i
                and severity_rank(levels[j]) >= severity_rank(levels[i])
                and all(_blocked(place, blocks[j]) for place in places)]
        if fits:
            mine = _reaching(back, i)
            fits = [j for j in fits if j not in mine]
        if fits:
            j = min(fits, key=lambda j: order_key[j])
            causes[i] = [j]
            back.setdefault(j, []).append(i)


def _blocked(place: tuple, blocks: Sequence[tuple[int, int]]) -> bool:
    rank, core = place
    return any(r == rank and (core is None or c == core) for r, c in blocks)


def _reaching(back: dict[int, list[int]], x: int) -> set[int]:
    """Every finding that reaches ``x`` through cause edges (one breadth-first walk)."""
    seen: set[int] = set()
    frontier = [x]
    while frontier:
        nxt = []
        for v in frontier:
            for s in back.get(v, ()):
                if s not in seen:
                    seen.add(s)
                    nxt.append(s)
        frontier = nxt
    return seen


@dataclass(frozen=True)
class Linked:
    """What ``link`` decided, by report number (``drafts[n]`` is finding F{n+1}, report order):
    each draft's severity after (c); its causes and the symptoms it explains, in CSR form (row n
    of ``causes`` is ``cause_numbers[cause_starts[n]:cause_starts[n + 1]]``, report numbers
    ascending; a root has none); what link adds to its extra (the causes it names that were not
    reported, the members of the cycle it roots); and the count of each fingerprint that another
    finding had first (2, 3, ...: fingerprints unique per report). A ``Finding`` is built only for
    what a report lists (``finding``)."""

    drafts: tuple[Draft, ...]
    levels: tuple[str, ...]
    cause_starts: np.ndarray
    cause_numbers: np.ndarray
    explain_starts: np.ndarray
    explain_numbers: np.ndarray
    notes: Mapping[int, dict[str, Any]] = field(default_factory=dict)
    twins: Mapping[int, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.drafts)

    def causes(self, n: int) -> np.ndarray:
        return self.cause_numbers[self.cause_starts[n]:self.cause_starts[n + 1]]

    def explains(self, n: int) -> np.ndarray:
        return self.explain_numbers[self.explain_starts[n]:self.explain_starts[n + 1]]

    def is_root(self, n: int) -> bool:
        return self.cause_starts[n] == self.cause_starts[n + 1]

    def message(self, n: int) -> str:
        return message(self.drafts[n])

    def finding(self, n: int, defect_class: str = "") -> Finding:
        """Finding F{n+1}, its evidence rows ``pending`` (``analyzer.evidence.resolve`` describes them)."""
        d = self.drafts[n]
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
        extra.update(self.notes.get(n, ()))
        location = d.location
        fp = fingerprint(hit.code, location)
        if n in self.twins:  # the same rule, place and key twice: keep fingerprints unique per report
            fp = f"{fp}-{self.twins[n]}"
        return Finding(id=finding_id(n), code=hit.code, family=d.family, name=d.rule.name,
                       severity=self.levels[n], confidence=confidence, message=self.message(n),
                       location=location, caused_by=tuple(map(finding_id, self.causes(n).tolist())),
                       fingerprint=fp, extra=extra, key=normalize_key(hit.key),
                       explains=tuple(map(finding_id, self.explains(n).tolist())), defect_class=defect_class,
                       defect=hit.defect, pending=(tuple(hit.rows), d.seq, d.window))


def finding_id(n: int) -> str:
    """The id of the finding numbered ``n`` in report order: F1 for 0."""
    return f"F{n + 1}"


def link(drafts: Sequence[Draft]) -> Linked:
    """Decide the roots ((a)-(c) of the module doc), order the report and number it F1..Fn."""
    hits = [d.hit for d in drafts]
    levels = [level(d) for d in drafts]
    keys = _Keys(hits)
    causes, missing = _cited(hits, keys)
    rank = order_ranks(drafts, levels, keys, lambda i: message(drafts[i]))
    cycles = break_cycles(causes, rank)
    if any(h.stalls for h in hits):
        waiter_causes(levels, [_places(h.blocks) for h in hits], [_places(h.stalls) for h in hits], causes, rank)
    starts, nodes, depths = explained(causes)
    order = _report_order(causes, levels, rank, starts, nodes, depths)
    number = np.empty(len(drafts), np.int64)
    number[order] = np.arange(len(drafts))
    numbers = number.tolist()
    notes: dict[int, dict[str, Any]] = {}
    for i, names in missing.items():
        notes[numbers[i]] = {"causes_not_reported": names}
    for i, members in cycles.items():
        ids = [finding_id(numbers[j]) for j in sorted(members, key=numbers.__getitem__)]
        notes.setdefault(numbers[i], {})["cycle"] = ids
    ordered = [drafts[i] for i in order.tolist()]
    twins: dict[int, int] = {}
    seen_fp: dict[tuple, int] = {}
    for n, d in enumerate(ordered):
        at = (d.hit.code, d.place[:6])  # what the fingerprint hashes (analyzer.finding.fingerprint)
        k = seen_fp[at] = seen_fp.get(at, 0) + 1
        if k > 1:
            twins[n] = k
    cause_starts, cause_numbers = _renumbered(*csr(causes), number, order)
    explain_starts, explain_numbers = _renumbered(starts, nodes, number, order)
    return Linked(tuple(ordered), tuple(levels[i] for i in order.tolist()), cause_starts, cause_numbers,
                  explain_starts, explain_numbers, notes, twins)


def message(d: Draft) -> str:
    """The draft's message as the report words it: (c)'s note appended where it rests on a gap."""
    hit = d.hit
    return partial_trace_message(hit.message, hit.gap) if hit.gap else hit.message


class _Keys:
    """Each hit's key, normalized, built where asked: only the hits a cause may name and the ties of
    the report's order need theirs (a column hit's key is built from its batch's array)."""

    def __init__(self, hits: Sequence):
        self.hits = hits
        self.built: dict[int, Any] = {}

    def __getitem__(self, i: int) -> Any:
        found = self.built.get(i, _NONE)
        if found is _NONE:
            found = self.built[i] = normalize_key(self.hits[i].key)
        return found


_NONE = object()


def _cited(hits: Sequence, keys: Sequence) -> tuple[list[list[int]], dict[int, list[str]]]:
    """(a): each hit's reported causes (indices, in citation order, each once), and the causes it
    names that no hit of this report is, as 'CODE [key]'. Only the hits of a code some hit cites
    are indexed: a million symptoms citing a few thousand roots index those roots alone."""
    cited = {code for h in hits if h.caused_by for code, _ in h.caused_by}
    index: dict[tuple[str, Any], list[int]] = {}
    for i, h in enumerate(hits):
        if h.code in cited:
            index.setdefault((h.code, keys[i]), []).append(i)
    causes: list[list[int]] = []
    missing_of: dict[int, list[str]] = {}
    resolved: dict[tuple, tuple] = {}  # per distinct caused_by: a million symptoms share a few
    for i, h in enumerate(hits):
        if not h.caused_by:
            causes.append([])
            continue
        try:
            named = resolved.get(h.caused_by)
        except TypeError:  # a key that does not hash: resolved for this hit alone
            named = _resolved(h.caused_by, index)
        if named is None:
            named = resolved[h.caused_by] = _resolved(h.caused_by, index)
        found, missing, among = named
        if i in among:  # a hit that names itself is never its own cause: its pairs resolved without it
            found, missing, _ = _resolved(h.caused_by, index, i)
        if missing:
            missing_of[i] = list(missing)
        causes.append(list(found))
    return causes, missing_of


def _resolved(caused_by, index: dict, own: int = -1) -> tuple[list[int], list[str], set[int]]:
    """The hits ``caused_by`` names, in citation order, each once, hit ``own`` never; the pairs that
    name no other hit; and the hits named, as a set."""
    found: list[int] = []
    seen: set[int] = set()  # found as a set: a finding can cite thousands of causes
    missing: list[str] = []
    for code, key in caused_by:
        key = normalize_key(key)
        js = [j for j in index.get((code, key), ()) if j != own]
        if not js:
            missing.append(f"{code} {json.dumps(jsonable(key))}")
        for j in js:
            if j not in seen:
                seen.add(j)
                found.append(j)
    return found, missing, seen


def _report_order(causes: list[list[int]], levels: Sequence[str], rank: Sequence[int],
                  starts: np.ndarray, nodes: np.ndarray, depths: np.ndarray) -> np.ndarray:
    """Roots first (severity, then symptoms explained, then the order key), then each root's symptoms
    not placed yet, nearest first (distance, then the order key)."""
    n = len(causes)
    rank_ = np.asarray(rank, np.int64)
    counts = np.diff(starts)
    ranks = {lv: -severity_rank(lv) for lv in set(levels)}
    severity = np.fromiter((ranks[lv] for lv in levels), np.int64, n)
    roots = np.flatnonzero(np.fromiter(map(len, causes), np.int64, n) == 0)
    roots = roots[np.lexsort((rank_[roots], -counts[roots], severity[roots]))]
    # Every root's symptoms, root by root in report order, each root's nearest first; a symptom
    # is placed where it first appears.
    at = positions(starts, roots)
    symptom = nodes[at]
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
