"""Defect classes: the findings that are one defect seen at many places.

A 64-rank hang is one bug that stops 63 ranks; a stale flag that every core
of every launch trips is one bug too.  Findings fall into one class when they
agree on what the defect is, field by field: rule code, site, region,
root-or-symptom, whether a gap of the trace weakened them, and the defect the
rule named on its hit (``rules.base.Hit.defect``; empty where the rule words
one defect).  Ranks, cores, launches, offsets and seq numbers never split a
class, and neither does the message: a message is for people, so rewording
one changes no class and no fingerprint.

Computed once per report, after cause linking (``analyzer.causes.link``):
the class order follows the report order (root classes first), ids are
C1..Cn in that order, and each class knows the classes it explains and is
caused by, so a reporter can print one line per class and one SARIF result
per root class.  The class fingerprint hashes only those fields, so a flaky
hang that stops rank 17 instead of rank 0 on the rerun keeps its fingerprint.
``shape`` (the first member's message with its numbers abstracted) is what a
person reads of the class; nothing is computed from it.
"""

from __future__ import annotations

import hashlib
import json
import re
from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np

from rules.analysis.groups import group_columns

from .causes import Linked, finding_id
from .draft import Draft
from .draft_table import NULL
from .finding import SEVERITIES, Finding, severity_rank

_NUMBER = re.compile(r"-?\d+")
_ELLIPSIS = re.compile(r"\s*(?:\.\.\.|\u2026)")
_COMMA = re.compile(r"(\s*,\s*)")
_HEAD = re.compile(r"[^()\[\];:]*")  # an item's text up to the first bracket or clause mark


def message_shape(message: str) -> str:
    """The message with numbers as '#' and runs of like list items as one item.

    A list of like items ("rank # core #, rank # core #, ...") is a count of
    places, not a shape: "(rank 1 core 0)" and "(rank 1 core 0, rank 2 core 0
    ...)" have one shape.  One pass over the comma-separated parts, no
    backtracking regex: a report may have 10^5 findings.
    """
    text = _numbers_as_hash(message)
    if "..." in text or "\u2026" in text:  # the ellipsis pattern tries every position: only where one is
        text = _ELLIPSIS.sub("", text)
    parts = _COMMA.split(text)
    out = parts[0]
    for sep, item in zip(parts[1::2], parts[2::2]):
        head = _HEAD.match(item).group(0)
        if "#" in head and out.endswith(head):
            out += item[len(head):]  # the same item again: keep only what follows it (a closing bracket)
        else:
            out += sep + item
    return " ".join(out.split())


def _numbers_as_hash(message: str) -> str:
    """``_NUMBER.sub("#", message)``; by str.translate and replace where the message is ASCII with no
    '#' of its own (the regex tries a sign at every position: most of a shape's time)."""
    if "#" in message or not message.isascii():  # \d also matches other scripts' digits
        return _NUMBER.sub("#", message)
    text = message.translate(_DIGIT_TO_HASH)
    while "##" in text:
        text = text.replace("##", "#")
    return text.replace("-#", "#")


_DIGIT_TO_HASH = str.maketrans("0123456789", "#" * 10)


@dataclass(frozen=True)
class DefectClass:
    """One defect, at every place it was found: its findings, in report order.

    ``members`` are the ids the report lists (its first ``--max-findings``, all of them where the
    class is smaller); ``size`` and ``severities`` count every finding of the class, listed or not.
    """

    id: str
    code: str
    name: str
    family: str
    severity: str  # the highest level among its findings
    root: bool  # its findings are root causes (no cause)
    site: int | None
    region: str | None
    source: str | None  # the site's "file:line", where the manifest gives one
    shape: str  # the first member's message, numbers abstracted: for people, never for identity
    members: tuple[str, ...]  # finding ids, report order; the first is the representative
    defect: str = ""  # the defect the rule named on its hits (rules.base.Hit.defect); "" its one defect
    ranks: tuple[int, ...] = ()
    cores: tuple[int, ...] = ()
    launches: tuple[int, ...] = ()
    explains: tuple[str, ...] = ()  # classes of the symptoms its findings explain, transitively
    caused_by: tuple[str, ...] = ()  # classes of its findings' direct causes
    fingerprint: str = ""
    severities: tuple[int, int, int] = (0, 0, 0)  # how many of its findings are errors, warnings, notes
    count: int = 0  # its findings, listed or not; 0: as many as it lists

    @property
    def size(self) -> int:
        return self.count or len(self.members)

    @property
    def by_severity(self) -> dict[str, int]:
        return dict(zip(SEVERITIES, self.severities))

    @property
    def listed_all(self) -> bool:
        return len(self.members) == self.size

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "code": self.code, "name": self.name, "family": self.family,
                "severity": self.severity, "root_cause": self.root, "site": self.site, "region": self.region,
                "source": self.source, "shape": self.shape, "defect": self.defect, "count": self.size,
                "findings": list(self.members),
                "ranks": list(self.ranks), "cores": list(self.cores), "launches": list(self.launches),
                "explains": list(self.explains), "caused_by": list(self.caused_by),
                "fingerprint": self.fingerprint}


def class_key(d: Draft, root: bool) -> tuple:
    """What a finding's class is, from its draft's fields and whether it is a root: (code, site,
    region, root, weakened by a gap, defect)."""
    hit = d.hit
    return (hit.code, d.place[5], d.place[3], root, bool(hit.gap), hit.defect)


def class_fingerprint(key: tuple) -> str:
    """A hash of what the defect is (``class_key``), never of where or how it is worded: no rank,
    core, launch, offset, seq, line number or message text."""
    blob = json.dumps(list(key), separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def classify(linked: Linked) -> tuple[DefectClass, ...]:
    """The classes C1..Cn of the linked drafts, in report order, every finding a member."""
    return _classes(linked, None)[0]


def _classes(linked: Linked, cap: int | None) -> tuple[tuple[DefectClass, ...], array, list[int]]:
    """The classes, each listing its first ``cap`` members (every one where None), the class of
    every finding by its number, and the numbers listed, ascending: one group-by over the drafts'
    columns, ids written for the listed members alone (10^6 findings)."""
    drafts, n = linked.drafts, len(linked)
    if not n:
        return (), array("i"), []
    root = np.diff(linked.cause_starts) == 0
    groups = group_columns([drafts.code, drafts.place[:, 4], drafts.region, root, drafts.gap, drafts.defect])
    by_first = np.argsort(groups.first, kind="stable")  # classes in the order of their first finding
    number = np.empty(len(by_first), np.int64)
    number[by_first] = np.arange(len(by_first))
    of = number[groups.inverse]  # each finding's class
    members = np.argsort(of, kind="stable")  # class by class, report order within each
    bounds = np.zeros(len(by_first) + 1, np.int64)
    np.cumsum(groups.counts[by_first], out=bounds[1:])
    levels = np.bincount(of * 3 + _level_slot(linked), minlength=3 * len(by_first)).reshape(-1, 3)
    top = _top_level(linked, of, len(by_first))
    ranks, cores, launches = (_per_class(of, drafts.place[:, at], len(by_first)) for at in range(3))
    sources = _first_source(of, drafts.source, len(by_first))
    explains = _class_edges(linked.explain_starts, linked.explain_numbers, of, len(by_first))
    caused_by = _class_edges(linked.cause_starts, linked.cause_numbers, of, len(by_first))
    seen_fp: dict[str, int] = {}
    out = []
    shown: list[np.ndarray] = []
    for c in range(len(by_first)):
        ns = members[bounds[c]:bounds[c + 1]]
        first = int(ns[0])
        rep = drafts.item(first)
        key = class_key(rep, bool(root[first]))
        code, site, region, is_root, _, defect = key
        fp = class_fingerprint(key)
        seen_fp[fp] = seen_fp.get(fp, 0) + 1
        if seen_fp[fp] > 1:  # cannot happen for distinct keys unless sha256 collides; keep them unique anyway
            fp = f"{fp}-{seen_fp[fp]}"
        listed = ns if cap is None else ns[:cap]
        shown.append(listed)
        out.append(DefectClass(
            id=class_id(c), code=code, name=rep.rule.name, family=rep.family, severity=top[c], root=is_root,
            site=site, region=region, source=None if sources[c] < 0 else drafts.sources[sources[c]],
            shape=message_shape(linked.message(first)), defect=defect,
            members=tuple(map(finding_id, listed.tolist())), ranks=ranks[c], cores=cores[c],
            launches=launches[c], explains=explains[c], caused_by=caused_by[c], fingerprint=fp,
            severities=tuple(levels[c].tolist()), count=len(ns)))
    return tuple(out), array("i", of.astype(np.int32).tobytes()), np.sort(np.concatenate(shown)).tolist()


def _level_slot(linked: Linked) -> np.ndarray:
    """Each finding's level as its place in ``SEVERITIES`` (error, warning, note: the counts a class
    keeps)."""
    slot = np.array([SEVERITIES.index(lv) if lv in SEVERITIES else 0 for lv in linked.levels], np.int64)
    return slot[linked.level]


def _top_level(linked: Linked, of: np.ndarray, classes: int) -> list[str]:
    """Each class's highest level among its findings."""
    rank = np.array([severity_rank(lv) for lv in linked.levels], np.int64)
    best = np.zeros(classes, np.int64)
    np.maximum.at(best, of, rank[linked.level])
    name = {severity_rank(lv): lv for lv in reversed(linked.levels)}
    return [name[r] for r in best.tolist()]


def _per_class(of: np.ndarray, values: np.ndarray, classes: int) -> list[tuple[int, ...]]:
    """Each class's distinct non-null ``values``, ascending."""
    keep = values != NULL
    owner, found = _distinct_pairs(of[keep], values[keep])
    bounds = np.searchsorted(owner, np.arange(classes + 1))
    found = found.tolist()
    return [tuple(found[bounds[c]:bounds[c + 1]]) for c in range(classes)]


def _first_source(of: np.ndarray, source: np.ndarray, classes: int) -> np.ndarray:
    """Each class's first finding's source (an index into the drafts' sources) that has one, -1 none."""
    out = np.full(classes, -1, np.int64)
    named = np.flatnonzero(source >= 0)[::-1]  # the last write of each class is its first finding's
    out[of[named]] = source[named]
    return out


def _class_edges(starts: np.ndarray, targets: np.ndarray, of: np.ndarray, classes: int) -> list[tuple[str, ...]]:
    """Per class, the other classes its findings' edges (a CSR graph over finding numbers) lead to,
    in class order."""
    source, target = np.repeat(of, np.diff(starts)), of[targets]
    other = source != target
    owner, found = _distinct_pairs(source[other], target[other])
    bounds = np.searchsorted(owner, np.arange(classes + 1))
    found = found.tolist()
    return [tuple(map(class_id, found[bounds[c]:bounds[c + 1]])) for c in range(classes)]


def _distinct_pairs(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (a, b) pairs, sorted by a then b, as two arrays: one lexsort (np.unique over
    axis 1 sorted a structured view, 2 s for 10^6 pairs)."""
    order = np.lexsort((b, a))
    a, b = a[order], b[order]
    new = np.ones(len(a), bool)
    new[1:] = (a[1:] != a[:-1]) | (b[1:] != b[:-1])
    return a[new], b[new]


def class_id(c: int) -> str:
    """The id of the class numbered ``c`` in report order: C1 for 0."""
    return f"C{c + 1}"


def sample(linked: Linked, cap: int | None) -> tuple[tuple[Finding, ...], tuple[DefectClass, ...], array]:
    """The findings a report lists, their class id set: each class's first ``cap`` in report order
    (every one where ``cap`` is None); the classes (``classify``), their ``members`` cut to those,
    their counts exact. Also the class of every finding, listed or not, by its number (F1 is 0):
    ``Report.class_of_id``.

    A trace with a million stuck waits is a few classes: the report then builds, holds, renders
    and writes a few hundred findings, not a million (the ids of the others stay in the listed
    findings' ``explains`` and ``caused_by``, so a root is still a finding with no cause)."""
    classes, index, listed = _classes(linked, cap)
    return tuple(linked.finding(n, classes[index[n]].id) for n in listed), classes, index
