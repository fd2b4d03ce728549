"""Counts kept across launches: a "0 = not yet" word that enters a launch still holding a value.

Double-buffered protocols (DeepEP low-latency: two parity halves of its signal buffer) zero the
half the *next* launch polls (next_clean), so that poll starts from 0. A word polled with
``!= 0`` in launch L whose last writes before L (in the latest launch that wrote it) were all
remote stores or adds with no local clean among them, and with no local clean in L either,
enters L holding a non-zero value: the poll is satisfied by a count from an earlier launch of
that parity (two launches back), whatever this launch's sender writes. Told from the trace
alone; the launches' order is the host's, never two ranks' clocks. Shared by MT205 and MT502.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.contract import Cmp, Op, Role

from . import codes as C
from ._cache import cached
from .stages import Stage


@dataclass(frozen=True)
class Kept:
    wait: int  # the poll (wait_begin) in launch L
    write: int  # the last write of the value it kept (launch < L)
    launch: int  # L
    written: int  # the launch that wrote it


def kept_counts(trace) -> dict[int, Kept]:
    return cached(trace, "kept_counts", lambda: _find(trace), Stage.PRODUCERS)


def _find(trace) -> dict[int, Kept]:
    if trace.n == 0:
        return {}
    counters = [r.id for r in trace.manifest.regions if r.role == Role.COUNTER]
    if not counters:
        return {}
    kind, region, value = trace["kind"], trace["region"], trace["value"]
    waits = np.flatnonzero((kind == C.K_WBEGIN) & C.one_of(region, counters))
    polls = waits[(trace["cmp"][waits] == int(Cmp.NE)) & (value[waits] == 0)]
    polls = polls[trace["launch"][polls] > 0]
    if not len(polls):
        return {}
    key, launch = trace.key.astype(np.int64), trace["launch"].astype(np.int64)
    op = trace["op"]
    stores = ((kind == C.K_SIGNAL) | (kind == C.K_AMO) | (kind == C.K_PUT)) & C.one_of(region, counters)
    local = (kind == C.K_WRITE) & C.one_of(region, counters)
    writes = np.flatnonzero(stores | local)
    # A local write covers nbytes of words (a memset of a half): one entry per word it clears.
    eb = np.array([r.elem_bytes for r in trace.manifest.regions], np.int64)
    span = np.ones(len(writes), np.int64)
    lw = local[writes]
    nb = trace["nbytes"][writes[lw]].astype(np.int64)
    span[lw] = np.maximum(1, np.where(nb > 0, nb, 0) // eb[region[writes[lw]].astype(np.int64)])
    rows = np.repeat(writes, span)
    step = np.arange(len(rows)) - np.repeat(np.cumsum(span) - span, span)
    wkey = key[rows] + step
    keep = np.isin(wkey, np.unique(key[polls]))
    writes, wkey = rows[keep], wkey[keep]
    if not len(writes):
        return {}
    nl = int(launch.max()) + 2
    wcode = wkey * nl + launch[writes]
    order = np.lexsort((writes, wcode))
    writes, wcode = writes[order], wcode[order]
    is_local = local[writes]
    out = {}
    pcode = key[polls] * nl + launch[polls]
    # Launch L's own local writes of the word: a clean in L itself puts it back.
    lo_l, hi_l = np.searchsorted(wcode, pcode), np.searchsorted(wcode, pcode + 1)
    cum_local = np.concatenate(([0], np.cumsum(is_local)))
    clean_now = (cum_local[hi_l] - cum_local[lo_l]) > 0
    # The latest earlier launch that wrote the word: the write just before (key, L).
    before = lo_l - 1
    ok = (before >= 0) & ~clean_now
    ok[ok] &= (wcode[before[ok]] // nl) == key[polls[ok]]
    for i in np.flatnonzero(ok).tolist():  # a loop over candidate polls
        b = int(before[i])
        lw = int(wcode[b] % nl)
        first = int(np.searchsorted(wcode, wcode[b]))
        span = slice(first, b + 1)
        if is_local[span].any():
            continue  # that launch cleaned it
        rows = writes[span]
        v = value[rows]
        known = v != trace.null("value")
        adds = op[rows] == int(Op.ADD)
        if not known.any() or not (v[known] != 0).any() or (~adds & known & (v == 0)).any():
            continue
        out[int(polls[i])] = Kept(int(polls[i]), int(rows[-1]), int(launch[polls[i]]), lw)
    return out
