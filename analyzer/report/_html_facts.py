"""What the HTML report shows beyond the findings, read from the dataset through the SQL views.

The reporters are pure functions of a Report; the heatmap of rows announced
vs delivered and the strip of where each core stopped need the trace, so the
diagnose command gathers them here (while the dataset exists) and hands them
to ``analyzer.report.html``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

# The state a core stopped in, from its last event (and the waits view for a wait that never ended).
DONE, WAIT, BARRIER, OTHER = "done", "wait", "barrier", "other"


@dataclass(frozen=True)
class CoreStop:
    rank: int
    core: int
    state: str
    kind: str
    launch: int
    seq: int
    events: int
    text: str  # the last event in words


@dataclass(frozen=True)
class Heat:
    """One launch: per (src, dst) rows announced (count events) and requested / delivered (deliver events)."""

    launch: int
    announced: dict[tuple[int, int], int] = field(default_factory=dict)
    delivered: dict[tuple[int, int], int] = field(default_factory=dict)
    requested: dict[tuple[int, int], int] = field(default_factory=dict)

    @property
    def mismatches(self) -> int:
        keys = set(self.announced) | set(self.delivered)
        return sum(1 for k in keys if self.announced.get(k) != self.delivered.get(k))


@dataclass(frozen=True)
class Facts:
    ranks: int
    cores: int
    ranks_missing: tuple[int, ...]
    stops: tuple[CoreStop, ...]
    heat: tuple[Heat, ...]


def gather(dataset: Path) -> Facts:
    from ingest.dataset import Dataset
    from rules.views import connect

    ds = Dataset(dataset)
    con = connect(ds)
    try:
        heat: dict[int, Heat] = {}
        for launch, src, dst, rows in con.sql(
                "SELECT launch, rank, peer, sum(value) FROM events WHERE kind = 'count' GROUP BY ALL").fetchall():
            heat.setdefault(launch, Heat(launch)).announced[(src, dst)] = int(rows)
        for launch, src, dst, req, got in con.sql(
                "SELECT launch, src_rank, rank, sum(requested), sum(delivered) FROM events "
                "WHERE kind = 'deliver' GROUP BY ALL").fetchall():
            h = heat.setdefault(launch, Heat(launch))
            h.requested[(src, dst)], h.delivered[(src, dst)] = int(req), int(got)
        stops = []
        rows = con.sql("""
            SELECT l.rank, l.core, l.kind, l.launch, l.seq, l.events, l.region, l."offset", l.cmp, l.value,
                   l.scope, l.name, l.site_text
            FROM last_event AS l ORDER BY l.rank, l.core""").fetchall()
        for rank, core, kind, launch, seq, events, region, offset, cmp, value, scope, name, site in rows:
            state = {"kernel_end": DONE, "wait_begin": WAIT, "barrier_begin": BARRIER}.get(kind, OTHER)
            if state == WAIT:
                text = f"waiting on {region}[{offset}] until {cmp} {value}"
            elif state == BARRIER:
                text = f"in a barrier (scope {scope})"
            elif state == DONE:
                text = f"finished {name or 'its kernel'}"
            else:
                text = f"stopped after {kind}"
            where = f" at {site}" if site else ""
            stops.append(CoreStop(rank, core, state, kind, launch, seq, events,
                                  f"rank {rank} core {core}: {text}{where} (launch {launch}, seq {seq}, "
                                  f"{events:,} events)"))
    finally:
        con.close()
    m = ds.manifest
    return Facts(m.ranks, m.cores, tuple(ds.report.ranks_missing), tuple(stops),
                 tuple(heat[k] for k in sorted(heat)))
