"""The HTML report: one self-contained page (no script, no network, styles inline) for a person to read.

Layout: the summary; ROOT CAUSES first, each with its evidence and its
symptom chain drawn as a wait-for graph (``_html_graph``); where each core
stopped (a strip per rank); per launch, a src x dst heatmap of rows
announced (count events) vs delivered (deliver events); then every finding
with its evidence.  Roots and the summary line are the text report's, so the
two outputs agree.  The strip and the heatmap come from the trace
(``_html_facts.gather``); without them those sections say so.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from ._fmt import compress_ranks, plural
from ._html_facts import BARRIER, DONE, WAIT, Facts
from ._html_graph import graph
from ._html_style import STYLE

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.engine import Report
    from analyzer.finding import Finding

MAX_FINDINGS = 500  # findings drawn in full; the JSON report has all of them
MAX_EVIDENCE = 40
MAX_HEATMAPS = 12
_NUMBERS_UP_TO = 16  # ranks: above this a heatmap cell is colour and tooltip only


def render(report: "Report", *, fail_on: str | None = None, color: bool = False,
           facts: Facts | None = None) -> str:
    from .json import tool_info
    from .text import _summary

    fail_on = fail_on or report.config.fail_on
    roots = report.roots  # the JSON report's root causes, as the text report lists them
    t = report.trace
    failing = report.failing_count(fail_on) > 0
    total = report.counts()["findings"]
    body = [f'<header><h1>moetrace diagnose</h1><p class="inputs">{escape(", ".join(t.inputs))}</p>',
            f'<p>protocol {escape(t.protocol or "?")}, {plural(t.ranks, "rank")} x {plural(t.cores, "core")}, '
            f'{t.events:,} events, {plural(len(report.rules), "rule")} run</p>']
    if t.partial:
        body.append('<p class="partial"><b>PARTIAL TRACE</b>: findings that depend on the missing events are '
                    'marked partial-trace<br>' + "<br>".join(escape(g) for g in t.gap_lines()) + "</p>")
    else:
        body.append("<p>complete trace: no events lost, every rank present</p>")
    body.append(f'<p class="verdict {"fail" if failing else "pass"}">'
                f'{escape(_summary(report, fail_on))}</p></header>')
    body.append(f'<section id="roots"><h2>Root causes ({len(roots)})</h2>')
    if not roots:
        body.append('<p class="none">No root cause: no findings.</p>')
    for f in roots[:MAX_FINDINGS]:
        body.append(_root(f, report))
    if len(roots) > MAX_FINDINGS:
        body.append(f'<p class="none">... and {len(roots) - MAX_FINDINGS:,} more root causes '
                    f'(moetrace diagnose --format json lists them).</p>')
    body.append("</section>")
    body.append(f'<div class="panels">{_stops(facts)}{_heatmaps(facts)}</div>')
    body.append(f'<section id="findings"><h2>All findings ({total:,})</h2>')
    for f in report.findings[:MAX_FINDINGS]:
        body.append(_finding(f))
    if total > min(MAX_FINDINGS, len(report.findings)):
        body.append(f'<p class="none">... and {total - min(MAX_FINDINGS, len(report.findings)):,} more findings '
                    f'(moetrace diagnose --format json lists up to --max-findings of each class).</p>')
    body.append("</section>")
    tool = tool_info()
    body.append(f'<footer>{escape(tool["name"])} {escape(tool["version"])}</footer>')
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>moetrace: {escape(_title(report, roots))}</title><style>{STYLE}</style></head>"
            f"<body>{''.join(body)}</body></html>\n")


def _title(report: "Report", roots: list["Finding"]) -> str:
    if not report.findings:
        return "clean"
    return f"{plural(len(roots), 'root cause')}, {plural(report.counts()['findings'], 'finding')}"


def _head(f: "Finding") -> str:
    conf = "" if f.confidence == "certain" else f' <span class="conf">{escape(f.confidence)}</span>'
    return (f'<span class="fid">{escape(f.id)}</span> <span class="sev {escape(f.severity)}">'
            f'{escape(f.severity)}</span> <span class="code">{escape(f.code)}</span> {escape(f.name)} '
            f'<span class="family">({escape(f.family)})</span>{conf}')


def _root(f: "Finding", report: "Report") -> str:
    out = [f'<article class="root" id="root-{escape(f.id)}"><h3>{_head(f)}</h3>',
           f'<p class="message">{escape(f.message)}</p>', f'<p class="at">at {escape(f.location.text())}</p>',
           _evidence(f)]
    if f.explains:
        out.append(f'<h4>explains {plural(len(f.explains), "symptom")}: the wait-for graph</h4>'
                   '<p class="legend">an arrow runs from a symptom to what it waits for</p>')
        out.append(f'<div class="graph-box">{graph(f, report.listed(f.explains))}</div>')
        out.append(_symptom_list(f, report))
    out.append("</article>")
    return "".join(out)


def _symptom_list(root: "Finding", report: "Report") -> str:
    """One line per symptom class, as the text report groups them, each linking to its listed findings."""
    from .text import _class_of, _class_text

    groups: dict = {}
    for sid in root.explains:
        c = report.class_of_id(sid)
        groups.setdefault((c.code, c.id), []).append(sid)
    items = []
    for (code, cid), ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        members = report.listed(ids)
        shown = ", ".join(f'<a href="#{escape(m.id)}">{escape(m.id)}</a>' for m in members[:8])
        more = f" ... ({len(ids) - min(8, len(members))} more)" if len(ids) > min(8, len(members)) else ""
        if not members:  # none listed (--max-findings): the class says what they are
            c = report.class_of_id(ids[0])
            items.append(f"<li><b>{len(ids)} x {escape(code)} {escape(c.name)}</b> ({escape(cid)}): "
                         f"{escape(c.shape)}<br><span class=\"ids\">{escape(', '.join(ids[:8]))}{more}</span></li>")
            continue
        rep = members[0]
        ranks = {m.location.rank for m in members if m.location.rank is not None}
        where = f" on {'rank' if len(ranks) == 1 else 'ranks'} {compress_ranks(ranks)}" if ranks else ""
        items.append(f"<li><b>{len(ids)} x {escape(code)} {escape(rep.name)}</b>{escape(where)}: "
                     f"{escape(_class_text(rep, _class_of(rep)))}<br><span class=\"eg\">e.g. {escape(rep.message)}"
                     f"</span><br><span class=\"ids\">{shown}{more}</span></li>")
    return f'<ul class="symptoms">{"".join(items)}</ul>'


def _evidence(f: "Finding") -> str:
    if not f.evidence:
        return ""
    rows = []
    for e in f.evidence[:MAX_EVIDENCE]:
        vals = " ".join(f"{k}={v}" for k, v in e.values.items() if k not in ("ts", "site"))
        rows.append(f"<tr><td>{escape(e.role)}</td><td>{escape(e.kind)}</td><td>{e.rank}</td><td>{e.core}</td>"
                    f"<td>{e.seq}</td><td class=\"vals\">{escape(vals)}</td><td>{escape(e.source or '')}</td></tr>")
    more = (f'<tr><td colspan="7">... and {len(f.evidence) - MAX_EVIDENCE} more events</td></tr>'
            if len(f.evidence) > MAX_EVIDENCE else "")
    return ('<table class="evidence"><thead><tr><th>role</th><th>kind</th><th>rank</th><th>core</th><th>seq</th>'
            f'<th>values</th><th>source</th></tr></thead><tbody>{"".join(rows)}{more}</tbody></table>')


def _finding(f: "Finding") -> str:
    links = []
    if f.caused_by:
        links.append("caused by " + ", ".join(f'<a href="#{escape(c)}">{escape(c)}</a>' for c in f.caused_by))
    if f.explains:
        shown = f.explains[:12]
        more = f" ... ({len(f.explains) - 12} more)" if len(f.explains) > 12 else ""
        links.append("explains " + ", ".join(f'<a href="#{escape(c)}">{escape(c)}</a>' for c in shown) + more)
    missing = f.extra.get("causes_not_reported")
    if missing:
        links.append("its named cause was not reported: " + escape("; ".join(missing)))
    return (f'<details class="finding {escape(f.severity)}" id="{escape(f.id)}"{" open" if f.is_root else ""}>'
            f'<summary>{_head(f)} <span class="msg">{escape(f.message)}</span></summary>'
            f'<p class="at">at {escape(f.location.text())}</p>'
            + (f'<p class="links">{"; ".join(links)}</p>' if links else "") + _evidence(f) + "</details>")


def _stops(facts: Facts | None) -> str:
    out = ['<section id="stops"><h2>Where each core stopped</h2>']
    if facts is None:
        return out[0] + '<p class="none">Not available: the report was rendered without its trace.</p></section>'
    out.append('<p class="legend"><span class="cell done"></span> finished <span class="cell wait"></span> '
               'stuck in a wait <span class="cell barrier"></span> stuck in a barrier '
               '<span class="cell other"></span> stopped elsewhere <span class="cell missing"></span> no events</p>')
    by_place = {(s.rank, s.core): s for s in facts.stops}
    out.append('<table class="strip"><thead><tr><th>core</th>'
               + "".join(f"<th>{c}</th>" for c in range(facts.cores)) + "</tr></thead>")
    for r in range(facts.ranks):
        cells = []
        for c in range(facts.cores):
            s = by_place.get((r, c))
            if s is None:
                why = "rank missing from the trace" if r in facts.ranks_missing else "no events"
                cells.append(f'<td class="cell missing" title="rank {r} core {c}: {why}"></td>')
                continue
            mark = {DONE: "", WAIT: "W", BARRIER: "B"}.get(s.state, "?")
            cells.append(f'<td class="cell {s.state}" title="{escape(s.text)}">{mark}</td>')
        out.append(f'<tr><th>rank {r}</th>{"".join(cells)}</tr>')
    out.append("</table>")
    stuck = [s for s in facts.stops if s.state != DONE]
    if stuck:
        out.append("<ul class=\"stuck\">" + "".join(f"<li>{escape(s.text)}</li>" for s in stuck[:40]) + "</ul>")
        if len(stuck) > 40:
            out.append(f'<p class="none">... and {len(stuck) - 40} more cores that did not finish</p>')
    return "".join(out) + "</section>"


def _heatmaps(facts: Facts | None) -> str:
    head = ('<section id="heat"><h2>Rows announced vs delivered</h2>'
            '<p class="legend">per launch, sender (rows) x receiver (columns): rows the sender announced '
            '(count events) / rows the receiver took (deliver events); '
            '<span class="cell eq"></span> equal <span class="cell short"></span> fewer delivered '
            '<span class="cell over"></span> more delivered <span class="cell none"></span> neither</p>')
    if facts is None:
        return head + '<p class="none">Not available: the report was rendered without its trace.</p></section>'
    if not facts.heat:
        return head + '<p class="none">The trace has no count or deliver events.</p></section>'
    ordered = sorted(facts.heat, key=lambda h: (h.mismatches == 0, h.launch))[:MAX_HEATMAPS]
    out = [head]
    for h in sorted(ordered, key=lambda h: h.launch):
        out.append(f'<div class="heat"><h4>launch {h.launch}: '
                   f'{_differ(h.mismatches)}</h4>{_grid(h, facts.ranks)}'
                   "</div>")
    if len(facts.heat) > MAX_HEATMAPS:
        out.append(f'<p class="none">{len(facts.heat) - MAX_HEATMAPS} more launches not drawn (those with '
                   f'differences come first).</p>')
    return "".join(out) + "</section>"


def _differ(n: int) -> str:
    return "every pair delivered what it announced" if n == 0 else \
        f"{plural(n, 'pair')} where delivered differs from announced"


def _grid(h, ranks: int) -> str:
    numbers = ranks <= _NUMBERS_UP_TO
    head = "".join(f"<th>{d}</th>" for d in range(ranks))
    rows = []
    for s in range(ranks):
        cells = []
        for d in range(ranks):
            a, got = h.announced.get((s, d)), h.delivered.get((s, d))
            if a is None and got is None:
                cls = "none"
            elif a == got:
                cls = "eq"
            elif got is None or (a is not None and got < a):
                cls = "short"
            else:
                cls = "over"
            txt = f"{'-' if a is None else a}/{'-' if got is None else got}"
            tip = (f"rank {s} -> rank {d}: announced {'none' if a is None else a}, delivered "
                   f"{'none' if got is None else got}")
            req = h.requested.get((s, d))
            if req is not None and req != a:  # the receiver read another count than the sender sent
                tip += f" (the receiver's deliver says {req} requested)"
            cells.append(f'<td class="cell {cls}" title="{escape(tip)}">{txt if numbers and cls != "none" else ""}</td>')
        rows.append(f"<tr><th>{s}</th>{''.join(cells)}</tr>")
    return (f'<table class="grid{"" if numbers else " dense"}"><thead><tr><th>src\\dst</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>")


