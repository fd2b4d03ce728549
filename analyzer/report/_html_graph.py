"""A root cause and the symptoms it explains as a wait-for graph, drawn as inline SVG.

Nodes are the root and its symptoms grouped the way the text report groups
them (by defect class), so a hang of 64 ranks draws one node "63 x
MT101 on ranks 1-63", not 63 boxes.  Columns are distances from the root
along ``caused_by``; an arrow runs from a symptom to what it waits for (its
cause).  No script, no external resource: the picture is in the page.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, NamedTuple

from ._fmt import compress_ranks

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.finding import Finding

W, H, GAP_X, GAP_Y, PAD = 230, 54, 70, 14, 12
MAX_PER_COLUMN = 8


class _Node(NamedTuple):
    """A box of the graph: the findings of one defect class (analyzer.classes, as the text report
    groups symptoms) at one distance from the root. The root is the one node at depth 0. Every
    node id has these three typed fields, so node ids and the edges between them sort."""

    depth: int
    code: str
    defect_class: str


def _node(f: "Finding", depth: int) -> _Node:
    return _Node(depth, f.code, f.defect_class or "")


def graph(root: "Finding", symptoms: list["Finding"]) -> str:
    """The root and the listed findings among its symptoms as a layered graph, one node per class and distance."""
    members = [root, *symptoms]
    depth = {root.id: 0}
    changed = True
    while changed:  # shortest distance to the root along caused_by (the chains are short)
        changed = False
        for f in members[1:]:
            ds = [depth[c] + 1 for c in f.caused_by if c in depth]
            if ds and depth.get(f.id, 1 << 30) > min(ds):
                depth[f.id] = min(ds)
                changed = True
    groups: dict[_Node, list["Finding"]] = {}
    for f in members:
        # A symptom no caused_by chain reaches from the root (its cause was not reported) sits next to it.
        key = _node(f, 0 if f is root else depth.get(f.id, 1))
        groups.setdefault(key, []).append(f)
    node_of = {f.id: key for key, fs in groups.items() for f in fs}
    columns: dict[int, list[_Node]] = {}
    for key in groups:
        columns.setdefault(key.depth, []).append(key)
    hidden = 0
    for c, keys in columns.items():
        keys.sort(key=lambda k: -len(groups[k]))
        if len(keys) > MAX_PER_COLUMN:
            hidden += sum(len(groups[k]) for k in keys[MAX_PER_COLUMN:])
            del keys[MAX_PER_COLUMN:]
    pos = {}
    for c, keys in sorted(columns.items()):
        for i, key in enumerate(keys):
            pos[key] = (PAD + c * (W + GAP_X), PAD + i * (H + GAP_Y))
    edges = set()
    for f in members[1:]:
        for cause in f.caused_by:
            a, b = node_of.get(f.id), node_of.get(cause)
            if a in pos and b in pos and a != b:
                edges.add((a, b))
    width = PAD * 2 + (max(columns) + 1) * W + max(columns) * GAP_X
    rows = max(len(k) for k in columns.values())
    height = PAD * 2 + rows * H + (rows - 1) * GAP_Y + (24 if hidden else 0)
    out = [f'<svg class="graph" role="img" aria-label="wait-for graph of {escape(root.id)}" '
           f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
           '<defs><marker id="arrow-{0}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#5b6472"/></marker></defs>'
           .format(escape(root.id))]
    for a, b in sorted(edges):
        (xa, ya), (xb, yb) = pos[a], pos[b]
        x1, y1, x2, y2 = xa, ya + H / 2, xb + W, yb + H / 2
        mid = (x1 + x2) / 2
        out.append(f'<path d="M{x1},{y1} C{mid},{y1} {mid},{y2} {x2},{y2}" fill="none" stroke="#5b6472" '
                   f'stroke-width="1.6" marker-end="url(#arrow-{escape(root.id)})"/>')
    for key, (x, y) in pos.items():
        fs = groups[key]
        rep = fs[0]
        ranks = sorted({f.location.rank for f in fs if f.location.rank is not None})
        if key.depth == 0:
            title, sub, cls = f"{rep.id} {rep.code} {rep.name}", rep.location.place(), "root"
        else:
            n = f"{len(fs)} x " if len(fs) > 1 else f"{rep.id} "
            where = f"{'rank' if len(ranks) == 1 else 'ranks'} {compress_ranks(ranks)}" if ranks else "trace"
            title, sub, cls = f"{n}{rep.code} {rep.name}", f"{where}: {_what(rep)}", rep.severity
        tip = escape(f"{rep.id}: {rep.message}")
        out.append(f'<g class="node {cls}"><title>{tip}</title>'
                   f'<rect x="{x}" y="{y}" width="{W}" height="{H}" rx="7"/>'
                   f'<text x="{x + 10}" y="{y + 22}" class="t1">{escape(_fit(title, 30))}</text>'
                   f'<text x="{x + 10}" y="{y + 41}" class="t2">{escape(_fit(sub, 36))}</text></g>')
    if hidden:
        out.append(f'<text x="{PAD}" y="{height - 8}" class="t2">... and {hidden} more symptoms '
                   f'(listed below)</text>')
    out.append("</svg>")
    return "".join(out)


def _what(f: "Finding") -> str:
    """The symptom's class in a few words: the word it waits on, or its region."""
    from .text import _class_of

    cls = _class_of(f)
    if isinstance(cls, tuple) and len(cls) == 4:
        return f"{cls[1]} {cls[2]} {cls[3]}"
    loc = f.location
    return loc.region or loc.place()


def _fit(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "\u2026"
