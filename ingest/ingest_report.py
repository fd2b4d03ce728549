"""The ingest report (``ingest.json`` in a dataset): what each source contributed, what each
(rank, core) holds and lost, the ranks missing, and the trace's blocks of whole launches.

``ingest.writer`` fills it as it writes a dataset; ``ingest.dataset`` reads it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .contract import DATASET_FORMAT


@dataclass
class SourceReport:
    """What one input contributed. Invariant: events_in == rows_out + lost."""

    path: str
    format: str
    events_in: int = 0
    rows_out: int = 0
    lost: int = 0  # records overwritten by ring wrap, known from the write counter
    where_unit: str = "line"  # how _pos is reported in errors: 'line' or 'byte'

    def to_json(self) -> dict:
        return {"path": self.path, "format": self.format, "events_in": self.events_in,
                "rows_out": self.rows_out, "lost": self.lost}


@dataclass
class CoreReport:
    rank: int
    core: int
    rows: int = 0
    lost: int = 0
    first_seq: int | None = None
    last_seq: int | None = None

    @property
    def missing(self) -> int:
        """Events of this core the trace does not hold: those the ring overwrote, or, for any
        source, the seq numbers before its first event (a core's seq counts from 0, so a first
        seq above 0 is a cut prefix, as in a JSON-lines file cut at its start)."""
        return max(self.lost, self.first_seq or 0)

    def to_json(self) -> dict:
        return {"rank": self.rank, "core": self.core, "rows": self.rows, "lost": self.lost,
                "first_seq": self.first_seq, "last_seq": self.last_seq}


@dataclass(frozen=True)
class Block:
    """Launches [launch_lo, launch_hi] (inclusive) of every rank: ``events`` rows in all."""

    launch_lo: int
    launch_hi: int
    events: int

    def to_json(self) -> dict:
        return {"launch_lo": self.launch_lo, "launch_hi": self.launch_hi, "events": self.events}


@dataclass
class IngestReport:
    sources: list[SourceReport] = field(default_factory=list)
    cores: list[CoreReport] = field(default_factory=list)
    ranks_missing: list[int] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)  # ascending launches; empty: one block, all

    @property
    def events_in(self) -> int:
        return sum(s.events_in for s in self.sources)

    @property
    def rows_out(self) -> int:
        return sum(s.rows_out for s in self.sources)

    @property
    def lost(self) -> int:
        return sum(s.lost for s in self.sources)

    def to_json(self) -> dict:
        return {"format": DATASET_FORMAT, "events_in": self.events_in, "rows_out": self.rows_out,
                "lost": self.lost, "ranks_missing": self.ranks_missing,
                "sources": [s.to_json() for s in self.sources],
                "cores": [c.to_json() for c in self.cores],
                "blocks": [b.to_json() for b in self.blocks]}

    @classmethod
    def from_json(cls, doc: dict) -> "IngestReport":
        rep = cls(ranks_missing=list(doc.get("ranks_missing", [])))
        for s in doc.get("sources", []):
            rep.sources.append(SourceReport(s["path"], s["format"], s["events_in"], s["rows_out"], s["lost"]))
        for c in doc.get("cores", []):
            rep.cores.append(CoreReport(c["rank"], c["core"], c["rows"], c["lost"], c["first_seq"], c["last_seq"]))
        for b in doc.get("blocks", []):
            rep.blocks.append(Block(int(b["launch_lo"]), int(b["launch_hi"]), int(b["events"])))
        return rep
