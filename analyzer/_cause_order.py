"""The report order's tie-break between findings, as ranks: ints that ``analyzer.causes.link`` sorts by.

Two findings compare by severity, code, place (rank, core, launch), first seq,
key and message, in that order (``order_key``). A report can have a million
findings: one numpy sort of the integer fields orders nearly all of them, and
the key's text and the message are built and compared only where those tie.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .finding import jsonable, severity_rank

if TYPE_CHECKING:  # pragma: no cover
    from .draft import Draft


def order_key(d: "Draft", level: str, key: Any, message: str) -> tuple:
    """What orders two findings: severity, code, place, first seq, key, message."""
    return (-severity_rank(level), d.hit.code, d.order_place, (d.seq,), key_text(key), message)


def order_ranks(drafts: Sequence["Draft"], levels: Sequence[str], keys: Sequence[Any],
                message: Callable[[int], str]) -> list[int]:
    """Each draft's ``order_key`` as its rank among all of them (equal keys, equal ranks);
    ``message(i)`` is draft i's message as the report words it."""
    codes = {c: i for i, c in enumerate(sorted({d.hit.code for d in drafts}))}
    fields = np.empty((len(drafts), 6), np.int64)
    try:  # a column at a time: a tuple per draft cost more than the sort (10^6 drafts)
        severity = {level: -severity_rank(level) for level in set(levels)}
        fields[:, 0] = [severity[level] for level in levels]
        fields[:, 1] = [codes[d.hit.code] for d in drafts]
        places = [d.place for d in drafts]
        for at in range(3):  # rank, core, launch: order_place's, -1 where absent
            fields[:, 2 + at] = [-1 if p[at] is None else p[at] for p in places]
        fields[:, 5] = [d.seq for d in drafts]
    except (TypeError, ValueError, OverflowError):  # a place that is not an int: compare the keys whole
        full = [order_key(d, level, key, message(i)) for i, (d, level, key) in enumerate(zip(drafts, levels, keys))]
        ranked = sorted(range(len(full)), key=full.__getitem__)
        return _ranks(ranked, lambda a, b: full[a] == full[b], len(full))
    ranked = np.lexsort(fields.T[::-1]).tolist()  # stable: ties keep their draft order, as sorted() does
    ordered = fields[ranked]
    tied = np.flatnonzero((ordered[1:] == ordered[:-1]).all(axis=1)).tolist()
    rest: dict[int, tuple] = {}  # (key text, message) of the drafts in a tie
    at = 0
    while at < len(tied):  # each run of tied neighbours, sorted by the rest of the key
        lo = hi = tied[at]
        while at < len(tied) and tied[at] == hi:
            hi, at = hi + 1, at + 1
        run = ranked[lo:hi + 1]
        for i in run:
            rest[i] = (key_text(keys[i]), message(i))
        ranked[lo:hi + 1] = sorted(run, key=rest.__getitem__)
    return _ranks(ranked, lambda a, b: a in rest and b in rest and rest[a] == rest[b]
                  and (fields[a] == fields[b]).all(), len(ranked))


def _ranks(ranked: list[int], same: Callable[[int, int], bool], n: int) -> list[int]:
    """Rank by position in ``ranked`` (sorted), one rank for neighbours that ``same`` says are equal."""
    out = [0] * n
    for p, i in enumerate(ranked):
        out[i] = out[ranked[p - 1]] if p and same(ranked[p - 1], i) else p
    return out


def key_text(key: Any) -> str:
    """``json.dumps(jsonable(key))``, the order's tie-break; most keys are tuples of plain ints
    (rank, core, seq), written here without the encoder (a report may have 10^6 findings)."""
    if type(key) is tuple:
        for v in key:
            if type(v) is not int:
                break
        else:
            return "[" + ", ".join(map(int.__repr__, key)) + "]"
    return json.dumps(jsonable(key))
