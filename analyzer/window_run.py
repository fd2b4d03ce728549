"""One window of a trace, run: its view, every selected rule, the drafts of the hits it owns.

The engine (``analyzer.engine``) plans the windows and runs them here, one
after another, in ``--jobs`` worker processes (``window_job``) or on Ray
(``analyzer.ray_engine``); it links the drafts of all of them, and then asks
``describe_listed`` for the evidence of the findings a report lists, reading
each window again only where its columns were not kept.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from .config import Config
from .draft import Draft
from .draft_table import Piece
from .evidence import resolve
from .finding import Finding
from .gc_pause import paused
from .placement import drafts_of, owned

if TYPE_CHECKING:  # pragma: no cover
    from rules.base import Rule


class RuleError(Exception):
    """A rule raised: a bug in the rule, not bad input. The original is the __cause__."""

    def __init__(self, code: str, exc: BaseException):
        self.code = code
        self.exc = exc
        super().__init__(f"rule {code} raised {type(exc).__name__}: {exc}")

    def __reduce__(self):  # raised in a window's worker process, re-raised here
        return type(self), (self.code, self.exc)


def run_window(ds, window, config: Config, selected: list[type["Rule"]], prof,
               times: dict[str, float] | None = None, tell=None, keep_view: bool = False
               ) -> tuple[list[Piece], Any]:
    """Run every selected rule on one window: the drafts of the findings it owns (``analyzer.draft``;
    ``describe_listed`` resolves the evidence of those a report lists), and the view where ``keep_view``
    (else released now, None).
    ``times`` adds up each rule's seconds (check and evidence, not the shared analyses);
    ``tell("rule", 1)`` as each rule ends.
    """
    from ingest._jit import warm
    from rules.hit_columns import HitColumns
    from rules.runner import run
    from rules.trace import TraceView

    if selected:
        warm()  # numba's tables out of the collections below, before the window's own objects exist
    trace = TraceView(ds, blocks=window.blocks)
    trace.prefetch()
    prof and prof.mark(f"read: {trace.n:,} events, {len(trace.loaded)} columns")
    by_code = {r.code: r for r in selected}
    out: list[Piece] = []

    def on_rule(rule, found) -> None:  # found: the rule's hits, a batch of them (HitColumns) as one
        if prof:
            prof.mark(f"{rule.code} check ({sum(len(h) if isinstance(h, HitColumns) else 1 for h in found)} hits)")
        with paused():
            out.extend(drafts_of(owned(window, found, trace), by_code, rule, config, trace, window))
        prof and prof.mark(f"{rule.code} evidence")
        if times is not None:
            times[rule.code] = times.get(rule.code, 0.0) + time.perf_counter() - began[0]
        tell and tell("rule", 1)

    current: list = [None]
    began = [time.perf_counter()]

    def on_start(rule) -> None:
        current[0] = rule
        began[0] = time.perf_counter()

    def on_analysis(name: str) -> None:
        prof and prof.mark(f"analysis {name}")

    try:
        run(trace, selected, config.options_for, on_rule=on_rule, on_analysis=on_analysis,
            on_start=on_start)
    except Exception as e:  # a rule bug: keep the original as __cause__ for tests and debugging
        code = current[0].code if current[0] is not None else "analysis"
        raise RuleError(code, e) from e
    if keep_view:  # the columns alone: the stages' results go now, before the link needs memory
        columns = trace.columns_only()
        release(trace)
        return out, columns
    release(trace)
    if sum(1 if isinstance(p, Draft) else len(p) for p in out) >= _TRIM_FROM:
        from ingest._allocator import trim

        trim()
    return out, None


# Drafts (findings: a batch counts its members) from which a window's freed arrays are handed back
# to the kernel. In moetrace's own process the allocator keeps freed memory for the next window
# (ingest._allocator); drafts that outlive their window lie amid it, so the next window's arrays
# no longer fit the holes and the heap grows past them: 5.25 GiB peak on the 20 M many-findings
# trace, 4.84 with the holes handed back (4.76 when glibc returned every large block). Counted as
# pieces once hits came in batches (a few dozen a window), it was never reached, and the peak rose
# at each window's read again: 2.36 GiB, 2.22 counted by findings. A window with few drafts keeps
# its memory for the next.
_TRIM_FROM = 10_000


def release(trace) -> None:
    # Rules' caches hang off the view in cycles; drop its arrays now, not at the next
    # collection, or a worker running window after window holds several at once (and the
    # merge and the report, which pause the collector, would hold the last one).
    trace.__dict__.clear()
    gc.collect()


def describe_listed(ds, findings: tuple[Finding, ...], kept) -> tuple[Finding, ...]:
    """The listed findings with their evidence, each window's described from its view: ``kept``'s
    (window, columns) where it is that window's, else the window's evidence rows alone, read again
    from the row groups that hold them (``TraceView.at_rows``). Memory follows the window, not
    the findings, and a window's evidence costs its rows, not the window."""
    import numpy as np

    from rules.trace import TraceView

    from .finding import updated

    kept_window, kept_view = kept if kept is not None else (None, None)
    by_window: dict[Any, list[int]] = {}
    for i, f in enumerate(findings):
        if f.pending:
            by_window.setdefault(f.pending[2], []).append(i)
    out = list(findings)
    for window, idx in by_window.items():
        listed = [findings[i] for i in idx]
        if kept_view is not None and window == kept_window:
            view = kept_view
        else:  # the rows named, renumbered as the view of them alone holds them
            rows = np.unique(np.fromiter((r for f in listed for _, r in f.pending[0]), np.int64))
            view = TraceView.at_rows(ds, rows, window.blocks)
            at = dict(zip(rows.tolist(), range(len(rows))))
            listed = [updated(f, pending=(tuple((role, at[r]) for role, r in f.pending[0]), *f.pending[1:]))
                      for f in listed]
        for i, f in zip(idx, resolve(listed, view)):
            out[i] = f
        if view is not kept_view:
            release(view)
    if kept_view is not None:
        release(kept_view)
    return tuple(out)


def registered(selected: list[type["Rule"]]) -> bool:
    """Can a worker process find these rules by code (not a test's own rule classes)?"""
    from rules import registry

    reg = registry()
    return all(reg.get(r.code) is r for r in selected)


# A window executor: (dataset, windows, config, rule codes) -> each window's drafts, in window order.
WindowExecutor = Callable[[Path, Sequence[Any], Config, list[str]], Iterable[list[Piece]]]


def window_job(dataset: str, window, config: Config, codes: list[str]) -> list[Piece]:
    from ingest.dataset import Dataset
    from rules import registry

    reg = registry()
    return run_window(Dataset(dataset), window, config, [reg[c] for c in codes], Profile.from_env())[0]


class Profile:
    """Wall time and peak RSS since the previous mark, to stderr."""

    def __init__(self):
        self.t = time.perf_counter()

    @classmethod
    def from_env(cls) -> "Profile | None":
        """MOETRACE_PROFILE=1: one stderr line per stage and rule, for bench/perf.py's profile."""
        return cls() if os.environ.get("MOETRACE_PROFILE") else None

    def mark(self, what: str) -> None:
        import resource

        now = time.perf_counter()
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
        print(f"moetrace profile: {now - self.t:8.3f} s  peak {peak:6.2f} GiB  {what}", file=sys.stderr)
        self.t = now
