"""The text report, for a person at 3am: defect classes first, then each root cause with its symptoms.

Layout: a header (what was read, and what is missing from it), then DEFECT
CLASSES, one line per class (analyzer.classes: one defect at many places)
with its count, its places compressed (ranks 0-16,18-63) and its links;
then ROOT CAUSES, the findings with no cause (the same set the JSON report
marks ``root_cause``), one root class at a time: its first finding in full
(place, kernel source line, confidence, evidence), the other places by id,
and the symptoms it explains grouped by class; then one summary line.
``--max-findings`` caps the classes listed and the findings printed; the
rest are counted, never silently dropped.  It must read without the docs, so
every value is named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Sequence

from analyzer.config import MAX_FINDINGS

from ._fmt import compress_ranks, plural

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.classes import DefectClass
    from analyzer.engine import Report
    from analyzer.finding import Finding

_MAX_EVIDENCE = 8
_CMPS = ("eq", "ne", "gt", "ge", "lt", "le")
_MAX_IDS = 6
_MAX_GROUPS = 20  # symptom classes listed under one root class
_COLORS = {"error": "31;1", "warning": "33;1", "note": "36", "head": "1", "dim": "2"}


class _Paint:
    def __init__(self, on: bool):
        self.on = on

    def __call__(self, text: str, style: str) -> str:
        return f"\033[{_COLORS[style]}m{text}\033[0m" if self.on else text


def render(report: "Report", *, fail_on: str | None = None, color: bool = False,
           max_findings: int = MAX_FINDINGS) -> str:
    """``max_findings`` caps the classes listed and the findings printed in full; the rest are counted."""
    paint = _Paint(color)
    fail_on = fail_on or report.config.fail_on
    lines: list[str] = []
    t = report.trace
    lines.append(paint("moetrace diagnose", "head") + ": " + ", ".join(t.inputs))
    lines.append(f"trace: protocol {t.protocol or '?'}, {plural(t.ranks, 'rank')} x {plural(t.cores, 'core')}, "
                 f"{t.events:,} events, {plural(len(report.rules), 'rule')} run")
    if t.partial:
        lines.append(paint("PARTIAL TRACE", "warning") + ": findings that depend on the missing events "
                     "are marked partial-trace")
        lines.extend(f"  - {g}" for g in t.gap_lines())
    else:
        lines.append("complete trace: no events lost, every rank present")
    classes = report.classes
    if classes:
        roots = [c for c in classes if c.root]
        head = (f"DEFECT CLASSES ({len(classes)}): {plural(len(roots), 'root-cause class', 'root-cause classes')}, "
                f"{len(classes) - len(roots)} of symptoms")
        lines += ["", paint(head, "head")]
        lines += [f"  {_class_line(c, paint)}" for c in classes[:max_findings]]
        lines += _more(classes[max_findings:], max_findings)
        n_roots = sum(c.size for c in roots)
        lines += ["", paint(f"ROOT CAUSES ({n_roots} in {plural(len(roots), 'class', 'classes')})", "head")]
        for c in roots[:max_findings]:
            lines += [""] + _root_class(c, report, paint)
        lines += _more(roots[max_findings:], max_findings)
    lines += ["", _summary(report, fail_on)]
    return "\n".join(lines) + "\n"


def _more(rest: Sequence["DefectClass"], cap: int) -> list[str]:
    if not rest:
        return []
    n = sum(c.size for c in rest)
    return [f"  ... and {plural(len(rest), 'more class', 'more classes')} ({plural(n, 'finding')}) not printed "
            f"(--max-findings {cap}; --format json lists {cap} of each class)"]


def _where(c: "DefectClass") -> str:
    """'on ranks 0-16,18-63 (cores 0-3, launch 0)': the class's places, compressed."""
    if not c.ranks:
        return "on the trace"
    out = f"on {'rank' if len(c.ranks) == 1 else 'ranks'} {compress_ranks(c.ranks)}"
    more = []
    if c.cores:
        more.append(f"{'core' if len(c.cores) == 1 else 'cores'} {compress_ranks(c.cores)}")
    if c.launches:
        more.append(f"{'launch' if len(c.launches) == 1 else 'launches'} {compress_ranks(c.launches)}")
    return out + (f" ({', '.join(more)})" if more else "")


def _class_line(c: "DefectClass", paint: _Paint) -> str:
    """One line per class: what, how many, where, and how it links to the others."""
    role = "root cause" if c.root else f"symptom of {', '.join(c.caused_by) or '?'}"
    at = []
    if c.site is not None:
        at.append(f"site {c.site}" + (f" ({c.source})" if c.source else ""))
    if c.region is not None:
        at.append(f"region {c.region}")
    tail = f" at {', '.join(at)}" if at else ""
    explains = f"; explains {', '.join(c.explains[:_MAX_IDS])}" if c.explains else ""
    if len(c.explains) > _MAX_IDS:
        explains += f", ... ({len(c.explains) - _MAX_IDS} more)"
    return (f"{c.id} {paint(c.severity, c.severity)} {c.code} {c.name}, {role}: "
            f"{plural(c.size, 'finding')} {_where(c)}{tail}{explains}")


def _root_class(c: "DefectClass", report: "Report", paint: _Paint) -> list[str]:
    members = report.listed(c.members)
    out = [paint(f"{c.id}: {c.size} x {c.code} {c.name} {_where(c)}", "head")]
    out += _finding(members[0], paint)
    if c.size > 1:
        unlisted = "" if c.listed_all else f" ({c.size - len(c.members):,} not listed: --max-findings)"
        out.append(f"  and {plural(c.size - 1, 'more place')} like it: "
                   + paint(f"ids: {_ids(m.id for m in members[1:])}{unlisted}", "dim"))
    explained: dict[str, None] = {}
    for m in members:
        explained.update(dict.fromkeys(m.explains))
    out += _symptoms(list(explained), report, paint)
    return out


def _finding(f: "Finding", paint: _Paint) -> list[str]:
    conf = "" if f.confidence == "certain" else f" [{f.confidence}]"
    head = f"{f.id} {paint(f.severity, f.severity)} {f.code} {f.name} ({f.family}){conf}"
    out = [head, f"  {f.message}", f"  at {f.location.text()}"]
    if f.confidence != "certain":
        out.append(f"  confidence: {_CONF_TEXT.get(f.confidence, f.confidence)}")
    for note in f.extra.get("inferred", ()):
        out.append(f"  inferred from the trace (the manifest does not say): {note}")
    missing = f.extra.get("causes_not_reported")
    if missing:
        out.append(f"  its named cause was not reported (rule not selected, or it found nothing): "
                   f"{'; '.join(missing)}")
    if f.extra.get("cycle"):
        out.append(f"  deadlock: a cycle of waits with no cause outside it: {', '.join(f.extra['cycle'])}")
    if f.evidence:
        out.append("  evidence:")
        for e in f.evidence[:_MAX_EVIDENCE]:
            src = f" ({e.source})" if e.source else ""
            out.append(f"    - {e.text()}{src}")
        if len(f.evidence) > _MAX_EVIDENCE:
            out.append(f"    - ... and {len(f.evidence) - _MAX_EVIDENCE} more events (see --format json)")
    return out


_CONF_TEXT = {
    "inferred": "inferred from the protocol and routes, not proven by one event",
    "partial-trace": "events are missing where it matters (ring wrap or a missing rank dump)",
}


def _symptoms(symptoms: list[str], report: "Report", paint: _Paint) -> list[str]:
    """The symptoms (ids) a root class explains, one group per defect class, STAT-style; counted
    whether the report lists them or not, shown by the ones it lists."""
    if not symptoms:
        return []
    groups: dict[str, list[str]] = {}
    for s in symptoms:
        groups.setdefault(report.class_of_id(s).id, []).append(s)
    out = [f"  explains {plural(len(symptoms), 'symptom')}:"]
    ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), int(kv[0][1:] or 0)))
    if len(ordered) > _MAX_GROUPS:
        rest = ordered[_MAX_GROUPS:]
        ordered = ordered[:_MAX_GROUPS]
    else:
        rest = []
    for cid, ids in ordered:
        shown = report.listed(ids)
        if not shown:  # none of them listed (their class is cut): the class says what they are
            c = report.class_of_id(ids[0])
            out.append(f"    - {len(ids)} x {c.code} {c.name} ({cid}): {c.shape}")
            out.append("      " + paint(f"ids: {_ids(ids)}", "dim"))
            continue
        rep = shown[0]
        rank_set = {m.location.rank for m in shown if m.location.rank is not None}
        where = f" on {'rank' if len(rank_set) == 1 else 'ranks'} {compress_ranks(rank_set)}" if rank_set else ""
        out.append(f"    - {len(ids)} x {rep.code} {rep.name}{where} ({cid}): {_class_text(rep, _class_of(rep))}")
        out.append(f"      e.g. {rep.id} at {rep.location.place()}: {rep.message}")
        out.append("      " + paint(f"ids: {_ids(ids)}", "dim"))
    if rest:
        out.append(f"    - ... and {plural(sum(len(ms) for _, ms in rest), 'more symptom')} in "
                   f"{plural(len(rest), 'more class', 'more classes')}: {_ids(cid for cid, _ in rest)}")
    return out


def _class_of(f: "Finding") -> Any:
    """The symptom's equivalence class: the rule's extra['class'] (site, region, cmp, target) if it gives one."""
    cls = f.extra.get("class")
    if cls is not None:
        return tuple(cls) if isinstance(cls, (list, tuple)) else cls
    loc = f.location
    return (loc.site, loc.region)


def _class_text(f: "Finding", cls: Any) -> str:
    if isinstance(cls, tuple) and len(cls) == 4:
        site, region, cmp, target = cls
        src = f" ({f.location.source})" if f.location.source and f.location.site == site else ""
        at = "" if site is None else f" at site {site}{src}"
        if cmp in _CMPS:
            return f"wait{at} on {region} until {cmp} {target}"
        return f"{region}{at}, {cmp} {target}"  # e.g. a barrier: (site, 'barrier', scope, instance)
    if isinstance(cls, tuple) and len(cls) == 2:
        site, region = cls
        parts = [f"site {site}" + (f" ({f.location.source})" if f.location.source else "")] if site is not None \
            else []
        parts += [f"region {region}"] if region is not None else []
        return ", ".join(parts) or f.location.text()
    return str(cls)


def _ids(ids: Iterable[str]) -> str:
    ids = list(ids)
    if len(ids) <= _MAX_IDS:
        return ", ".join(ids)
    return ", ".join(ids[:_MAX_IDS]) + f", ... ({len(ids) - _MAX_IDS} more)"


def _summary(report: "Report", fail_on: str) -> str:
    """The verdict; its root causes are the JSON report's (``root_cause``: no cause)."""
    c = report.counts()
    if not c["findings"]:
        verdict = "clean"
    else:
        sev = ", ".join(plural(n, k) for k, n in c["by_severity"].items() if n)
        verdict = (f"{plural(c['findings'], 'finding')} in {plural(c['classes'], 'class', 'classes')} ({sev}): "
                   f"{plural(c['root_causes'], 'root cause')} ({plural(c['root_classes'], 'class', 'classes')}) "
                   f"explaining {plural(c['symptoms'], 'symptom')}")
    failing = report.failing_count(fail_on)
    gate = "never fails" if fail_on == "never" else f"{failing} at or above {fail_on}"
    partial = ", partial trace" if report.trace.partial else ""
    listed = "" if report.complete else f" ({c['listed']:,} listed, at most {report.config.max_findings} a class)"
    return f"summary: {verdict}{listed}{partial}; fail-on {fail_on}: {gate}, exit {1 if failing else 0}"
