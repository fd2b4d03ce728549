"""Drafts: a rule's hit placed in the trace, before the report decides what it is.

A post-mortem of a hung 256-rank job can hold a million hits of a few defects.
The engine places each hit once, as a ``Draft`` (the hit itself, its rule, its
location from the first row's columns, the inference notes its rule rests on),
which costs a few slots, or a batch of hits at once, as columns
(``analyzer.draft_table``); the root decision (``analyzer.causes.link``) and
the defect classes (``analyzer.classes``) read the drafts' columns, and a
``Finding`` is built only for what a report lists
(``analyzer.causes.Linked.finding``). A million hits then cost their count
and a few passes, not a million findings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .finding import Location

if TYPE_CHECKING:  # pragma: no cover
    from rules.base import Hit, Rule

# The fields of a location, in Location's order; a hit's ``location`` entries under other names
# (a peer) go to the finding's extra.
LOCATION_FIELDS = ("rank", "core", "launch", "region", "offset", "site", "source")


@dataclass(frozen=True, slots=True)
class Draft:
    """One hit, placed: what ``link`` and the classes read, and what a listed finding is built from.

    ``place`` holds the location's fields in ``LOCATION_FIELDS`` order (None where absent), plain
    JSON values; ``severity`` is the configured level, else the hit's, else the rule's (a gap of
    the trace lowers it to a note: ``analyzer.causes``, the one place that decides that);
    ``inferred`` the notes on what the trace, not the manifest, gave the rule
    (``rules.analysis.inference``); ``seq`` the first row's seq (-1: no row); ``window`` the
    window whose view the hit's rows index; ``partial``: the trace lost events where the hit
    rests (``rules.base.Hit.rests_on``).
    """

    hit: "Hit"
    rule: type["Rule"]
    family: str
    severity: str
    place: tuple
    inferred: tuple[str, ...] = ()
    seq: int = -1
    window: Any = None
    partial: bool = False

    @property
    def code(self) -> str:
        return self.hit.code

    @property
    def location(self) -> Location:
        return Location(*self.place)
