"""JUnit XML for CI dashboards: one testcase per defect class, and one passing testcase per clean rule.

A class's testcase fails when its level is at or above --fail-on; the
failure lists its findings, one line each.  Classes below the gate put them
in system-out, so nothing is hidden but only real defects turn red.  Each
testcase has ``file`` and ``line`` (the kernel's site, else the trace given
on the command line, line 1) so dashboards link to the code.  Times are real:
the suite's is the diagnosis's wall time; a rule's measured seconds are
shared among its testcases (where the rules ran in worker processes there is
no per-rule time, and testcases say 0).  The suite carries the diagnosis's
start as its timestamp.  A partial trace is a suite property and in system-err.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from analyzer.finding import count_at_or_above

from ._fmt import compress_ranks, plural
from ._sarif_paths import Paths

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.classes import DefectClass
    from analyzer.engine import Report
    from analyzer.finding import Finding

_MAX_LINES = 1000  # findings listed per testcase; the JSON report has all of them
# What XML 1.0 cannot hold even escaped (ElementTree writes it raw, and no parser reads the file back):
# C0 controls but tab, newline and return, lone surrogates, U+FFFE and U+FFFF. A manifest's region or
# kernel name may carry one; it is written as \xNN instead.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def render(report: "Report", *, fail_on: str | None = None, color: bool = False) -> str:
    fail_on = fail_on or report.config.fail_on
    failing_ids = {f.id for f in report.failing(fail_on)}
    rules = {r.code: r for r in report.rules}
    seconds = dict(report.rule_seconds)
    per_rule: dict[str, int] = {}
    for c in report.classes:
        per_rule[c.code] = per_rule.get(c.code, 0) + 1
    clean = [code for code in rules if code not in per_rule]
    tests = len(report.classes) + len(clean)
    failures = sum(1 for c in report.classes if _failing(c, fail_on))
    paths = Paths(report.trace.inputs)

    root = ET.Element("testsuites", name="moetrace", tests=str(tests), failures=str(failures), errors="0",
                      time=_t(report.seconds))
    suite = ET.SubElement(root, "testsuite", name="moetrace diagnose", tests=str(tests), failures=str(failures),
                          errors="0", skipped="0", time=_t(report.seconds), timestamp=report.started or "")
    props = ET.SubElement(suite, "properties")
    for name, value in (("inputs", ", ".join(report.trace.inputs)), ("fail-on", fail_on),
                        ("partial-trace", "true" if report.trace.partial else "false")):
        ET.SubElement(props, "property", name=name, value=value)
    for c in report.classes:
        members = report.listed(c.members)
        file, line = _file_line(c, paths)
        time = seconds.get(c.code, 0.0) / per_rule[c.code]
        case = ET.SubElement(suite, "testcase", classname=f"moetrace.{c.family}.{c.code}", name=_name(c),
                             file=file, line=str(line), time=_t(time))
        bad = [f for f in members if f.id in failing_ids]
        rest = [f for f in members if f.id not in failing_ids]
        if bad:
            fail = ET.SubElement(case, "failure", type=c.code, message=f"{plural(_failing(c, fail_on), 'finding')} "
                                 f"at or above {fail_on}: {members[0].message}")
            fail.text = _lines(bad) + _unlisted(c)
        if rest:
            ET.SubElement(case, "system-out").text = _lines(rest) + ("" if bad else _unlisted(c))
    for code in clean:
        rule = rules[code]
        file, line = paths.trace_file(), 1
        ET.SubElement(suite, "testcase", classname=f"moetrace.{_v(rule.family)}.{code}",
                      name=f"{code} {rule.name}: no findings", file=_rel(file, paths), line=str(line),
                      time=_t(seconds.get(code, 0.0)))
    if report.trace.partial:
        ET.SubElement(suite, "system-err").text = "partial trace: " + "; ".join(report.trace.gap_lines()) + "\n"
    _xml_safe(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _xml_safe(root: ET.Element) -> None:
    for el in root.iter():
        for k, v in el.attrib.items():
            el.set(k, _escape(v))
        if el.text:
            el.text = _escape(el.text)


def _escape(text: str) -> str:
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def _name(c: "DefectClass") -> str:
    """Stable across reruns: the class's code, name, site and region, never its ranks."""
    at = []
    if c.site is not None:
        at.append(f"site {c.site}")
    if c.region is not None:
        at.append(c.region)
    role = "root cause" if c.root else "symptom"
    return f"{c.code} {c.name} ({role}{', ' + ', '.join(at) if at else ''}) [{c.fingerprint}]"


def _file_line(c: "DefectClass", paths: Paths) -> tuple[str, int]:
    """The SARIF location's file as a path: relative to the repository where it lies in it, else absolute."""
    phys = paths.physical(c.source)
    return _path(phys["artifactLocation"]["uri"]), phys["region"]["startLine"]


def _rel(path: str, paths: Paths) -> str:
    from pathlib import Path

    return _path(paths.artifact(path, relative_to=Path.cwd())["uri"])


def _path(uri: str) -> str:
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path) if uri.startswith("file:") else unquote(uri)


def _failing(c: "DefectClass", fail_on: str) -> int:
    """How many of the class's findings, listed or not, are at or above ``fail_on``."""
    return count_at_or_above(c.by_severity, fail_on)


def _unlisted(c: "DefectClass") -> str:
    return "" if c.listed_all else f"... and {c.size - len(c.members):,} more of this class not listed (--max-findings)\n"


def _lines(fs: list["Finding"]) -> str:
    out = [_line(f) for f in fs[:_MAX_LINES]]
    if len(fs) > _MAX_LINES:
        out.append(f"... and {len(fs) - _MAX_LINES} more (--format json lists them); ranks "
                   f"{compress_ranks({f.location.rank for f in fs if f.location.rank is not None})}")
    return "\n".join(out) + "\n"


def _line(f: "Finding") -> str:
    role = "root cause" if f.is_root else f"caused by {', '.join(f.caused_by)}"
    return f"{f.id} {f.severity} [{f.confidence}] {f.location.text()}: {f.message} ({role})"


def _t(seconds: float) -> str:
    return f"{seconds:.3f}"


def _v(x) -> str:
    return getattr(x, "value", x)
