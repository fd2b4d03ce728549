"""The text report, for a person at 3am: root causes first, symptoms grouped under them.

Layout: a header (what was read, and what is missing from it), then ROOT
CAUSES (findings with no cause that explain symptoms, and every error with
no cause), each with its place, kernel source line, confidence, evidence and
the symptoms it explains grouped STAT-style (one line per class with a count
and a compressed rank list), then OTHER FINDINGS (warnings and notes that
explain nothing), then one summary line.  It must read without the docs, so
every value is named.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from ._fmt import compress_ranks, plural

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.engine import Report
    from analyzer.finding import Finding

_MAX_EVIDENCE = 8
_CMPS = ("eq", "ne", "gt", "ge", "lt", "le")
_MAX_IDS = 6
_COLORS = {"error": "31;1", "warning": "33;1", "note": "36", "head": "1", "dim": "2"}


class _Paint:
    def __init__(self, on: bool):
        self.on = on

    def __call__(self, text: str, style: str) -> str:
        return f"\033[{_COLORS[style]}m{text}\033[0m" if self.on else text


def render(report: "Report", *, fail_on: str | None = None, color: bool = False) -> str:
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
    roots = [f for f in report.findings if f.is_root and (f.explains or f.severity == "error")]
    shown = {f.id for f in roots}
    others = [f for f in report.findings if f.is_root and f.id not in shown]
    by_id = {f.id: f for f in report.findings}
    if roots:
        lines += ["", paint(f"ROOT CAUSES ({len(roots)})", "head")]
        for f in roots:
            lines += [""] + _finding(f, paint)
            lines += _symptoms(f, by_id, paint)
    if others:
        lines += ["", paint(f"OTHER FINDINGS ({len(others)})", "head")]
        for f in others:
            lines += [""] + _finding(f, paint)
    lines += ["", _summary(report, fail_on, roots, others)]
    return "\n".join(lines) + "\n"


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


def _symptoms(root: "Finding", by_id: dict[str, "Finding"], paint: _Paint) -> list[str]:
    if not root.explains:
        return []
    groups: dict[Any, list["Finding"]] = {}
    for sid in root.explains:
        s = by_id[sid]
        groups.setdefault((s.code, _class_of(s)), []).append(s)
    out = [f"  explains {plural(len(root.explains), 'symptom')}:"]
    for (code, cls), members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0][0], repr(kv[0][1]))):
        rep = members[0]
        rank_set = {m.location.rank for m in members if m.location.rank is not None}
        where = f" on {'rank' if len(rank_set) == 1 else 'ranks'} {compress_ranks(rank_set)}" if rank_set else ""
        out.append(f"    - {len(members)} x {code} {rep.name}{where}: {_class_text(rep, cls)}")
        out.append(f"      e.g. {rep.id} at {rep.location.place()}: {rep.message}")
        out.append("      " + paint(f"ids: {_ids(m.id for m in members)}", "dim"))
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


def _summary(report: "Report", fail_on: str, roots: list["Finding"], others: list["Finding"]) -> str:
    c = report.counts()
    if not c["findings"]:
        verdict = "clean"
    else:
        sev = ", ".join(plural(n, k) for k, n in c["by_severity"].items() if n)
        verdict = (f"{plural(c['findings'], 'finding')} ({sev}): {plural(len(roots), 'root cause')} "
                   f"explaining {plural(c['symptoms'], 'symptom')}, {len(others)} other")
    failing = len(report.failing(fail_on))
    gate = "never fails" if fail_on == "never" else f"{failing} at or above {fail_on}"
    partial = ", partial trace" if report.trace.partial else ""
    return f"summary: {verdict}{partial}; fail-on {fail_on}: {gate}, exit {1 if failing else 0}"
