"""Memoizing a stage's parts on the view they were computed from."""

from __future__ import annotations

from typing import Callable, TypeVar

from .stages import Stage, check

T = TypeVar("T")


def cached(view, name: str, build: Callable[[], T], stage: Stage | None = None) -> T:
    """``build()`` once per view; the value lives on the view, so it dies with it.

    ``stage`` names the stage the part belongs to: the guard (``stages.check``)
    refuses it to a rule that did not declare that stage. None: a view-level
    fact of the manifest every stage and rule may read (region properties).
    """
    if stage is not None:
        check(view, stage, name)
    store = view.__dict__.setdefault("_stage_parts", {})
    if name not in store:
        store[name] = build()
    return store[name]
