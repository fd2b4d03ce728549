"""SARIF 2.1.0, for code scanning: each result sits on the kernel source line that caused it.

Results are located at the kernel's file:line where the manifest's sites name
one (physicalLocation), and always at the device place (a logicalLocation
"rank R core C"), since a line alone does not say which of 4096 ranks hung.
Evidence events become relatedLocations; ids, causes and confidence travel in
the result's property bag, so a consumer can rebuild the cause chains.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from analyzer.finding import Location, _split_source, jsonable

from ._fmt import doc_sections

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.engine import Report
    from analyzer.finding import Evidence, Finding
    from rules.base import Rule

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
FINGERPRINT_KEY = "moetraceFinding/v1"


def to_sarif(report: "Report", fail_on: str | None = None) -> dict[str, Any]:
    from .json import tool_info

    info = tool_info()
    rules = list(report.rules)
    index = {r.code: i for i, r in enumerate(rules)}
    driver: dict[str, Any] = {"name": info["name"], "version": info["version"],
                              "rules": [rule_descriptor(r) for r in rules]}
    notes = [{"level": "warning", "message": {"text": f"partial trace: {g}"}} for g in report.trace.gap_lines()]
    invocation: dict[str, Any] = {"executionSuccessful": True}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    run = {
        "tool": {"driver": driver},
        "invocations": [invocation],
        "columnKind": "unicodeCodePoints",
        "results": [_result(f, index) for f in report.findings],
        "properties": {"trace": report.trace.to_json(), "summary": report.counts(),
                       "failOn": fail_on or report.config.fail_on},
    }
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def render(report: "Report", *, fail_on: str | None = None, color: bool = False) -> str:
    return json.dumps(to_sarif(report, fail_on), indent=2) + "\n"


def rule_descriptor(rule: type["Rule"]) -> dict[str, Any]:
    sections = doc_sections(rule)
    text = "\n\n".join(f"{name}\n{body}" for name, body in sections.items())
    markdown = "\n\n".join(f"## {name}\n\n{body}" for name, body in sections.items())
    desc: dict[str, Any] = {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": sections.get("What it does", rule.summary)},
        "defaultConfiguration": {"level": _v(rule.severity)},
        "properties": {"family": _v(rule.family), "tags": [_v(rule.family)]},
    }
    if text:
        desc["help"] = {"text": text, "markdown": markdown}
    return desc


def _result(f: "Finding", index: dict[str, int]) -> dict[str, Any]:
    res: dict[str, Any] = {"ruleId": f.code, "level": f.severity, "message": {"text": f.message},
                           "locations": [_location(f.location, f.location.source)],
                           "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint}}
    if f.code in index:
        res["ruleIndex"] = index[f.code]
    if f.evidence:
        res["relatedLocations"] = [_evidence_location(i, e) for i, e in enumerate(f.evidence)]
    res["properties"] = {
        "findingId": f.id, "family": f.family, "confidence": f.confidence,
        "rootCause": f.is_root, "causedBy": list(f.caused_by), "explains": list(f.explains),
        "location": f.location.to_json(), "evidence": [e.to_json() for e in f.evidence],
        "extra": jsonable(dict(f.extra)),
    }
    return res


def _location(loc: Location, source: str | None, message: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    phys = _physical(source)
    if phys:
        out["physicalLocation"] = phys
    fq = "/".join(p for p in (
        f"rank{loc.rank}" if loc.rank is not None else "",
        f"core{loc.core}" if loc.core is not None else "",
        f"launch{loc.launch}" if loc.launch is not None else "",
        (loc.region if loc.offset is None else f"{loc.region}[{loc.offset}]") if loc.region else "") if p)
    out["logicalLocations"] = [{"name": loc.place(), "fullyQualifiedName": fq or "trace"}]
    if message:
        out["message"] = {"text": message}
    return out


def _evidence_location(i: int, e: "Evidence") -> dict[str, Any]:
    place = Location(rank=e.rank, core=e.core, launch=e.values.get("launch"))
    out = _location(place, e.source, e.text())
    out["id"] = i
    out["logicalLocations"][0]["fullyQualifiedName"] += f"/seq{e.seq}"
    return out


def _physical(source: str | None) -> dict[str, Any] | None:
    if not source:
        return None
    path, line = _split_source(source)
    path = path.replace("\\", "/")
    # Relative paths stay relative URI references (code scanning resolves them
    # against the repository root); absolute ones become file: URIs.
    uri = quote(path, safe="/:@-._~")
    if path.startswith("/"):
        uri = "file://" + uri
    phys: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    if line is not None and line >= 1:
        phys["region"] = {"startLine": line}
    return phys


def _v(x: Any) -> str:
    return getattr(x, "value", x)
