"""``moetrace timeline``: a trace as Chrome JSON trace events, for Perfetto UI and chrome://tracing.

A process per rank, a thread per core, slices for kernels, waits and
barriers, instants for everything else (``_draw``); arrows from each write to
the wait_end it released and from each root cause to its symptoms
(``_flows``); each rank's clock placed by an offset (``_clock``), stated in
the file's ``otherData.clock`` and in each process's labels.  docs/timeline.md
describes the file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterable

import numpy as np

from ..output import write_output
from ._clock import place
from ._draw import draw
from ._flows import add_flows, cause_pairs, release_pairs, row_of

FORMAT = "moetrace-timeline/1"


def build(dataset: Path, *, launch: int | None = None, ranks: Iterable[int] | None = None,
          causes: bool = True, config=None) -> dict:
    """The timeline document of a dataset, cut to ``launch`` and ``ranks`` where given.

    ``causes`` runs the diagnosis (``config`` selects its rules) for the
    root-cause arrows and marks; raises ``TraceError`` on a cut that draws nothing.
    """
    from ingest.dataset import Dataset
    from ingest.errors import TraceError
    from rules.trace import TraceView

    ds = Dataset(dataset)
    trace = TraceView(ds, blocks=_blocks_of(ds, launch))
    trace.prefetch()
    keep = np.ones(trace.n, bool)
    if launch is not None:
        keep &= trace["launch"] == launch
    wanted = None if ranks is None else sorted(set(int(r) for r in ranks))
    if wanted is not None:
        keep &= np.isin(trace["rank"], wanted)
    rows = np.flatnonzero(keep)
    if not len(rows):
        cut = [f"launch {launch}"] if launch is not None else []
        cut += [f"ranks {','.join(map(str, wanted))}"] if wanted is not None else []
        raise TraceError(dataset, "", f"no events to draw ({' and '.join(cut) or 'empty trace'})")
    rank = trace["rank"][rows]
    placement = place(rank, trace["ts"][rows], trace["kind"][rows], trace["scope"][rows], trace["launch"][rows])
    shift = np.zeros(int(rank.max()) + 1, np.int64)
    for r, s in placement.shift.items():
        shift[r] = s
    ts = trace["ts"][rows].astype(np.int64) + shift[rank.astype(np.int64)]
    d = draw(trace, rows, ts)
    rk, co, sq = trace["rank"], trace["core"], trace["seq"]

    def place_of(row: int) -> str:  # an end cut away by --ranks / --launch, as the user can find it
        return f"rank {int(rk[row])} core {int(co[row])} seq {int(sq[row])}"

    released = add_flows(d, release_pairs(trace, rows), "released", place_of)
    explained = {"drawn": 0, "approximate": 0, "offscreen": 0}
    findings = []
    if causes:
        from analyzer.engine import diagnose

        report = diagnose([dataset], config)
        find = row_of(trace)
        explained = add_flows(d, cause_pairs(report, find), "explains", place_of)
        findings = _mark(d, report, find)
    meta = _metadata(ds, placement, rank, d)
    other = {"format": FORMAT, "dataset": str(dataset), "launch": launch, "ranks": wanted,
             "clock": placement.to_json(), "events": int(len(rows)), "stuck": len(d.stuck),
             "flows": {"released": released, "explains": explained}, "findings": findings}
    return {"traceEvents": meta + d.events + d.flows, "displayTimeUnit": "ns", "otherData": other}


def _blocks_of(ds, launch: int | None):
    """The window of the dataset's blocks that holds ``launch`` (all of it where there are no blocks)."""
    if launch is None or not ds.blocks:
        return None
    for k, b in enumerate(ds.blocks):
        if b.launch_lo <= launch <= b.launch_hi:
            return (k, k + 1)
    return None


def _mark(d, report, find) -> list[dict]:
    """Name each finding on its first evidence event's drawn slice; the list for otherData."""
    out = []
    for f in report.findings:
        row = find(f.evidence[0].rank, f.evidence[0].core, f.evidence[0].seq) if f.evidence else None
        ev = None if row is None else d.anchor.get(row)
        entry = {"id": f.id, "code": f.code, "severity": f.severity, "root": f.is_root, "message": f.message,
                 "drawn": ev is not None}
        out.append(entry)
        if ev is not None:
            ev["args"].setdefault("findings", []).append(f"{f.id} {f.code} {f.severity}: {f.message}")
            if f.is_root and f.explains:
                ev["name"] = f"ROOT CAUSE {f.code}: {ev['name']}"
                ev["cname"] = "yellow"
    return out


def _metadata(ds, placement, rank: np.ndarray, d) -> list[dict]:
    out = []
    cores: dict[int, set[int]] = {}
    for ev in d.events:
        cores.setdefault(ev["pid"], set()).add(ev["tid"])
    for r in sorted(cores):
        how = ("aligned on the first cross-rank barrier" if placement.method[r] == "barrier"
               else "from its own first event")
        out.append({"ph": "M", "name": "process_name", "pid": r, "args": {"name": f"rank {r}"}})
        out.append({"ph": "M", "name": "process_sort_index", "pid": r, "args": {"sort_index": r}})
        out.append({"ph": "M", "name": "process_labels", "pid": r,
                    "args": {"labels": f"clock {how}, shift {placement.shift[r]:+d} cycles"}})
        for c in sorted(cores[r]):
            out.append({"ph": "M", "name": "thread_name", "pid": r, "tid": c, "args": {"name": f"core {c}"}})
            out.append({"ph": "M", "name": "thread_sort_index", "pid": r, "tid": c, "args": {"sort_index": c}})
    return out


def write(doc: dict, path: Path) -> None:
    """Write the document to ``path`` (``analyzer.output``): a reader never sees half a timeline."""
    def dump(target: Path) -> None:
        with open(target, "w") as fh:
            json.dump(doc, fh, separators=(",", ":"))
    write_output(path, dump)
