"""Findings: what a diagnosis reports, as plain frozen values.

The engine turns rule hits into findings; every reporter reads only these
values, so the text, JSON, SARIF and JUnit outputs cannot disagree.  Values
are JSON-ready Python types (no numpy scalars), tuples instead of lists.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from rules.base import Confidence, Severity  # cheap: no numpy, no rule modules

SEVERITIES = tuple(s.value for s in Severity)  # error, warning, note: most severe first
CONFIDENCES = tuple(c.value for c in Confidence)
# Location fields that identify a place; the source text is derived from the
# site, so it stays out of the fingerprint (a shifted line must not re-open a finding).
_PLACE = ("rank", "core", "launch", "region", "offset", "site")


def severity_rank(level: str) -> int:
    """error 3, warning 2, note 1 (``Severity.rank``); anything else (e.g. 'never') 4, above every level."""
    return Severity(level).rank if level in SEVERITIES else len(SEVERITIES) + 1


def count_at_or_above(by_severity: Mapping[str, int], level: str) -> int:
    """How many of the findings counted by severity are at or above ``level`` (none for 'never')."""
    return sum(n for sev, n in by_severity.items() if severity_rank(sev) >= severity_rank(level))


@dataclass(frozen=True, slots=True)
class Location:
    """Where a finding is: the device place, and the kernel source line when the manifest knows it."""

    rank: int | None = None
    core: int | None = None
    launch: int | None = None
    region: str | None = None
    offset: int | None = None
    site: int | None = None
    source: str | None = None  # "file:line" from the manifest's sites

    @property
    def file(self) -> str | None:
        return None if self.source is None else _split_source(self.source)[0]

    @property
    def line(self) -> int | None:
        return None if self.source is None else _split_source(self.source)[1]

    def to_json(self) -> dict[str, Any]:
        return {"rank": self.rank, "core": self.core, "launch": self.launch, "region": self.region,
                "offset": self.offset, "site": self.site, "source": self.source}

    def place(self) -> str:
        """'rank 3 core 1' (the device place), for logical locations and text."""
        parts = []
        if self.rank is not None:
            parts.append(f"rank {self.rank}")
        if self.core is not None:
            parts.append(f"core {self.core}")
        return " ".join(parts) or "trace"

    def text(self) -> str:
        """One line for people: 'rank 3 core 1, launch 2, ready[12], site 7 (dispatch.cc:88)'."""
        parts = [self.place()]
        if self.launch is not None:
            parts.append(f"launch {self.launch}")
        if self.region is not None:
            parts.append(self.region if self.offset is None else f"{self.region}[{self.offset}]")
        if self.site is not None or self.source is not None:
            site = f"site {self.site}" if self.site is not None else "at"
            parts.append(f"{site} ({self.source})" if self.source else site)
        return ", ".join(parts)


def _split_source(text: str) -> tuple[str, int | None]:
    path, sep, line = text.rpartition(":")
    if sep and line.strip().isdigit() and path:
        return path, int(line)
    return text, None


class FieldValues(Mapping):
    """An event's field values as a read-only mapping: the names a tuple shared by every event
    with the same fields, the values a tuple. A report holds millions of these; a dict each
    was a quarter of a finding's memory."""

    __slots__ = ("_names", "_values")

    def __init__(self, names: tuple[str, ...], values: tuple[Any, ...]):
        self._names = names
        self._values = values

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[self._names.index(name)]
        except ValueError:
            raise KeyError(name) from None

    def __iter__(self):
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def items(self):
        return zip(self._names, self._values)

    def __repr__(self) -> str:
        return repr(dict(self.items()))

    def __reduce__(self):
        return type(self), (self._names, self._values)


@dataclass(frozen=True, slots=True)
class Evidence:
    """One event a finding rests on, named by (rank, core, seq), with its role and field values."""

    role: str
    rank: int
    core: int
    seq: int
    kind: str
    values: Mapping[str, Any] = field(default_factory=dict)  # the event's other non-null fields
    source: str | None = None  # the event's site as "file:line", where the manifest gives one

    def to_json(self) -> dict[str, Any]:
        return {"role": self.role, "rank": self.rank, "core": self.core, "seq": self.seq,
                "kind": self.kind, "values": dict(self.values), "source": self.source}

    def text(self) -> str:
        vals = " ".join(f"{k}={v}" for k, v in self.values.items() if k not in ("ts", "site"))
        head = f"{self.role}: {self.kind} rank {self.rank} core {self.core} seq {self.seq}"
        return f"{head} {vals}".rstrip()


@dataclass(frozen=True, slots=True)
class Finding:
    """One reported defect or symptom.

    ``caused_by`` holds finding ids of this report; a root cause has none.
    ``explains`` (filled by the engine) holds the ids of every symptom that
    leads back to this finding through ``caused_by``, transitively.  A root
    cause is a finding with no cause, in every output.
    """

    id: str
    code: str
    family: str
    name: str
    severity: str
    confidence: str
    message: str
    location: Location
    evidence: tuple[Evidence, ...] = ()
    caused_by: tuple[str, ...] = ()
    fingerprint: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    key: tuple = ()  # the rule's key, for cause links; not part of the report schema
    explains: tuple[str, ...] = ()
    defect_class: str = ""  # the id of its defect class (analyzer.classes), C1..Cn
    defect: str = ""  # the hit's defect name (rules.base.Hit.defect): its class's identity; in the JSON on the class
    # ((role, row), ...), the first row's seq, the window whose view the rows index: evidence not yet
    # described; the engine describes the listed findings' (analyzer.evidence.resolve). Not in the schema.
    pending: tuple = ()

    @property
    def is_root(self) -> bool:
        return not self.caused_by

    def at_or_above(self, level: str) -> bool:
        return severity_rank(self.severity) >= severity_rank(level)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "code": self.code, "family": self.family, "name": self.name,
                "severity": self.severity, "confidence": self.confidence, "message": self.message,
                "location": self.location.to_json(), "evidence": [e.to_json() for e in self.evidence],
                "caused_by": list(self.caused_by), "root_cause": self.is_root,
                "explains": list(self.explains), "class": self.defect_class, "fingerprint": self.fingerprint,
                "extra": jsonable(dict(self.extra))}


_FINDING_FIELDS = tuple(Finding.__dataclass_fields__)


def updated(f: Finding, **changes: Any) -> Finding:
    """``dataclasses.replace(f, **changes)`` without its per-call field introspection (a report
    may have 10^6 findings). A Finding has no ``__post_init__`` and no init-only fields."""
    out = object.__new__(Finding)
    for name in _FINDING_FIELDS:
        object.__setattr__(out, name, changes[name] if name in changes else getattr(f, name))
    return out


def fingerprint(code: str, location: Location) -> str:
    """A hash of what the finding is about: the rule and the place; never ids, seq or timestamps.

    seq is left out on purpose: an unrelated event added earlier on the core
    shifts every later seq, and a CI baseline must still recognise the finding.
    Two findings of one rule at one place are told apart by a -2, -3 suffix.
    """
    place = [getattr(location, f) for f in _PLACE]
    blob = _compact_json(code, place)
    if blob is None:
        blob = json.dumps([code, place], separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


_ENCODE_STR = json.encoder.encode_basestring_ascii  # what json.dumps uses for a str (ensure_ascii)


def _compact_json(code: str, place: list) -> str | None:
    """``json.dumps([code, place], separators=(",", ":"))`` where every value is an int, str or
    None (a Location's place always is), built without the encoder's per-call setup; None otherwise."""
    parts = []
    for v in place:
        t = type(v)
        if t is int:
            parts.append(int.__repr__(v))
        elif t is str:
            parts.append(_ENCODE_STR(v))
        elif v is None:
            parts.append("null")
        else:
            return None
    if type(code) is not str:
        return None
    return "[" + _ENCODE_STR(code) + ",[" + ",".join(parts) + "]]"


_PLAIN = frozenset((int, str, float, bool, type(None)))


def jsonable(value: Any) -> Any:
    """Plain JSON types: numpy scalars to Python, tuples and sets to lists, keys to strings."""
    if type(value) in _PLAIN:  # most values of a report: skip the Mapping test, an ABC check
        return value
    if isinstance(value, (dict, Mapping)):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, (set, frozenset)):
        items = [jsonable(v) for v in value]
        try:
            return sorted(items)
        except TypeError:  # items that do not compare (1 and "a"): order by their JSON text, as stably
            return sorted(items, key=lambda v: json.dumps(v, sort_keys=True, default=repr))
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return value.item()
    if hasattr(value, "value") and hasattr(value, "name") and isinstance(getattr(value, "value"), str):
        return value.value  # str enums (Severity, Family)
    return value


def normalize_key(value: Any) -> Any:
    """A hashable, canonical form of a rule key: numpy ints to int, lists to tuples."""
    t = type(value)
    if t is int or t is str:
        return value
    if t is tuple:  # most keys: (rank, core, seq), already plain ints
        for v in value:
            if type(v) is not int:
                break
        else:
            return value
    if isinstance(value, (list, tuple)):
        return tuple(normalize_key(v) for v in value)
    if hasattr(value, "item") and callable(value.item):
        return value.item()
    return value
