"""The shared analyses' stages, what each builds on, and the guard that keeps a rule to what it declared.

A stage is computed at most once per view (a window of the trace), on first
use, with the user's options; its parts are memoized on the view by
``_cache.cached``, each part named with its stage. While a rule runs, the
view holds the stages that rule may read (``allowed``): the ones it
``requires`` and everything they build on. Reaching any other stage's part,
through ``Stages.get`` or through a helper that calls into it, raises
``UndeclaredStage``, so a missing declaration fails the rule's fixtures
instead of silently computing a stage the engine did not plan for.
"""

from __future__ import annotations

from enum import Enum
from typing import Iterable


class Stage(str, Enum):
    """The shared analyses, in the order they build on one another."""

    CORE_SCAN = "core_scan"  # per-core end states, stuck waits, wait pairs, atomic windows
    HAPPENS_BEFORE = "happens_before"  # barrier phases, quiet completion, flag-sync edges, unfenced writes
    WORD_TABLE = "word_table"  # every word write into a flag-like region, in happens-before order
    PRODUCERS = "producers"  # who writes which slot: raw and kept counts, ring heads and tails
    WAIT_FOR = "wait_for"  # the stuck waits and barriers, their producers' verdicts, the graph


# What each stage reads of the others (its parts call into these).
DEPENDS: dict[Stage, tuple[Stage, ...]] = {
    Stage.CORE_SCAN: (),
    Stage.HAPPENS_BEFORE: (),
    Stage.WORD_TABLE: (Stage.CORE_SCAN, Stage.HAPPENS_BEFORE),
    Stage.PRODUCERS: (Stage.CORE_SCAN,),
    Stage.WAIT_FOR: (Stage.PRODUCERS, Stage.WORD_TABLE),
}


# The rules whose findings a stage's results name as causes, by the keys those rules give them (the
# wait-for graph cites the stale-flag and ring facts it follows). A stage never reads their hits: it
# computes the same facts; a rule that passes the stage's causes into its hits names these codes.
CITES: dict[Stage, tuple[str, ...]] = {Stage.WAIT_FOR: ("MT106", "MT107", "MT108", "MT201", "MT202")}


def closure(stages: Iterable[Stage]) -> frozenset[Stage]:
    """The stages and everything they build on."""
    out: set[Stage] = set()
    todo = [Stage(s) for s in stages]
    while todo:
        s = todo.pop()
        if s not in out:
            out.add(s)
            todo.extend(DEPENDS[s])
    return frozenset(out)


class UndeclaredStage(RuntimeError):
    """A rule reached a stage it does not ``require`` (a bug in the rule's declaration)."""

    def __init__(self, who: str, stage: Stage, part: str):
        self.who, self.stage, self.part = who, stage, part
        super().__init__(f"{who} reads {part!r} of stage {stage.value}, which it does not require "
                         f"(add Stage.{stage.name} to its `requires`)")


def allow(view, who: str | None, stages: Iterable[Stage] | None) -> None:
    """Keep ``view`` to ``stages`` (and what they build on) while ``who`` runs; None lifts the guard."""
    view.__dict__["_stage_guard"] = None if stages is None else (who, closure(stages))


def check(view, stage: Stage, part: str) -> None:
    guard = view.__dict__.get("_stage_guard")
    if guard is not None and stage not in guard[1]:
        raise UndeclaredStage(guard[0], stage, part)
