"""The shared analyses: five stages, each a frozen, typed result computed once per view.

A view is a window of the trace (``rules.trace.TraceView``). The stages build
on one another one way (``stages.DEPENDS``):

- ``CoreScan``: per-core end states, stuck waits, wait pairs, atomic windows;
- ``HappensBefore``: barrier phases (both layouts), quiet completion, drains,
  the flag writes payload puts were still outstanding at;
- ``WordTable``: every word write into a flag-like region in happens-before
  order, the flag-sync edges, data-race pairs and stale flags (words left
  off reset, waits passed on a leftover) read from it;
- ``Producers``: raw and kept counts, ring heads kept, rings polled on the
  wrong channel;
- ``WaitForGraph``: the stuck waits and barriers, their producers' verdicts,
  the graph and its root causes.

A rule names the stages it reads in ``requires`` and gets them from its
context: ``ctx.stage(WordTable)``. The engine computes each stage a selected
rule requires, once per window, with the user's ``Options``; a rule that
reaches a stage it did not declare raises ``UndeclaredStage`` (the guard in
``stages``). Rules import this package and its public modules (``codes``,
``regions``, ``groups``, ``slots``: which rank writes a slot of an indexed
region), never a module whose name starts with ``_``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, TypeVar

from ._cache import cached
from ._unfenced import DEFAULT_ORDERED
from .core_scan import CoreScan, core_scan
from .happens_before import HappensBefore, happens_before
from .producers import Producers, producers
from .stages import Stage, UndeclaredStage, allow, closure
from .wait_for import WaitForGraph, wait_for
from .word_table import WordTable, word_table

if TYPE_CHECKING:  # pragma: no cover
    from ..base import Rule

__all__ = ["CoreScan", "HappensBefore", "Options", "Producers", "RESULTS", "Stage", "Stages", "UndeclaredStage",
           "WaitForGraph", "WordTable", "allow", "cached", "closure", "compute"]

T = TypeVar("T")

# Each stage's result type and the function that computes it on a view (memoized there).
RESULTS: dict[Stage, tuple[type, Callable[[Any], Any]]] = {
    Stage.CORE_SCAN: (CoreScan, core_scan),
    Stage.HAPPENS_BEFORE: (HappensBefore, happens_before),
    Stage.WORD_TABLE: (WordTable, word_table),
    Stage.PRODUCERS: (Producers, producers),
    Stage.WAIT_FOR: (WaitForGraph, wait_for),
}


@dataclass(frozen=True)
class Options:
    """What the user's configuration sets for the shared analyses (``Rule.shared_options``)."""

    ordered_engines: tuple[str, ...] = DEFAULT_ORDERED

    @classmethod
    def from_rules(cls, rules: Iterable[type["Rule"]], options_for: Callable[[type["Rule"]], Mapping[str, Any]]):
        """The shared options, as the rules that declare them are configured."""
        values: dict[str, Any] = {}
        for rule in rules:
            for name in rule.shared_options:
                value = options_for(rule).get(name)
                if value is not None:
                    values[name] = tuple(value) if isinstance(value, (list, tuple)) else value
        return cls(**values)


class Stages:
    """The stages one rule declared, each computed on first ask (``RuleContext.stage``)."""

    def __init__(self, view, who: str, declared: Iterable[Stage]):
        self._view, self._who = view, who
        self._declared = frozenset(declared)

    def get(self, result: type[T]) -> T:
        """The stage's result. Only a declared stage: one it builds on is computed for it, not handed out."""
        stage = result.stage
        if stage not in self._declared:
            raise UndeclaredStage(self._who, stage, result.__name__)
        return RESULTS[stage][1](self._view)


def compute(view, stages: Iterable[Stage]) -> None:
    """Compute ``stages`` on ``view`` now (the engine, before the rules that read them run)."""
    wanted = set(stages)
    for stage in Stage:  # in dependency order
        if stage in wanted:
            RESULTS[stage][1](view)
