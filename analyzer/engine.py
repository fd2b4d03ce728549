"""The engine: run the selected rules over a trace and turn their hits into a report.

``diagnose`` opens the dataset (or ingests raw traces into a temporary one),
runs each selected rule once, places every hit as a draft (``analyzer.draft``:
its location from the first row unless the hit overrides it, kernel file:line
from the manifest's sites), links causes over the drafts, and builds a finding,
with its rows resolved into evidence events, only for what the report lists.
How causes become root causes:

- A hit's ``caused_by`` (code, key) pairs resolve to every finding of that
  code with that key.  A pair that resolves to nothing (its rule was not
  selected, or found nothing) is dropped and listed in the finding's
  ``extra["causes_not_reported"]``; a finding left with no causes is a root
  cause: the deepest explanation this run can offer, and the text says the
  named cause was not reported.
- A cycle of causes with no cause outside it (a true deadlock) is broken at
  its first member by (severity, code, place), which becomes the root; the
  members are listed in that root's ``extra["cycle"]``.
- ``analyzer.causes.link`` is the one place that decides roots, for every
  rule alike: besides cited causes, a finding whose stalled place (a rank
  that made no progress) is the waiter of another finding's stuck wait is
  that finding's symptom, and a finding whose evidence may lie in a gap of
  the trace is a partial-trace note, never an error or warning root.
- Root causes are the findings with no causes; each ``explains`` every
  finding that reaches it through ``caused_by``, transitively.  Roots come
  first (severity, then symptoms explained, then code and place), then the
  symptoms in the order of the first root that explains them, nearest
  first (direct symptoms before the symptoms of symptoms).  Ids F1..Fn
  follow that order.
- After linking, ``analyzer.classes.classify`` sorts the findings into defect
  classes (one defect at many ranks, cores, launches); ``Report.classes``
  holds them, and ``analyzer.classes.sample`` the findings a report lists, each with its class id.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from . import window_run as W
from .causes import link
from .classes import DefectClass, sample
from .config import Config
from .draft_table import Drafts, Piece
from .finding import Finding, count_at_or_above
from .gc_pause import paused
from .window_run import RuleError, WindowExecutor  # noqa: F401 (the engine's API)

if TYPE_CHECKING:  # pragma: no cover
    from rules.base import Rule


@dataclass(frozen=True)
class TraceInfo:
    """What was diagnosed, and what of it is missing."""

    inputs: tuple[str, ...]
    protocol: str = ""
    ranks: int = 0
    cores: int = 0
    events: int = 0
    ranks_missing: tuple[int, ...] = ()
    lost: tuple[tuple[int, int, int], ...] = ()  # (rank, core, events lost to ring wrap)

    @property
    def partial(self) -> bool:
        return bool(self.ranks_missing or self.lost)

    @property
    def lost_total(self) -> int:
        return sum(n for _, _, n in self.lost)

    def gap_lines(self) -> list[str]:
        """The partial-trace statement, one line per kind of gap; empty for a complete trace."""
        from .report._fmt import compress_ranks

        out = []
        if self.ranks_missing:
            word = "rank" if len(self.ranks_missing) == 1 else "ranks"
            out.append(f"no events from {word} {compress_ranks(self.ranks_missing)} (dump missing or rank died)")
        if self.lost:
            cores = ", ".join(f"rank {r} core {c}: {n}" for r, c, n in self.lost)
            out.append(f"{self.lost_total} events lost to ring wrap or a cut start ({cores})")
        return out

    def to_json(self) -> dict[str, Any]:
        return {"inputs": list(self.inputs), "protocol": self.protocol, "ranks": self.ranks,
                "cores": self.cores, "events": self.events, "partial": self.partial,
                "ranks_missing": list(self.ranks_missing),
                "lost": [{"rank": r, "core": c, "events": n} for r, c, n in self.lost],
                "gaps": self.gap_lines()}


@dataclass(frozen=True)
class Report:
    """A diagnosis. ``findings`` are the ones it lists: each defect class's first
    ``config.max_findings`` in report order (``analyzer.classes.sample``); the classes, the
    counts, the verdict and the exit code count every finding, listed or not."""

    findings: tuple[Finding, ...]
    trace: TraceInfo
    rules: tuple[type["Rule"], ...] = ()  # the rules run, in code order
    config: Config = field(default_factory=Config)
    classes: tuple[DefectClass, ...] = ()  # the findings grouped into defects (analyzer.classes)
    started: str = ""  # when the diagnosis began, UTC ISO 8601 (seconds)
    seconds: float = 0.0  # its wall time
    rule_seconds: tuple[tuple[str, float], ...] = ()  # (code, seconds in the rule) where measured in-process
    class_index: Any = None  # the class number of every finding by its number (F1: 0); None: the listed ones'

    def class_of(self, f: Finding) -> DefectClass:
        return self._classes[f.defect_class]

    def class_of_id(self, fid: str) -> DefectClass:
        """The class of any finding of the report by id, listed or not."""
        if self.class_index is None:
            return self.class_of(self.by_id(fid))
        return self.classes[self.class_index[int(fid[1:]) - 1]]

    def listed(self, ids: Iterable[str]) -> list[Finding]:
        """The findings of ``ids`` that the report lists, in the order given."""
        have = self._ids
        return [have[i] for i in ids if i in have]

    @cached_property  # a frozen dataclass without slots: the value goes to the instance's __dict__
    def _classes(self) -> dict[str, DefectClass]:
        return {c.id: c for c in self.classes}

    def by_id(self, fid: str) -> Finding:
        return self._ids[fid]

    @cached_property
    def _ids(self) -> dict[str, Finding]:
        return {f.id: f for f in self.findings}

    @property
    def roots(self) -> list[Finding]:
        """The root causes the report lists."""
        return [f for f in self.findings if f.is_root]

    @property
    def complete(self) -> bool:
        """Does it list every finding (no class cut to ``--max-findings``)?"""
        return all(c.listed_all for c in self.classes)

    def failing(self, fail_on: str | None = None) -> list[Finding]:
        """The listed findings at or above the fail-on level; ``failing_count`` counts them all."""
        level = fail_on or self.config.fail_on
        return [] if level == "never" else [f for f in self.findings if f.at_or_above(level)]

    def failing_count(self, fail_on: str | None = None) -> int:
        return count_at_or_above(self.counts()["by_severity"], fail_on or self.config.fail_on)

    def exit_code(self, fail_on: str | None = None) -> int:
        return 1 if self.failing_count(fail_on) else 0

    def counts(self) -> dict[str, Any]:
        fam: dict[str, int] = {}
        sev = {"error": 0, "warning": 0, "note": 0}
        if self.classes or not self.findings:
            for c in self.classes:
                fam[c.family] = fam.get(c.family, 0) + c.size
                for level, n in c.by_severity.items():
                    sev[level] += n
            total = sum(c.size for c in self.classes)
            roots = sum(c.size for c in self.classes if c.root)
        else:  # findings not grouped (a report built by hand): count them
            for f in self.findings:
                fam[f.family] = fam.get(f.family, 0) + 1
                sev[f.severity] += 1
            total = len(self.findings)
            roots = sum(1 for f in self.findings if f.is_root)
        return {"findings": total, "root_causes": roots, "symptoms": total - roots,
                "classes": len(self.classes), "root_classes": sum(1 for c in self.classes if c.root),
                "by_severity": sev, "by_family": dict(sorted(fam.items())), "listed": len(self.findings)}


# --------------------------------------------------------------------------


def diagnose(inputs: str | Path | Sequence[str | Path], config: Config | None = None, *,
             rules: Iterable[type["Rule"]] | None = None,
             progress: Callable[[str, int], None] | None = None,
             executor: "WindowExecutor | None" = None) -> Report:
    """Diagnose a dataset directory, or raw traces (JSONL dirs, .mtr dumps) ingested on the fly.

    ``progress(phase, n)`` is handed to the ingest of raw inputs ("read",
    "write"), then told of the diagnosis: "windows" / "rules" with n the
    total once, "window" / "rule" with n done as each ends.  ``rules``
    replaces the registry (tests register their own); the config still selects.
    ``executor`` runs the windows elsewhere (``analyzer.ray_engine.RayWindows``)
    instead of here or in ``config.jobs`` local processes.
    """
    from ingest.location import as_location

    from .inputs import as_dataset

    config = config or Config()
    if rules is None:
        from rules import registry

        rules = registry().values()
    selected = config.select_rules([type(r) if not isinstance(r, type) else r for r in rules])
    paths = [as_location(inputs)] if isinstance(inputs, (str, Path)) else [as_location(p) for p in inputs]
    with as_dataset(paths, progress=progress) as dataset:
        return _run(dataset, paths, config, selected, progress, executor)


def _run(dataset: Path, inputs: Sequence[Path], config: Config, selected: list[type["Rule"]],
         progress: Callable[[str, int], None] | None = None,
         executor: "WindowExecutor | None" = None) -> Report:
    from datetime import datetime, timezone

    from ingest.dataset import Dataset

    from .windows import plan

    started = datetime.now(timezone.utc).replace(tzinfo=None).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    tell = progress or (lambda phase, n: None)
    ds = Dataset(dataset)
    total = ds.num_rows()
    windows = plan(ds.blocks, config.window_events, total)
    prof = W.Profile.from_env()
    drafts: list[Piece] = []
    kept = None  # (window, its columns): the last window's, for the evidence of its listed findings
    jobs = min(config.jobs, len(windows))
    tell("windows", len(windows))
    times: dict[str, float] = {}
    if executor is not None and W.registered(selected):
        for found in executor(dataset, windows, config, [r.code for r in selected]):
            drafts.extend(found)
            tell("window", 1)
    elif jobs > 1 and W.registered(selected):
        from contextlib import closing

        from .pool import parallel

        # closing: an interrupt between two windows ends the pool here, not when the generator is collected
        with closing(parallel(W.window_job, dataset, windows, config, [r.code for r in selected], jobs)) as each:
            for found in each:
                drafts.extend(found)
                tell("window", 1)
    else:
        tell("rules", len(windows) * len(selected))
        # The last window's columns outlive the sampling: the evidence of its listed findings is
        # described from them, not read again (with one window, every finding's).
        for w in windows:
            found, view = W.run_window(ds, w, config, selected, prof, times, tell, w is windows[-1])
            drafts.extend(found)
            tell("window", 1)
        kept = (windows[-1], view) if windows else None
    lost = sorted((c.rank, c.core, c.missing) for c in ds.report.cores if c.missing)
    info = TraceInfo(inputs=tuple(str(p) for p in inputs), protocol=ds.manifest.protocol,
                     ranks=ds.manifest.ranks, cores=ds.manifest.cores, events=total,
                     ranks_missing=tuple(ds.report.ranks_missing), lost=tuple(lost))
    with paused():
        linked = link(Drafts.of(drafts))
        del drafts
        findings, classes, index = sample(linked, config.max_findings)
        del linked  # the drafts: only the listed findings are built
        findings = W.describe_listed(ds, findings, kept)
    prof and prof.mark(f"link, classes, and the evidence of the {len(findings):,} listed findings")
    return Report(findings, info, tuple(selected), config, classes=classes, started=started,
                  seconds=time.perf_counter() - t0, rule_seconds=tuple(times.items()), class_index=index)


