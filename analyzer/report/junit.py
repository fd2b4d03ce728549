"""JUnit XML for CI dashboards: one testcase per rule run.

A rule's testcase fails when it has findings at or above --fail-on; the
failure lists them, one line each.  Findings below the gate go to the
testcase's system-out, so nothing is hidden but only real defects turn red.
A partial trace is stated as a testsuite property and in system-err.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from ._fmt import plural

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.engine import Report
    from analyzer.finding import Finding


def render(report: "Report", *, fail_on: str | None = None, color: bool = False) -> str:
    fail_on = fail_on or report.config.fail_on
    failing_ids = {f.id for f in report.failing(fail_on)}
    by_code: dict[str, list["Finding"]] = {}
    for f in report.findings:
        by_code.setdefault(f.code, []).append(f)
    codes = [r.code for r in report.rules]
    codes += sorted(c for c in by_code if c not in codes)
    failures = sum(1 for c in codes if any(f.id in failing_ids for f in by_code.get(c, [])))

    root = ET.Element("testsuites", name="moetrace", tests=str(len(codes)), failures=str(failures),
                      errors="0")
    suite = ET.SubElement(root, "testsuite", name="moetrace diagnose", tests=str(len(codes)),
                          failures=str(failures), errors="0", skipped="0", time="0")
    props = ET.SubElement(suite, "properties")
    for name, value in (("inputs", ", ".join(report.trace.inputs)), ("fail-on", fail_on),
                        ("partial-trace", "true" if report.trace.partial else "false")):
        ET.SubElement(props, "property", name=name, value=value)
    rules = {r.code: r for r in report.rules}
    for code in codes:
        rule = rules.get(code)
        found = by_code.get(code, [])
        family = getattr(rule.family, "value", rule.family) if rule else (found[0].family if found else "")
        name = f"{code} {rule.name if rule else found[0].name}"
        case = ET.SubElement(suite, "testcase", classname=f"moetrace.{family}", name=name, time="0")
        bad = [f for f in found if f.id in failing_ids]
        rest = [f for f in found if f.id not in failing_ids]
        if bad:
            fail = ET.SubElement(case, "failure", type=code,
                                 message=f"{plural(len(bad), 'finding')} at or above {fail_on}")
            fail.text = "\n".join(_line(f) for f in bad) + "\n"
        if rest:
            ET.SubElement(case, "system-out").text = "\n".join(_line(f) for f in rest) + "\n"
    if report.trace.partial:
        ET.SubElement(suite, "system-err").text = "partial trace: " + "; ".join(report.trace.gap_lines()) + "\n"
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _line(f: "Finding") -> str:
    role = "root cause" if f.is_root else f"caused by {', '.join(f.caused_by)}"
    return f"{f.id} {f.severity} [{f.confidence}] {f.location.text()}: {f.message} ({role})"
