"""MT202's causes: what else left a flag off its reset value (a put a flag overtook, a stale count).

Kept beside the rule so it stays readable: each names the hit a group of unreset words is the
symptom of, so one defect is one root. Both work on all of the rule's groups at once, from the
distinct (group, last write) pairs of their words.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Role

from .analysis import HappensBefore
from .analysis import codes as C


def late_puts(trace, order: HappensBefore, group: np.ndarray, written: np.ndarray, count: int) -> list[tuple]:
    """Per group 0 .. count - 1: its (MT401, key) causes when every word's last write is a put a flag
    write overtook, else ().

    Such a put can land after the owner consumed the slots and reset those it saw: the word is
    left set by the producer's missing drain, not by a missing reset. One word written by
    anything else keeps the group a root. ``group`` and ``written``: the distinct (group, last
    write row) pairs, by group and then row.
    """
    out: list[tuple] = [()] * count
    if not len(written):
        return out
    put = trace["kind"][written] == C.K_PUT
    if not put.any():
        return out
    flags = order.put_flag()[written]
    late = put & (flags >= 0)
    every = np.bincount(group, weights=~late, minlength=count) == 0  # no word of it written otherwise
    if not every.any():
        return out
    u = order.unfenced()
    keys: dict[int, tuple | None] = {}
    for g in np.flatnonzero(every).tolist():
        lo, hi = np.searchsorted(group, [g, g + 1])
        named = [keys[f] if f in keys else keys.setdefault(f, u.key_of_flag(trace, f))
                 for f in np.unique(flags[lo:hi]).tolist()]
        if all(k is not None for k in named):
            out[g] = tuple(("MT401", k) for k in dict.fromkeys(named))
    return out


def stale_counts(trace, owner: np.ndarray, region: np.ndarray, launch: np.ndarray, waited: np.ndarray,
                 caused: list[tuple]) -> list[int | None]:
    """Per group, the group of a counter left off reset the launch before by its owner, when that
    stale count left this one behind; else None.

    An owner that read last launch's count (a counter word it did not reset, another group of
    this rule in the launch before) takes the wrong number of rows: the flags of rows it never
    took stay set. Such a group, whose words the owner never waited on (``waited`` False) and
    that no late put explains (``caused`` empty), is that count's symptom: one defect, the
    counter's reset, not a second one at every flag it left behind.
    """
    counter = np.array([r.role == Role.COUNTER for r in trace.manifest.regions] or [False])[region]
    counters = {(o, L): g for g, (o, L) in enumerate(zip(owner.tolist(), launch.tolist())) if counter[g]}
    out: list[int | None] = [None] * len(owner)
    if not counters:
        return out
    for g, (o, L) in enumerate(zip(owner.tolist(), launch.tolist())):
        if not (counter[g] or waited[g] or caused[g]):
            out[g] = counters.get((o, L - 1))
    return out
