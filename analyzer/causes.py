"""The cause graph of a report: findings as nodes, ``caused_by`` as edges symptom -> cause.

Kept apart from the engine because it is graph work on findings and integer
indices, testable without a trace: the components and roots, and ``link``,
which resolves each finding's cause pairs, orders the report and numbers it
(the rules of that order are in ``analyzer.engine``'s docstring).
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from .finding import Finding, jsonable, severity_rank, updated


def strongly_connected(edges: Sequence[Sequence[int]]) -> list[list[int]]:
    """Tarjan's components, iteratively (a long chain of symptoms must not hit the recursion limit)."""
    n = len(edges)
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    comps: list[list[int]] = []
    counter = 0
    for start in range(n):
        if index[start] != -1:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter
                counter += 1
                stack.append(v)
                on_stack[v] = True
            if i < len(edges[v]):
                work.append((v, i + 1))
                w = edges[v][i]
                if index[w] == -1:
                    work.append((w, 0))
                elif on_stack[w]:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack[w] = False
                    comp.append(w)
                    if w == v:
                        break
                comps.append(comp)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comps


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


def link(drafts: list[Finding]) -> tuple[Finding, ...]:
    """Resolve cause pairs to ids, mark roots, order the report and number it F1..Fn."""
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
    first = (f.evidence[0].seq,) if f.evidence else (-1,)
    return (-severity_rank(f.severity), f.code, place, first, json.dumps(jsonable(f.key)), f.message)
