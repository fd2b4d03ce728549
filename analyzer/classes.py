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
from typing import Any, Sequence

import numpy as np

from ._cause_graph import positions
from .causes import Linked, finding_id
from .draft import Draft
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


def _classes(linked: Linked, cap: int | None) -> tuple[tuple[DefectClass, ...], array]:
    """The classes, each listing its first ``cap`` members (every one where None), and the class of
    every finding by its number: ids are written for the listed members alone (10^6 findings)."""
    members: dict[tuple, list[int]] = {}
    roots = (np.diff(linked.cause_starts) == 0).tolist()
    for n, d in enumerate(linked.drafts):
        members.setdefault(class_key(d, roots[n]), []).append(n)
    keys = list(members)  # insertion order is the order of each class's first finding
    number = np.zeros(len(linked), np.int64)
    for c, k in enumerate(keys):
        number[members[k]] = c
    seen_fp: dict[str, int] = {}
    out = []
    for c, k in enumerate(keys):
        ns = members[k]
        code, site, region, root, _, defect = k
        rep = linked.drafts[ns[0]]
        fp = class_fingerprint(k)
        seen_fp[fp] = seen_fp.get(fp, 0) + 1
        if seen_fp[fp] > 1:  # cannot happen for distinct keys unless sha256 collides; keep them unique anyway
            fp = f"{fp}-{seen_fp[fp]}"
        places = [linked.drafts[n].place for n in ns]
        levels = [linked.levels[n] for n in ns]
        listed = ns if cap is None else ns[:cap]
        out.append(DefectClass(
            id=class_id(c), code=code, name=rep.rule.name, family=rep.family,
            severity=max(set(levels), key=severity_rank), root=root, site=site, region=region,
            source=next((p[6] for p in places if p[6]), None), shape=message_shape(linked.message(ns[0])),
            defect=defect, members=tuple(map(finding_id, listed)), ranks=_values(places, 0),
            cores=_values(places, 1), launches=_values(places, 2),
            explains=_linked(linked.explain_starts, linked.explain_numbers, ns, number, c),
            caused_by=_linked(linked.cause_starts, linked.cause_numbers, ns, number, c), fingerprint=fp,
            severities=_severities(levels), count=len(ns)))
    return tuple(out), array("i", number.astype(np.int32).tobytes())


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
    classes, index = _classes(linked, cap)
    keep = sorted(int(fid[1:]) - 1 for c in classes for fid in c.members)
    return tuple(linked.finding(n, classes[index[n]].id) for n in keep), classes, index


def _severities(levels: Sequence[str]) -> tuple[int, int, int]:
    n = dict.fromkeys(SEVERITIES, 0)
    for level in levels:
        n[level] += 1
    return tuple(n.values())


def _values(places: Sequence[tuple], at: int) -> tuple[int, ...]:
    return tuple(sorted({p[at] for p in places} - {None}))


def _linked(starts: np.ndarray, targets: np.ndarray, members: list[int], number: np.ndarray, own: int
            ) -> tuple[str, ...]:
    """The classes, other than ``own``, of the findings the members' edges (CSR rows) lead to, in class order."""
    found = np.unique(number[targets[positions(starts, np.asarray(members, np.int64))]])
    return tuple(map(class_id, found[found != own].tolist()))
