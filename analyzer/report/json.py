"""The JSON report: a stable, versioned schema (documented in docs/findings-json.md).

Fields are only ever added within a version; a rename or removal bumps
``version``.  Every finding carries all its keys, null where unknown, so a
consumer never has to test for presence.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from analyzer.gc_pause import paused

from ._json_text import dumps_indented

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.engine import Report

VERSION = 2  # 2: findings[] lists a sample per class (summary.listed); class fingerprints from fields


def tool_info() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("moetrace")
    except PackageNotFoundError:  # running from a source tree that was never installed
        v = "0+unknown"
    return {"name": "moetrace", "version": v}


def to_json(report: "Report", fail_on: str | None = None) -> dict[str, Any]:
    fail_on = fail_on or report.config.fail_on
    failing = report.failing_count(fail_on)
    return {
        "version": VERSION,
        "tool": tool_info(),
        "trace": report.trace.to_json(),
        "rules": [{"code": r.code, "name": r.name, "family": _v(r.family), "severity": _v(r.severity)}
                  for r in report.rules],
        "summary": {**report.counts(), "max_findings": report.config.max_findings, "fail_on": fail_on,
                    "failing": failing, "exit_code": 1 if failing else 0},
        "classes": [c.to_json() for c in report.classes],
        "findings": [f.to_json() for f in report.findings],
    }


def render(report: "Report", *, fail_on: str | None = None, color: bool = False) -> str:
    with paused():  # a tree of plain dicts and lists, one per finding: no cycles to collect
        doc = to_json(report, fail_on)
        try:
            return dumps_indented(doc) + "\n"  # json.dumps(doc, indent=2)'s text, faster
        except TypeError:  # a value only json's own encoder handles (or rejects): let it say
            return json.dumps(doc, indent=2) + "\n"


def _v(x: Any) -> str:
    return getattr(x, "value", x)
