"""Small formatting helpers shared by the reporters."""

from __future__ import annotations

import textwrap
from typing import Any, Iterable


def compress_ranks(ranks: Iterable[int]) -> str:
    """0,1,2,3,5,7,8 -> '0-3,5,7-8': a rank list a person can read at 4096 ranks."""
    vals = sorted(set(int(r) for r in ranks))
    if not vals:
        return ""
    out = []
    start = prev = vals[0]
    for v in vals[1:] + [None]:
        if v is not None and v == prev + 1:
            prev = v
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if v is not None:
            start = prev = v
    return ",".join(out)


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def doc_sections(rule: Any) -> dict[str, str]:
    """A rule's docstring sections, each dedented (the bodies sit indented under their headings)."""
    return {name: textwrap.dedent(body).strip() for name, body in rule.doc_sections().items()}
