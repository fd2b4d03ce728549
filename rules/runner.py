"""Running the selected rules over one view, in the order their citations need.

``run`` computes the stages the selected rules require (``rules.analysis``:
no stage reads a rule's hits), then runs the rules in an order where a rule
runs after the rules it ``cites``; the hits of each are held on the view
(``base.hits_of``), so a rule that names another rule's hit as a cause reads
the hits the run produced, with the user's options, and never runs that rule
again. While a rule runs, the view is kept to the stages it declared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from .analysis import Options, Stage, Stages, allow, compute
from .base import Hit, Rule, RuleContext, expand
from .hit_columns import HitColumns

if TYPE_CHECKING:  # pragma: no cover
    from .trace import TraceView


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
        for code in rule.cites:
            if code in by_code and not state.get(code):
                place(by_code[code])
        state[rule.code] = 2
        out.append(rule)

    for rule in rules:
        place(rule)
    return out


def run(trace: "TraceView", rules: Iterable[type[Rule]],
        options_for: Callable[[type[Rule]], Mapping[str, Any]] = lambda r: dict(r.options),
        on_rule: Callable[[type[Rule], list[Hit | HitColumns]], None] | None = None,
        on_analysis: Callable[[str], None] | None = None,
        on_start: Callable[[type[Rule] | None], None] | None = None) -> dict[str, list[Hit | HitColumns]]:
    """Every rule's output on the view (``check``'s: a batch of hits stays one), by code, in
    citation order (see the module docstring); ``base.hits_of`` reads a rule's one by one.

    ``options_for(rule)`` gives a rule's options (the config's, over its
    defaults); ``on_start`` is told which rule starts (None: the shared
    analyses), ``on_rule`` / ``on_analysis`` as each finishes (the engine's
    profile and error attribution). A rule that raises propagates its exception.
    """
    order = citation_order(rules)
    trace.options = Options.from_rules(order, options_for)
    needed = {s for rule in order for s in rule.requires}
    on_start and on_start(None)
    for stage in Stage:  # in dependency order
        if stage in needed:
            compute(trace, (stage,))
            on_analysis and on_analysis(stage.value)
    held = trace.hits
    for rule in order:
        on_start and on_start(rule)
        found = check(rule, trace, options_for(rule))
        held[rule.code] = found
        on_rule and on_rule(rule, found)
    return {rule.code: held[rule.code] for rule in order}


def check(rule: type[Rule], trace: "TraceView", options: Mapping[str, Any] | None = None) -> list[Hit | HitColumns]:
    """One rule's output on the view, as it gave it (a ``HitColumns`` stays one batch), alone (the
    rules it cites are not run: their hits are whatever the view already holds), with its declared
    stages and the guard on: what ``run`` does for each rule."""
    ctx = RuleContext(options=dict(rule.options) if options is None else options,
                      stages=Stages(trace, rule.code, rule.requires))
    allow(trace, rule.code, rule.requires)
    try:
        return list(rule().check(trace, ctx))
    finally:
        allow(trace, None, None)


def check_one(rule: type[Rule], trace: "TraceView", options: Mapping[str, Any] | None = None) -> list[Hit]:
    """``check``'s hits one by one (a ``HitColumns``' members as ``ColumnHit``s): what a rule's
    fixtures read."""
    return expand(check(rule, trace, options))
