"""Drafts made by hand (analyzer.draft): a registered rule's hit at a place, for the root decision
and the classes without a trace."""

from __future__ import annotations

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
