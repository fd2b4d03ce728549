"""What a rule is and what it returns.

A rule is a class with explicit metadata and a docstring in four fixed
sections (What it does / Why it matters / Example / Evidence); the docstring
feeds ``moetrace explain`` and the SARIF rule descriptions alike.  A rule's
``check`` returns ``Hit`` values: what it found, where, on which events, and
how sure it is; a rule that finds one defect very many times yields them as
one ``rules.hit_columns.HitColumns``, its typed fields as arrays and each
message worded only for a finding a report lists.  The analyzer turns hits
into findings (ids, fingerprints, cause links); rules never see findings, so
this layer stays below it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Mapping, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from .analysis import Stage
    from .trace import TraceView

T = TypeVar("T")


class Family(str, Enum):
    HANG = "hang"
    STALE_FLAG = "stale-flag"
    CAPACITY_TRUNCATION = "capacity-truncation"
    MISSING_DRAIN = "missing-drain"
    INVALID_EXPERT_ID = "invalid-expert-id"
    DATA_RACE = "data-race"
    ENGINE_LIMIT = "engine-limit"


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"

    @property
    def rank(self) -> int:
        """error 3, warning 2, note 1: the order of the members, most severe first."""
        return len(Severity) - list(Severity).index(self)


class Confidence(str, Enum):
    CERTAIN = "certain"  # the trace proves it
    INFERRED = "inferred"  # follows from the protocol / routes, not from one event
    PARTIAL_TRACE = "partial-trace"  # events are missing (ring wrap, absent dump) where it matters


@dataclass(frozen=True, slots=True)  # slots: a hung 256-rank job can hold a million hits
class Hit:
    """One thing a rule found.

    ``rows`` are indices into the TraceView's event arrays, each with a role
    ("stuck wait", "unfinished put", ...); the analyzer resolves them into
    evidence events with their values.  ``key`` identifies the hit within its
    rule (for cause links and fingerprints); ``caused_by`` names other hits as
    (code, key).  ``location`` overrides what the first row implies.

    Statements the engine's one policy reads (``analyzer.causes``: root
    causes and partial-trace findings), so no rule re-applies it itself:
    ``gap``: the conclusion rests on the absence of an event that may lie in
    this gap of the trace (cut start, ring wrap, missing dump); the finding is
    then a partial-trace note, never an error or warning root.
    ``blocks``: the (rank, core) places this finding names as blocked in its
    stuck wait or barrier (the waiters).
    ``stalls``: the (rank, core or None) places this finding says made no
    progress; where a root's ``blocks`` hold every one of them, the place is
    that root's waiter and the finding its symptom, never a second root.
    ``rests_on``: the (rank, core or None: all its cores) places whose events
    the finding reads; where the trace lost events there (ring wrap, missing
    dump), the finding's confidence is partial-trace, whatever the rule set.

    ``defect`` names the defect within the rule, from the hit's fields, where
    one rule finds more than one kind of defect at a place (a wait whose
    producer is stuck, one whose producer wrote elsewhere): the findings of a
    rule, site and region that name the same defect are one defect class, with
    one fingerprint, whatever their messages say (``analyzer.classes``); empty
    is the rule's one defect. The message never decides a class: rewording it
    changes no class and no fingerprint.
    """

    code: str
    message: str
    rows: tuple[tuple[str, int], ...] = ()
    key: tuple = ()
    confidence: Confidence = Confidence.CERTAIN
    severity: Severity | None = None  # None: the rule's default (or the config's override)
    caused_by: tuple[tuple[str, tuple], ...] = ()
    location: Mapping[str, Any] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)
    gap: str | None = None
    blocks: tuple[tuple[int, int], ...] = ()
    stalls: tuple[tuple[int, int | None], ...] = ()
    defect: str = ""
    rests_on: tuple[tuple[int, int | None], ...] = ()

    @property
    def first_row(self) -> int | None:
        """The row of its first evidence event (None: it names none): where it is placed."""
        return self.rows[0][1] if self.rows else None


@dataclass(frozen=True)
class RuleContext:
    """What a rule reads besides the trace: its options from the config, and the stages it requires."""

    options: Mapping[str, Any] = field(default_factory=dict)
    stages: Any = None  # rules.analysis.Stages: the declared stages, computed once per window

    def option(self, name: str, default: Any = None) -> Any:
        return self.options.get(name, default)

    def stage(self, result: type[T]) -> T:
        """The result of a stage the rule ``requires`` (``ctx.stage(WordTable)``); reaching any
        other stage raises ``rules.analysis.UndeclaredStage``."""
        if self.stages is None:
            raise RuntimeError("this context carries no stages: run rules through rules.runner.run")
        return self.stages.get(result)


DOC_SECTIONS = ("What it does", "Why it matters", "Example", "Evidence")


class Rule:
    """Base class. Subclasses set the metadata and implement ``check``."""

    code: ClassVar[str]
    name: ClassVar[str]
    family: ClassVar[Family]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    # Rule options with defaults, settable under [tool.moetrace.options.CODE].
    options: ClassVar[Mapping[str, Any]] = {}
    # Options that also configure the shared analyses (rules.analysis.Options) every rule reads.
    shared_options: ClassVar[tuple[str, ...]] = ()
    # The shared analyses the rule reads (rules.analysis.Stage): the engine computes each once per
    # window, with the user's options, and the rule reads it as ctx.stage(Result); reaching a stage
    # not declared here (or built on by one declared) raises rules.analysis.UndeclaredStage.
    requires: ClassVar[tuple["Stage", ...]] = ()
    # The codes the rule may name in a hit's caused_by: the engine runs those rules first and
    # resolves the causes against their hits; a rule never runs another rule.
    cites: ClassVar[tuple[str, ...]] = ()
    # The manifest properties the rule's conclusions rest on (rules.analysis.inference: index, reset,
    # monotonic, slot_words, params): where the trace, not the manifest, gave one, the finding
    # says so and its confidence is at most inferred.
    infers_from: ClassVar[tuple[str, ...]] = ()

    def check(self, trace: "TraceView", ctx: RuleContext) -> Iterable[Hit]:  # pragma: no cover
        raise NotImplementedError

    # ---- documentation ---------------------------------------------------
    @classmethod
    def doc_sections(cls) -> dict[str, str]:
        """The docstring split into its fixed sections (missing ones absent)."""
        doc = _dedent(cls.__doc__ or "")
        out: dict[str, str] = {}
        pattern = re.compile(r"^(%s)\s*:?\s*$" % "|".join(map(re.escape, DOC_SECTIONS)), re.M)
        marks = list(pattern.finditer(doc))
        for i, m in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(doc)
            out[m.group(1)] = doc[m.end():end].strip("\n").rstrip()
        return out

    @classmethod
    def hit(cls, message: str, **kw) -> Hit:
        return Hit(code=cls.code, message=message, **kw)


def _dedent(text: str) -> str:
    import inspect

    return inspect.cleandoc(text)


def hits_of(trace: "TraceView", code: str) -> list[Hit]:
    """The hits rule ``code`` gave on this view in this run (``rules.runner.run`` holds them on
    the view, running cited rules first); none where it was not run. Never runs the rule."""
    return expand(trace.hits.get(code, []))


def expand(found: Iterable) -> list[Hit]:
    """A rule's output (``rules.runner.check``) as hits, one by one: each batch of hits
    (``rules.hit_columns.HitColumns``, anything not a ``Hit``) as its members, in place."""
    out: list = []
    for h in found:
        if isinstance(h, Hit):
            out.append(h)
        else:
            out.extend(h.hits())
    return out
