"""The shared analyses' stages: a rule gets exactly the stages it declares, and each stage needs
only the stages ``DEPENDS`` says it builds on.

The guard (``rules.analysis.stages``) is on whenever a rule runs (``rules.runner``), so a rule
whose declaration misses a stage fails its fixtures; these tests show it bites both ways a rule
can reach a stage: ``ctx.stage(...)`` and a helper that calls into a stage's parts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rules.analysis import (
    RESULTS,
    HappensBefore,
    Stage,
    UndeclaredStage,
    WordTable,
    _passes,
    _phases,
    allow,
    closure,
)
from rules.analysis.stages import DEPENDS
from rules.base import Family, Rule, Severity
from rules.runner import check_one, run
from rules.trace import TraceView

CORPUS = Path(__file__).resolve().parent / "corpus"
# Traces that exercise every stage: a hang with a wait-for graph, counts, rings, atomics, barriers.
SAMPLES = ("classic_invalid_expert_9", "deepep_ring_wrong_channel", "udma_count_not_reset",
           "deepep_ll_count_raw", "rs_cut_inside_atomic_window", "two_early_get_and_unquieted_amo")


def _probe(requires, reach):
    class Probe(Rule):
        """A test rule.

        What it does
            Reaches a stage.

        Why it matters
            It tests the guard.

        Example
            none

        Evidence
            none
        """

        code, name, family, severity, summary = "MT999", "probe", Family.HANG, Severity.NOTE, "probe"

        def check(self, trace, ctx):
            reach(trace, ctx)
            return ()

    Probe.requires = tuple(requires)
    return Probe


def _dataset(tmp_path, name: str) -> Path:
    from ingest.run import ingest

    src = CORPUS / name
    if not src.is_dir():
        pytest.skip(f"corpus trace {name} not present")
    out = tmp_path / name
    ingest([src], out)
    return out


@pytest.fixture
def view(tmp_path):
    return TraceView.open(_dataset(tmp_path, SAMPLES[0]))


def test_an_undeclared_stage_through_the_context_fails(view):
    probe = _probe((), lambda trace, ctx: ctx.stage(WordTable))
    with pytest.raises(UndeclaredStage, match="MT999 reads 'WordTable' of stage word_table"):
        check_one(probe, view)


def test_a_stage_one_builds_on_is_not_handed_out(view):
    """WORD_TABLE builds on HAPPENS_BEFORE, but a rule that reads phases declares HAPPENS_BEFORE."""
    probe = _probe((Stage.WORD_TABLE,), lambda trace, ctx: ctx.stage(HappensBefore))
    with pytest.raises(UndeclaredStage):
        check_one(probe, view)


def test_an_undeclared_stage_through_a_helper_fails(view):
    """A rule that calls a stage's part directly (bypassing its context) is caught by the cache guard."""
    probe = _probe((Stage.CORE_SCAN,), lambda trace, ctx: _passes.completed_at(trace))
    with pytest.raises(UndeclaredStage, match="completed_at:False:True:False:True"):
        check_one(probe, view)


def test_the_engine_reports_the_rule_that_reached_too_far(view):
    probe = _probe((), lambda trace, ctx: _phases.phases(trace))
    with pytest.raises(UndeclaredStage, match="MT999"):
        run(view, [probe])


def test_a_declared_stage_is_computed_once_and_shared(view):
    seen = []
    probe = _probe((Stage.WORD_TABLE,), lambda trace, ctx: seen.append(ctx.stage(WordTable)))
    check_one(probe, view)
    check_one(probe, view)
    assert len(seen) == 2 and seen[0] is seen[1] and seen[0].table is not None


@pytest.mark.parametrize("name", SAMPLES)
def test_each_stage_needs_only_what_it_builds_on(tmp_path, name):
    """Computing a stage with the guard kept to that stage and its DEPENDS closure raises nothing,
    so ``DEPENDS`` is what the code does (the wait-for graph reads the run's hits, none here)."""
    ds = _dataset(tmp_path, name)
    for stage in Stage:
        view = TraceView.open(ds)
        allow(view, f"stage {stage.value}", (stage,))
        try:
            RESULTS[stage][1](view)
        finally:
            allow(view, None, None)
    assert closure((Stage.WAIT_FOR,)) == set(Stage)  # the graph reads every other stage
    assert all(set(deps) < set(Stage) for deps in DEPENDS.values())


def test_the_wait_for_graph_is_frozen_through_and_through(view):
    """Its nodes, their verdicts, the cycles and the stopped ranks cannot be changed by a rule."""
    import dataclasses

    from rules.analysis import WaitForGraph

    seen = []
    check_one(_probe((Stage.WAIT_FOR,), lambda trace, ctx: seen.append(ctx.stage(WaitForGraph))), view)
    (graph,) = seen
    assert graph.nodes and isinstance(graph.nodes, tuple) and isinstance(graph.cycles, tuple)
    node = graph.nodes[0]
    assert isinstance(node.verdicts, tuple) and node.verdicts
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.caused_by = ()
    with pytest.raises(TypeError):
        graph.stops[99] = None
    with pytest.raises(TypeError):
        graph.rank_gaps[99] = "lost"
    # It hands out values, never the builder its verdicts were read from (rules quoted its tables).
    assert {f.name for f in dataclasses.fields(graph)} == {"nodes", "cycles", "stops", "wrong", "region_names",
                                                            "rank_gaps"}
    assert all(dataclasses.is_dataclass(m) and m.__dataclass_params__.frozen for m in graph.wrong.values())
