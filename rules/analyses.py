"""The shared analyses, and running rules over one view in the order their citations need.

A shared analysis is computed once per view (a window of the trace) and read
by every rule that ``requires`` it; each memoizes its frozen result on the
view. They build on one another one way, in the order of ``ANALYSES``:

- ``inference``: the manifest with what it leaves out inferred (``rules.infer``);
- ``scan``: per-core end states and the stuck waits (``_waitfor_scan``);
- ``order``: program order within a core, barrier phases, wait pairs (``_passes``);
- ``unfenced``: payload puts a flag write overtook (``_unfenced``), with the
  user's ``ordered_engines``;
- ``words``: every word write into a flag-like region, in happens-before
  order where the trace gives one (``_words``);
- ``waitfor``: producers and the wait-for graph of the stuck waits (``_waitfor``).

``run`` runs the selected rules over a view: the analyses they require
first, then the rules in an order where a rule runs after the rules it
``cites``; the hits of each are held on the view (``hits_of``), so a rule or
an analysis that names another rule's hit as a cause reads the hits the run
produced, with the user's options, and never runs that rule again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from ._unfenced import DEFAULT_ORDERED
from .base import Hit, Rule, RuleContext, hits_of  # noqa: F401 - hits_of: where the run holds hits

if TYPE_CHECKING:  # pragma: no cover
    from .trace import TraceView


@dataclass(frozen=True)
class Options:
    """What the user's configuration sets for the shared analyses (``Rule.shared_options``)."""

    ordered_engines: tuple[str, ...] = DEFAULT_ORDERED

    @classmethod
    def from_rules(cls, rules: Iterable[type[Rule]], options_for: Callable[[type[Rule]], Mapping[str, Any]]):
        """The shared options, as the rules that declare them are configured."""
        values: dict[str, Any] = {}
        for rule in rules:
            for name in rule.shared_options:
                value = options_for(rule).get(name)
                if value is not None:
                    values[name] = tuple(value) if isinstance(value, (list, tuple)) else value
        return cls(**values)


def _inference(trace):
    return trace.inference


def _scan(trace):
    from ._waitfor_scan import scanned

    return scanned(trace)


def _order(trace):
    from . import _passes as P

    return P.phases(trace), P.wait_pairs(trace)


def _unfenced(trace):
    from ._unfenced import unfenced

    return unfenced(trace)


def _words(trace):
    from ._words import words

    return words(trace)


def _waitfor(trace):
    from ._waitfor import analyze

    return analyze(trace)


# In dependency order: each may read the ones before it, never one after it.
ANALYSES: dict[str, Callable[["TraceView"], Any]] = {
    "inference": _inference,
    "scan": _scan,
    "order": _order,
    "unfenced": _unfenced,
    "words": _words,
    "waitfor": _waitfor,
}


# Analyses that name other rules' hits as causes (the wait-for graph cites the stale-flag
# rules' hits by their keys): a rule that requires one runs after those rules, and the
# analysis is computed on first use, once they have run.
ANALYSIS_CITES: dict[str, tuple[str, ...]] = {"waitfor": ("MT106", "MT107", "MT108", "MT201", "MT202")}


def _cites(rule: type[Rule]) -> tuple[str, ...]:
    return tuple(rule.cites) + tuple(c for name in rule.requires for c in ANALYSIS_CITES.get(name, ()))


def citation_order(rules: Iterable[type[Rule]]) -> list[type[Rule]]:
    """The rules in code order, each moved after the selected rules it cites.

    A citation cycle (none exists today) is broken at the lower code, so the
    order is always total and the same for every window.
    """
    rules = sorted(rules, key=lambda r: r.code)
    by_code = {r.code: r for r in rules}
    out: list[type[Rule]] = []
    state: dict[str, int] = {}  # 1: being placed, 2: placed

    def place(rule: type[Rule]) -> None:
        if state.get(rule.code):
            return
        state[rule.code] = 1
        for code in _cites(rule):
            if code in by_code and not state.get(code):
                place(by_code[code])
        state[rule.code] = 2
        out.append(rule)

    for rule in rules:
        place(rule)
    return out


def run(trace: "TraceView", rules: Iterable[type[Rule]],
        options_for: Callable[[type[Rule]], Mapping[str, Any]] = lambda r: dict(r.options),
        on_rule: Callable[[type[Rule], list[Hit]], None] | None = None,
        on_analysis: Callable[[str], None] | None = None,
        on_start: Callable[[type[Rule] | None], None] | None = None) -> dict[str, list[Hit]]:
    """Every rule's hits on the view, by code, in citation order (see the module docstring).

    ``options_for(rule)`` gives a rule's options (the config's, over its
    defaults); ``on_start`` is told which rule starts (None: the shared
    analyses), ``on_rule`` / ``on_analysis`` as each finishes (the engine's
    profile and error attribution). A rule that raises propagates its exception.
    """
    order = citation_order(rules)
    trace.options = Options.from_rules(order, options_for)
    needed = {name for rule in order for name in rule.requires}
    on_start and on_start(None)
    for name, compute in ANALYSES.items():
        if name in needed and name not in ANALYSIS_CITES:
            compute(trace)
            on_analysis and on_analysis(name)
    held = trace.hits
    for rule in order:
        on_start and on_start(rule)
        hits = list(rule().check(trace, RuleContext(options=options_for(rule))))
        held[rule.code] = hits
        on_rule and on_rule(rule, hits)
    return {rule.code: held[rule.code] for rule in order}
