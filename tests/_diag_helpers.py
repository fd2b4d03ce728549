"""Test-only rules and tiny traces for the analyzer tests (engine, reports, CLI).

The scenario: 4 ranks, one core each.  Rank 0 routes token 3 to expert 99
(out of range: num_experts is 8); every rank then waits on status[3] at site
2 (combine.cc:120) forever.  Rank 1 also does a plain write (an unrelated
warning).  The test rules find, in order of cause:

- MT598 (invalid-expert-id, error): each route with expert >= num_experts.
- MT198 (hang, error): each wait_begin; caused by the bad route, symptom class
  (site, region, cmp, target).
- MT498 (missing-drain, warning): each write; no cause.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

import numpy as np

from ingest.contract import Kind
from rules.base import Confidence, Family, Hit, Rule, RuleContext, Severity

MANIFEST = {
    "format": "moetrace-trace/1", "ranks": 4, "cores": 1, "protocol": "test",
    "params": {"num_experts": 8, "local_experts": 2, "expert_sentinel": -1},
    "regions": [
        {"name": "payload", "role": "payload", "elem_bytes": 4, "length": 64},
        {"name": "status", "role": "flag", "elem_bytes": 4, "length": 16, "reset": 0},
    ],
    "sites": {"1": "kernels/dispatch.cc:88", "2": "kernels/combine.cc:120"},
}


def events(bad_expert: int = 99, with_write: bool = True, waits: bool = True, ts_shift: int = 0,
           seq_shift: int = 0) -> list[dict]:
    out = []
    for r in range(4):
        seq = seq_shift

        def ev(kind, **kw):
            nonlocal seq
            out.append({"rank": r, "core": 0, "seq": seq, "ts": ts_shift + 10 * seq, "launch": 0,
                        "kind": kind, **kw})
            seq += 1

        ev("kernel_begin", name="combine")
        expert = bad_expert if r == 0 else 2 * r
        ev("route", token=3, topk=0, expert=expert, site=1)
        if with_write and r == 1:
            ev("write", region="payload", offset=5, nbytes=4, value=7)
        if waits:
            ev("wait_begin", region="status", offset=3, cmp="eq", value=1, site=2)
        else:
            ev("kernel_end", name="combine")
    return out


def write_trace(d: Path, evs: list[dict] | None = None, manifest: dict | None = None) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "manifest.json").write_text(json.dumps(manifest or MANIFEST))
    (d / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in (evs if evs is not None else events())))
    return d


def make_dataset(tmp: Path, name: str = "ds", lost: dict[tuple[int, int], int] | None = None, **kw) -> Path:
    """Ingest the scenario into a dataset; ``lost`` marks events lost to ring wrap per (rank, core)."""
    from ingest.run import ingest

    raw = write_trace(tmp / f"{name}-raw", events(**kw))
    out = tmp / name
    ingest([raw], out)
    if lost:  # the JSONL reader never loses events: state the gap the way a ring dump would
        doc = json.loads((out / "ingest.json").read_text())
        for c in doc["cores"]:
            c["lost"] = lost.get((c["rank"], c["core"]), 0)
        (out / "ingest.json").write_text(json.dumps(doc))
    return out


def _key(trace, row: int) -> tuple:
    return (int(trace["rank"][row]), int(trace["core"][row]), int(trace["seq"][row]))


def _rows(trace, kind: Kind) -> np.ndarray:
    return np.flatnonzero(trace["kind"] == int(kind))


class BadRoute(Rule):
    """Test rule.

    What it does
    Finds routes with an expert id outside the manifest's range.

    Why it matters
    Dispatch drops them, combine waits forever.

    Example
    route token=3 expert=99 with num_experts=8.

    Evidence
    The route.
    """

    code = "MT598"
    name = "test-bad-route"
    family = Family.INVALID_EXPERT_ID
    severity = Severity.ERROR
    summary = "Route to an expert out of range"

    def check(self, trace, ctx: RuleContext) -> Iterable[Hit]:
        ne = trace.manifest.num_experts
        for row in _rows(trace, Kind.ROUTE):
            if trace["expert"][row] >= ne:
                yield self.hit(f"route of token {int(trace['token'][row])} carries expert "
                               f"{int(trace['expert'][row])}", rows=(("invalid route", int(row)),),
                               key=_key(trace, row))


class StuckWait(Rule):
    """Test rule.

    What it does
    Every wait_begin is stuck (the scenario never ends its waits).

    Why it matters
    A hang.

    Example
    wait_begin status[3] eq 1.

    Evidence
    The wait.
    """

    code = "MT198"
    name = "test-stuck-wait"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "Wait that never ended"
    options = {"confidence": "certain"}

    def check(self, trace, ctx: RuleContext) -> Iterable[Hit]:
        bad = [_key(trace, r) for r in _rows(trace, Kind.ROUTE) if trace["expert"][r] >= trace.manifest.num_experts]
        region = trace.manifest.regions
        for row in _rows(trace, Kind.WAIT_BEGIN):
            yield self.hit(f"wait on status[{int(trace['offset'][row])}] never ended",
                           rows=(("stuck wait", int(row)),), key=_key(trace, row),
                           confidence=Confidence(ctx.option("confidence")),
                           caused_by=tuple(("MT598", k) for k in bad),
                           extra={"class": (int(trace["site"][row]), region[int(trace["region"][row])].name,
                                            "eq", int(trace["value"][row]))})


class PlainWrite(Rule):
    """Test rule.

    What it does
    Every plain write.

    Why it matters
    A stand-alone warning.

    Example
    write payload[5].

    Evidence
    The write.
    """

    code = "MT498"
    name = "test-plain-write"
    family = Family.MISSING_DRAIN
    severity = Severity.WARNING
    summary = "Plain write"

    def check(self, trace, ctx: RuleContext) -> Iterable[Hit]:
        for row in _rows(trace, Kind.WRITE):
            yield self.hit("plain write", rows=(("write", int(row)),), key=_key(trace, row))


class Boom(Rule):
    """Test rule that crashes."""

    code = "MT599"
    name = "test-boom"
    family = Family.INVALID_EXPERT_ID
    severity = Severity.ERROR
    summary = "Crashes"

    def check(self, trace, ctx):
        raise ValueError("kaboom")


RULES = (BadRoute, StuckWait, PlainWrite)


def registry_of(*rules: type[Rule]) -> dict[str, type[Rule]]:
    return {r.code: r for r in sorted(rules, key=lambda r: r.code)}
