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
    partial-trace note naming the gap.

Rules state those facts on their hits; none applies the policy itself. Kept
apart from the engine because it is graph work on findings and integer
indices, testable without a trace; the report's order is in
``analyzer.engine``'s docstring.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from rules.analysis.graph import strongly_connected

from .finding import Finding, jsonable, severity_rank, updated


def break_cycles(causes: list[list[int]], order_key: Sequence[Any]) -> dict[int, list[int]]:
    """Make every cycle with no cause outside it end in one root; returns {root: cycle members}.

    The root is the member with the smallest ``order_key``; only its edges
    into the cycle are removed, so the others stay its (transitive) symptoms.
    A cycle that does have an outside cause keeps its edges: its members are
    symptoms of that cause and need no root of their own.
    """
    out: dict[int, list[int]] = {}
    for comp in strongly_connected(causes):
        if len(comp) < 2:
            continue
        members = set(comp)
        if any(c not in members for v in comp for c in causes[v]):
            continue
        root = min(comp, key=lambda v: order_key[v])
        causes[root] = [c for c in causes[root] if c not in members]
        out[root] = sorted(comp)
    return out


def explained_by(causes: Sequence[Sequence[int]]) -> list[dict[int, int]]:
    """For each node, every node that reaches it through cause edges, with its distance (1 = direct)."""
    n = len(causes)
    symptoms: list[list[int]] = [[] for _ in range(n)]
    for v, cs in enumerate(causes):
        for c in cs:
            symptoms[c].append(v)
    out: list[dict[int, int]] = []
    for v in range(n):
        depth: dict[int, int] = {}
        frontier, d = list(symptoms[v]), 1
        while frontier:  # breadth first, so each symptom gets its shortest distance
            nxt = []
            for s in frontier:
                if s != v and s not in depth:
                    depth[s] = d
                    nxt.extend(symptoms[s])
            frontier, d = nxt, d + 1
        out.append(depth)
    return out


def partial_trace_note(f: Finding, gap: str) -> Finding:
    """(c): the finding as a partial-trace note that names the gap its missing event may be in."""
    return updated(f, severity="note", confidence="partial-trace",
                   message=f"{f.message} [partial trace: {gap}; the missing event may be in the gap]",
                   extra={**f.extra, "partial_trace": gap})


def waiter_causes(drafts: Sequence[Finding], causes: list[list[int]], order_key: Sequence[Any]) -> None:
    """(b): a root whose every stalled place is blocked by another finding's stuck wait becomes
    that finding's symptom (in place, on ``causes``): the waiter of a root, or of one of its
    symptoms, spins in that wait. Only a blocker at least as severe explains it, so an error
    never hides under a note, and never one it explains itself (no cycle)."""
    stalled = [i for i, f in enumerate(drafts) if not causes[i] and f.extra.get("_stalls")]
    if not stalled:
        return
    by_rank: dict[int, list[int]] = {}  # a 64-rank hang has 10^5 stuck waits: look up by rank
    for j, f in enumerate(drafts):
        for r in {r for r, _ in f.extra.get("_blocks", ())}:
            by_rank.setdefault(r, []).append(j)
    back: dict[int, list[int]] = {}  # cause -> its direct symptoms
    for v, cs in enumerate(causes):
        for c in cs:
            back.setdefault(c, []).append(v)
    for i in stalled:
        x = drafts[i]
        places = x.extra["_stalls"]
        fits = [j for j in by_rank.get(places[0][0], ()) if j != i
                and severity_rank(drafts[j].severity) >= severity_rank(x.severity)
                and all(_blocked(place, drafts[j].extra["_blocks"]) for place in places)]
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


_DECISION_KEYS = ("_causes", "_gap", "_blocks", "_stalls")


def link(drafts: list[Finding]) -> tuple[Finding, ...]:
    """Decide the roots ((a)-(c) of the module doc), order the report and number it F1..Fn."""
    drafts = [partial_trace_note(f, f.extra["_gap"]) if f.extra.get("_gap") else f for f in drafts]
    index: dict[tuple[str, Any], list[int]] = {}
    for i, f in enumerate(drafts):
        index.setdefault((f.code, f.key), []).append(i)
    causes: list[list[int]] = []
    extras: list[dict[str, Any]] = []
    for i, f in enumerate(drafts):
        extra = dict(f.extra)
        pairs = extra.pop("_causes", ())
        found: list[int] = []
        seen: set[int] = set()  # found as a set: a finding can cite thousands of causes
        missing: list[str] = []
        for code, key in pairs:
            hits = [j for j in index.get((code, key), []) if j != i]
            if hits:
                found.extend(j for j in hits if not (j in seen or seen.add(j)))
            else:
                missing.append(f"{code} {json.dumps(jsonable(key))}")
        if missing:
            extra["causes_not_reported"] = missing
        causes.append(found)
        extras.append(extra)
    order_key = [_order_key(f) for f in drafts]
    cycles = break_cycles(causes, order_key)
    waiter_causes(drafts, causes, order_key)
    for extra in extras:
        for k in _DECISION_KEYS:
            extra.pop(k, None)
    explains = explained_by(causes)
    roots = sorted((i for i in range(len(drafts)) if not causes[i]),
                   key=lambda i: (-severity_rank(drafts[i].severity), -len(explains[i]), order_key[i]))
    order: list[int] = list(roots)
    placed = set(order)
    for r in roots:
        for s in sorted(explains[r], key=lambda i: (explains[r][i], order_key[i])):
            if s not in placed:
                placed.add(s)
                order.append(s)
    order.extend(i for i in range(len(drafts)) if i not in placed)  # unreachable: cycles are broken
    ids = {i: f"F{n + 1}" for n, i in enumerate(order)}
    seen_fp: dict[str, int] = {}
    out = []
    for i in order:
        f = drafts[i]
        extra = extras[i]
        if i in cycles:
            extra["cycle"] = sorted((ids[j] for j in cycles[i]), key=lambda s: int(s[1:]))
        fp = f.fingerprint
        seen_fp[fp] = seen_fp.get(fp, 0) + 1
        if seen_fp[fp] > 1:  # the same rule, place and key twice: keep fingerprints unique per report
            fp = f"{fp}-{seen_fp[fp]}"
        out.append(updated(f, id=ids[i], extra=extra, fingerprint=fp,
                           caused_by=tuple(sorted((ids[j] for j in causes[i]), key=lambda s: int(s[1:]))),
                           explains=tuple(sorted((ids[j] for j in explains[i]), key=lambda s: int(s[1:])))))
    return tuple(out)


def _order_key(f: Finding) -> tuple:
    loc = f.location
    place = tuple(-1 if v is None else v for v in (loc.rank, loc.core, loc.launch))
    first = (f.evidence[0].seq,) if f.evidence else (f.pending[1] if f.pending else -1,)
    return (-severity_rank(f.severity), f.code, place, first, key_text(f.key), f.message)


def key_text(key: Any) -> str:
    """``json.dumps(jsonable(key))``, the order's tie-break; most keys are tuples of plain ints
    (rank, core, seq), written here without the encoder (a report may have 10^6 findings)."""
    if type(key) is tuple:
        for v in key:
            if type(v) is not int:
                break
        else:
            return "[" + ", ".join(map(int.__repr__, key)) + "]"
    return json.dumps(jsonable(key))
