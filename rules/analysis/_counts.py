"""Counts stored raw where the protocol encodes them (-n-1, so that 0 means "not written yet").

DeepEP stores every token count a receiver polls as ``-n-1`` (intranode channel offsets, the
low-latency per-expert counts): the receiver spins while the word reads 0, so a real count of
0 must not be stored as 0. Told from the trace alone: a counter region some wait polls with
``!= 0`` is a "0 = not yet" word; a remote write of 0 into a word such a wait polls can never
release it (certain); a write of n >= 0 into a region whose other writes are all <= -1 (the
encoding in use) is a count stored raw (inferred: the encoding is read off the other writers).
Shared by MT106 (the hits) and the wait-for producers (a stuck wait cites MT106's hit on the
write it got).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.contract import Cmp, Op, Role

from . import codes as C
from ._cache import cached
from .stages import Stage


@dataclass(frozen=True)
class RawCounts:
    rows: np.ndarray  # the raw count writes, in row order
    never: np.ndarray  # per row: True where the written 0 is polled with != 0 (it can never release)
    encoded_by: dict  # region -> rows of its encoded writes (values <= -1), for the evidence


def raw_counts(trace) -> RawCounts:
    return cached(trace, "raw_counts", lambda: _find(trace), Stage.PRODUCERS)


def not_encoded(trace, row: int) -> bool:
    return bool(np.isin(row, raw_counts(trace).rows))


def _find(trace) -> RawCounts:
    """Grouped by poller: the words one core polls with != 0 in one launch are one set of counts
    (a receiver's per-source counts); a set some of whose writes are -1 or below is encoded, and
    its writes of n >= 0 are raw. A set written only with n >= 0 (flags set to 1) is no count."""
    empty = RawCounts(np.zeros(0, np.int64), np.zeros(0, bool), {})
    if trace.n == 0:
        return empty
    counters = [r.id for r in trace.manifest.regions if r.role == Role.COUNTER]
    if not counters:
        return empty
    kind, region = trace["kind"], trace["region"]
    waits = np.flatnonzero((kind == C.K_WBEGIN) & C.one_of(region, counters))
    polled = waits[(trace["cmp"][waits] == int(Cmp.NE)) & (trace["value"][waits] == 0)]
    if not len(polled):
        return empty
    value, op, launch, key = trace["value"], trace["op"], trace["launch"].astype(np.int64), trace.key
    nl = int(launch.max()) + 1
    # One group per (rank, core, launch) of a poller; a word's code is (key, launch).
    seg = np.searchsorted(trace.segments, polled, side="right") - 1
    gcode = seg.astype(np.int64) * nl + launch[polled]
    groups, gid = np.unique(gcode, return_inverse=True)
    wcode = key[polled].astype(np.int64) * nl + launch[polled]
    order = np.argsort(wcode, kind="stable")
    wsorted, wgid = wcode[order], gid[order]
    # Remote writes that store a value: a signal set, or an amo add (onto the word the receiver zeroed).
    writes = np.flatnonzero((((kind == C.K_SIGNAL) & (op == int(Op.SET))) | ((kind == C.K_AMO) & (op == int(Op.ADD))))
                            & C.one_of(region, np.unique(region[polled])) & (value != trace.null("value")))
    code = key[writes].astype(np.int64) * nl + launch[writes]
    at = np.searchsorted(wsorted, code)
    hit = (at < len(wsorted)) & (wsorted[np.minimum(at, len(wsorted) - 1)] == code)
    writes, g = writes[hit], wgid[at[hit]]
    v = value[writes]
    encoded = np.bincount(g, weights=(v <= -1), minlength=len(groups)) > 0
    never = v == 0
    raw = never | (encoded[g] & (v >= 0))
    enc_by = {}
    for reg in np.unique(region[writes[encoded[g]]]).tolist():  # a loop over regions, for the evidence
        enc_by[int(reg)] = writes[(region[writes] == reg) & (v <= -1)]
    rows, first = np.unique(writes[raw], return_index=True)
    return RawCounts(rows, never[raw][first], enc_by)
