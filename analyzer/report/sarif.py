"""SARIF 2.1.0 for code scanning: one result per root-cause defect class, on the kernel line that caused it.

One bug is one alert: a root-cause class (analyzer.classes) becomes one
result; its other places and every symptom it explains (the 63 ranks a dead
rank stopped) are the result's relatedLocations.  Every location has a
physicalLocation, as GitHub requires: the kernel's file:line where the
manifest's sites name one, else the trace given on the command line, line 1
(``_sarif_paths``).  The device place rides along as a logicalLocation.

Fingerprints are the class's (``moetraceClass/v2``), never a rank's, so a
flaky hang that stops another rank on the rerun matches the same alert.
GitHub's limits are kept (``MAX_RESULTS``, ``MAX_LOCATIONS``,
``MAX_GZIP_BYTES``): what is left out is counted in a notification.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from analyzer.finding import Location, jsonable, severity_rank

from ._fmt import compress_ranks, doc_sections, plural
from ._sarif_paths import SRCROOT, Paths

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.classes import DefectClass
    from analyzer.engine import Report
    from analyzer.finding import Finding
    from rules.base import Rule

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "moetraceClass/v2"
# GitHub code scanning: a run over 25,000 results is rejected and only the top 5,000 are kept; a result
# may have 1,000 locations (related ones counted here too); an upload may be 10 MB gzipped.
MAX_RESULTS = 5000
MAX_LOCATIONS = 1000
MAX_GZIP_BYTES = 9 * 2**20
_MAX_IDS = 1000  # finding ids listed in a result's property bag


def to_sarif(report: "Report", fail_on: str | None = None, *, source_root: str | Path | None = None,
             max_gzip_bytes: int = MAX_GZIP_BYTES) -> dict[str, Any]:
    from .json import tool_info

    info = tool_info()
    paths = Paths(report.trace.inputs, source_root)
    rules = list(report.rules)
    index = {r.code: i for i, r in enumerate(rules)}
    roots = [c for c in report.classes if c.root]
    results = [_result(c, report, index, paths) for c in roots[:MAX_RESULTS]]
    notes = [{"level": "warning", "message": {"text": f"partial trace: {g}"}} for g in report.trace.gap_lines()]
    run: dict[str, Any] = {
        "tool": {"driver": {"name": info["name"], "version": info["version"],
                            "rules": [rule_descriptor(r) for r in rules]}},
        "invocations": [{"executionSuccessful": True}],
        "originalUriBaseIds": {SRCROOT: paths.base()},
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {"trace": report.trace.to_json(), "summary": report.counts(),
                       "failOn": fail_on or report.config.fail_on},
    }
    doc = {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
    kept = _fit(doc, max_gzip_bytes)
    left = len(roots) - kept
    if left:
        shown = sum(c.size + len({s for m in report.listed(c.members) for s in m.explains}) for c in roots[:kept])
        notes.append({"level": "warning", "message": {"text": (
            f"{plural(left, 'result')} of {len(roots)} left out to stay within GitHub code scanning's limits "
            f"({MAX_RESULTS:,} results, {max_gzip_bytes / 2**20:.0f} MB gzipped): the results kept cover "
            f"{shown:,} of {report.counts()['findings']:,} findings, most severe first; "
            "moetrace diagnose --format json lists them")}})
        run["properties"]["resultsOmitted"] = left
    if notes:
        run["invocations"][0]["toolExecutionNotifications"] = notes
    return doc


def render(report: "Report", *, fail_on: str | None = None, color: bool = False,
           source_root: str | Path | None = None) -> str:
    return json.dumps(to_sarif(report, fail_on, source_root=source_root), indent=2) + "\n"


def help_uri(code: str) -> str:
    """docs/rules/CODE.md, generated from the rule's docstring (docs/gen_rule_docs.py).

    Absolute under the package's Documentation URL when its metadata has one;
    else the path in the repository.
    """
    from importlib.metadata import PackageNotFoundError, metadata

    try:
        urls = metadata("moetrace").get_all("Project-URL") or []
    except PackageNotFoundError:
        urls = []
    for entry in urls:
        label, _, url = entry.partition(",")
        if label.strip().lower() == "documentation" and url.strip():
            return f"{url.strip().rstrip('/')}/rules/{code}.md"
    return f"docs/rules/{code}.md"


def rule_descriptor(rule: type["Rule"]) -> dict[str, Any]:
    sections = doc_sections(rule)
    text = "\n\n".join(f"{name}\n{body}" for name, body in sections.items())
    markdown = "\n\n".join(f"## {name}\n\n{body}" for name, body in sections.items())
    desc: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": sections.get("What it does", rule.summary)},
        "helpUri": help_uri(rule.code),
        "defaultConfiguration": {"level": _v(rule.severity)},
        "properties": {"family": _v(rule.family), "tags": [_v(rule.family)]},
    }
    if text:
        desc["help"] = {"text": text, "markdown": markdown}
    return desc


def _result(c: "DefectClass", report: "Report", index: dict[str, int],
            paths: Paths) -> dict[str, Any]:
    members = report.listed(c.members)
    rep = members[0]
    symptoms = list(dict.fromkeys(s for m in members for s in m.explains))
    # A symptom's level is its class's where the report does not list it (--max-findings).
    level = max([c.severity] + [report.class_of_id(s).severity for s in symptoms], key=severity_rank)
    places = [(m, True) for m in members[1:]] + [(f, False) for f in report.listed(symptoms)]
    omitted = max(0, len(places) - (MAX_LOCATIONS - 1))
    related = [(f, f"same defect at {f.location.text()}: {f.message}" if same else
                f"symptom {f.id} {f.code} {f.name} at {f.location.text()}: {f.message}")
               for f, same in places[:MAX_LOCATIONS - 1]]
    res: dict[str, Any] = {
        "ruleId": c.code, "level": level, "message": {"text": _message(c, rep, symptoms, report)},
        "locations": [_location(rep.location, paths)],
        "partialFingerprints": {FINGERPRINT_KEY: c.fingerprint},
    }
    if c.code in index:
        res["ruleIndex"] = index[c.code]
    if related:
        res["relatedLocations"] = [_location(f.location, paths, text, i + 1) for i, (f, text) in enumerate(related)]
    res["properties"] = {
        "classId": c.id, "findings": c.size, "findingIds": list(c.members[:_MAX_IDS]),
        "ranks": compress_ranks(c.ranks), "cores": compress_ranks(c.cores), "launches": compress_ranks(c.launches),
        "rootCause": True, "symptoms": len(symptoms), "explainsClasses": list(c.explains),
        "relatedLocationsOmitted": omitted, "confidence": rep.confidence,
        "location": rep.location.to_json(), "evidence": [e.to_json() for e in rep.evidence[:50]],
        "extra": jsonable(dict(rep.extra)),
    }
    return res


def _message(c: "DefectClass", rep: "Finding", symptoms: Sequence[str], report: "Report") -> str:
    text = rep.message
    if c.size > 1:
        text += f" (and {plural(c.size - 1, 'more place')} like it: ranks {compress_ranks(c.ranks)})"
    if symptoms:
        groups: dict[str, list[str]] = {}
        for s in symptoms:
            groups.setdefault(report.class_of_id(s).id, []).append(s)
        parts = []
        for ids in sorted(groups.values(), key=lambda ms: -len(ms))[:5]:
            listed = report.listed(ids)
            cls = report.class_of_id(ids[0])
            ranks = {m.location.rank for m in listed if m.location.rank is not None}
            where = f" on ranks {compress_ranks(ranks)}" if ranks else ""
            parts.append(f"{len(ids)} x {cls.code} {cls.name}{where}")
        more = f", and {len(groups) - 5} more kinds" if len(groups) > 5 else ""
        text += f"; explains {plural(len(symptoms), 'symptom')}: {', '.join(parts)}{more}"
    return text


def _location(loc: Location, paths: Paths, message: str | None = None, ident: int | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if ident is not None:
        out["id"] = ident
    out["physicalLocation"] = paths.physical(loc.source)
    fq = "/".join(p for p in (
        f"rank{loc.rank}" if loc.rank is not None else "",
        f"core{loc.core}" if loc.core is not None else "",
        f"launch{loc.launch}" if loc.launch is not None else "",
        (loc.region if loc.offset is None else f"{loc.region}[{loc.offset}]") if loc.region else "") if p)
    out["logicalLocations"] = [{"name": loc.place(), "fullyQualifiedName": fq or "trace"}]
    if message:
        out["message"] = {"text": message}
    return out


def _fit(doc: dict[str, Any], limit: int) -> int:
    """Drop the least severe results until the document gzips under ``limit``; returns how many are kept."""
    results = doc["runs"][0]["results"]

    def size(n: int) -> int:
        doc["runs"][0]["results"] = results[:n]
        return len(gzip.compress(json.dumps(doc, indent=2).encode(), compresslevel=6))

    n = len(results)
    if size(n) <= limit:
        return n
    lo, hi = 0, n  # the largest n that fits lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if size(mid) <= limit else (lo, mid)
    doc["runs"][0]["results"] = results[:lo]
    return lo


def _v(x: Any) -> str:
    return getattr(x, "value", x)
