"""The report order's tie-break between findings, as ranks: ints that ``analyzer.causes.link`` sorts by.

Two findings compare by severity (highest first), code, place (rank, core,
launch; -1 where absent), first seq, key (its JSON text, ``key_text``) and
message, in that order. A report can have a million
findings: one numpy sort of the integer fields orders nearly all of them, and
the key's text and the message are built and compared only where those tie.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from .draft_table import NULL
from .finding import jsonable

if TYPE_CHECKING:  # pragma: no cover
    from .draft_table import Drafts


def order_ranks(drafts: "Drafts", severity: np.ndarray, keys: Sequence[Any],
                message: Callable[[int], str]) -> np.ndarray:
    """Each draft's place in the order (the module docstring) as its rank (equal keys, equal ranks):
    ``severity`` is each draft's negated ``severity_rank``, ``message(i)`` draft i's message as the
    report words it. One sort of the integer fields; the key's text and the message only for ties."""
    n = len(drafts)
    code_rank = np.argsort(np.argsort(np.array(drafts.codes, dtype=object))) if drafts.codes else np.zeros(0, np.int64)
    fields = np.empty((n, 6), np.int64)
    fields[:, 0] = severity
    fields[:, 1] = code_rank[drafts.code] if n else 0
    for at in range(3):  # rank, core, launch, -1 where absent
        column = drafts.place[:, at]
        fields[:, 2 + at] = np.where(column == NULL, -1, column)
    fields[:, 5] = drafts.seq
    ranked = np.lexsort(fields.T[::-1])  # stable: ties keep their draft order, as sorted() does
    ordered = fields[ranked]
    same = np.zeros(n, bool)  # position p's draft equals position p - 1's
    same[1:] = (ordered[1:] == ordered[:-1]).all(axis=1)
    tied = np.flatnonzero(same).tolist()
    at = 0
    while at < len(tied):  # each run of tied neighbours, sorted by the rest of the key
        lo = hi = tied[at]
        while at < len(tied) and tied[at] == hi:
            hi, at = hi + 1, at + 1
        lo -= 1  # the run starts one before its first tie
        rest = {i: (key_text(keys[i]), message(i)) for i in ranked[lo:hi].tolist()}
        run = sorted(rest, key=rest.__getitem__)
        ranked[lo:hi] = run
        same[lo + 1:hi] = [rest[a] == rest[b] for a, b in zip(run, run[1:])]
    position = np.maximum.accumulate(np.where(same, 0, np.arange(n)))  # equal neighbours share a rank
    out = np.empty(n, np.int64)
    out[ranked] = position
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
