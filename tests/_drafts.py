"""Drafts made by hand (analyzer.draft): a registered rule's hit at a place, for the root decision
and the classes without a trace."""

from __future__ import annotations

import json
from itertools import chain

import numpy as np

from analyzer.causes import Linked, link
from analyzer.classes import sample
from analyzer.draft import Draft
from rules.base import Hit


def draft(code: str, rank: int, core: int | None, severity: str = "error", key: tuple | None = None,
          message: str | None = None, causes=(), **fields) -> Draft:
    """Rule ``code``'s hit at (rank, core) (a made-up rule of that code where none is registered); ``fields``: the Hit's gap / blocks / stalls / defect, or a
    place field (launch, region, offset, site, source)."""
    from rules import registry

    rule = registry().get(code) or type(f"Rule{code}", (), {"code": code, "name": code.lower()})
    family = rule.family.value if hasattr(rule, "family") else "hang"
    place = tuple(fields.pop(k, None) for k in ("launch", "region", "offset", "site", "source"))
    hit = Hit(code=code, message=message or f"{code} at rank {rank}",
              key=key or (rank, core if core is not None else 0, 0), caused_by=tuple(causes), **fields)
    return Draft(hit, rule, family, severity, (rank, core, *place))


def findings(linked: Linked) -> list:
    """Every linked draft as its finding, in report order (no evidence: no trace)."""
    return [linked.finding(n) for n in range(len(linked))]


def report(drafts: list[Draft], cap: int | None = None):
    """(the findings listed, the classes, the class index) of the drafts, as the engine builds them."""
    linked = link(drafts)
    return sample(linked, cap)


def csr(rows) -> tuple[np.ndarray, np.ndarray]:
    """Adjacency lists as the CSR graph ``analyzer._cause_graph`` walks: row v is
    ``targets[starts[v]:starts[v + 1]]``."""
    lengths = np.fromiter(map(len, rows), np.int64, len(rows))
    starts = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(lengths, out=starts[1:])
    return starts, np.fromiter(chain.from_iterable(rows), np.int64, int(starts[-1]))


def level(d: Draft) -> str:
    """(c) for one draft: its severity, a note where its evidence may lie in a gap of the trace."""
    return "note" if d.hit.gap else d.severity


def order_key(d: Draft, level: str, key, message: str) -> tuple:
    """The report order, spelled out as one tuple per finding (``analyzer._cause_order``'s docstring):
    severity, code, place (rank, core, launch; -1 where absent), first seq, key text, message."""
    from analyzer.finding import jsonable, severity_rank

    place = tuple(-1 if v is None else v for v in d.place[:3])
    return (-severity_rank(level), d.hit.code, place, (d.seq,), json.dumps(jsonable(key)), message)
