"""What the manifest does not say, inferred from the trace: region properties and kernel parameters.

The region annotations (``slot_words``, ``index``, ``reset``, ``monotonic``)
and ``params`` sharpen the diagnosis, but a user's manifest rarely has them.
Every one the manifest leaves out is inferred here, once per window, from
what the trace shows, and only where the evidence is unambiguous:

- ``topk`` / ``tokens``: the largest top-k index and token of the routes, plus one.
- ``local_experts``: the experts per rank that map every route whose rows
  were seen landing (its ``dst_rank``, or the rank that wrote its combine
  slot) onto that rank, no fewer than the local experts counts and
  delivers name; ``num_experts`` = ranks x local_experts.
- ``slot_words``: the common divisor of the offsets waited on and written
  (and of the multi-word writes' extents) in a waited region.
- ``reset``: the value the owner writes back into a word after it waited on
  it, where (almost) every such write agrees.
- ``monotonic``: waits on one word whose targets only grow in program order,
  and writers whose values only grow: a generation or epoch counter.
- ``index``: the slot-to-producer mapping (``ingest.manifest.SLOT_INDEX``)
  that names the writer of (almost) every write seen into the region.

Nothing is ordered across ranks by ``ts``: every test is per core in
program order, or per word over values. The result is the declared manifest
with the inferred properties filled in, and a note per inferred property
saying what it rests on; findings that use one say so (confidence inferred).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ingest.contract import Cmp, Kind, Op
from ingest.manifest import Manifest, Region

from . import codes as C
from ._infer_slots import (
    CANDIDATES,
    FIT_SHARE,
    Ask,
    bounds_experts_per_rank,
    fit,
    set_experts,
)
from .slots import Routes


@dataclass(frozen=True)
class Inference:
    """The manifest the rules use, and what of it was inferred."""

    manifest: Manifest
    notes: Mapping[tuple[int, str], str]  # (region id, or -1 for params, field) -> what it rests on

    def about(self, region: int | None, fields=None) -> list[str]:
        """Notes on one region's inferred properties and on the inferred params (which every
        slot uses); ``fields`` keeps only those properties (``"params"`` for every param)."""
        def wanted(field: str, is_param: bool) -> bool:
            return fields is None or ("params" if is_param else field) in fields

        out = [f"{k[1]}: {v}" for k, v in self.notes.items() if k[0] == -1 and wanted(k[1], True)]
        if region is not None and region >= 0:
            out += [f"{self.manifest.regions[region].name}.{k[1]}: {v}"
                    for k, v in self.notes.items() if k[0] == region and wanted(k[1], False)]
        return out


def infer(trace) -> Inference:
    """The declared manifest of ``trace`` with every absent property the trace shows filled in."""
    declared: Manifest = trace.declared
    if trace.n == 0 or not _anything_to_infer(declared):
        return Inference(declared, {})
    trace.load(["kind", "region"])
    waited = sorted(set(np.unique(trace["region"][trace["kind"] == Kind.WAIT_BEGIN]).tolist()) - {-1})
    cols = _Columns(trace, waited)
    notes: dict[tuple[int, str], str] = {}
    params = dict(declared.params)
    _route_params(cols, declared, params, notes)
    _experts_from_counts(cols, declared, params, notes)
    regions = list(declared.regions)
    had = params.get("local_experts")
    for rid in waited:
        regions[rid] = _region(cols, declared, regions[rid], params, notes)
    if params.get("local_experts") != had:  # a later region's mapping fixed the experts per rank
        for rid in waited:
            if regions[rid].index is None:
                regions[rid] = _region(cols, declared, declared.regions[rid], params, notes)
    manifest = dataclasses.replace(declared, regions=tuple(regions), params=params)
    return Inference(manifest, notes)


def _anything_to_infer(m: Manifest) -> bool:
    if not {"topk", "tokens", "local_experts"} <= set(m.params) and not {"topk", "tokens", "num_experts"} <= set(m.params):
        return True
    return any(not {"slot_words", "index", "reset", "monotonic"} <= r.annotated for r in m.regions)


class _Columns:
    """The few columns inference reads, and every write into a region waited on, with its target (as int64).

    Only the waited regions are inferred, and every test on a write asks its region first: the
    payload puts into other regions, most of a dispatch's writes, would only be gathered and
    widened for nothing (1.87 -> 0.22 s for a window of the 20 M many-findings trace, measured).
    """

    def __init__(self, trace, waited: list[int]):
        # The route, count and signal-word columns are read where rows of their kinds exist: a
        # window without them would hold them all null (10 B/event for sig_region and sig_offset).
        trace.load(["kind", "rank", "core", "launch", "region", "offset", "nbytes", "value", "op"])
        self.trace = trace
        self.kind = trace["kind"]
        self.region = trace["region"]  # as it is: compared with region ids, never widened (8 B/event)
        owner = trace.owner
        writes = np.flatnonzero(C.one_of(self.kind, _WRITES) & C.one_of(self.region, waited))
        signal = np.flatnonzero(self.kind == Kind.PUT_SIGNAL)
        if len(signal):
            signal = signal[C.one_of(trace["sig_region"][signal], waited)]
        # The signal word of a put_signal is a write of its own, into sig_region.
        self.w_row = np.concatenate((writes, signal))
        self.w_region = self.region[writes].astype(np.int64)
        self.w_offset = trace["offset"][writes].astype(np.int64)
        if len(signal):
            self.w_region = np.concatenate((self.w_region, trace["sig_region"][signal]))
            self.w_offset = np.concatenate((self.w_offset, trace["sig_offset"][signal]))
        nbytes = trace["nbytes"][writes].astype(np.int64)
        self.w_bytes = np.concatenate((np.where(nbytes == trace.null("nbytes"), 0, nbytes),
                                       np.zeros(len(signal), np.int64)))
        self.w_owner = owner[self.w_row].astype(np.int64)
        self.w_rank = trace["rank"][self.w_row].astype(np.int64)
        self.w_value = trace["value"][self.w_row].astype(np.int64)
        self.w_add = trace["op"][self.w_row] == Op.ADD
        self.w_launch = trace["launch"][self.w_row].astype(np.int64)
        self.vnull = trace.null("value")

    @property
    def routes(self) -> Routes:
        return Routes.of(self.trace)

    def segment_of(self, rows: np.ndarray) -> np.ndarray:
        """The (rank, core) segment of each row (``TraceView.segments``), for the rows asked only."""
        return np.searchsorted(self.trace.segments, rows, side="right") - 1


_WRITES = np.array([int(k) for k in (Kind.PUT, Kind.SIGNAL, Kind.AMO, Kind.WRITE)], np.int8)


def _route_params(cols: _Columns, m: Manifest, params: dict, notes: dict) -> None:
    t = cols.trace
    routes = np.flatnonzero(cols.kind == Kind.ROUTE)
    if not len(routes):
        return
    for name, col in (("topk", "topk"), ("tokens", "token")):
        if name not in m.params:
            params[name] = int(t[col][routes].max()) + 1
            notes[(-1, name)] = f"{params[name]}, the largest route {col} index plus one"


def _experts_from_counts(cols: _Columns, m: Manifest, params: dict, notes: dict) -> None:
    """Where no mapping fixed local_experts: counts and delivers name every local expert."""
    if "local_experts" in params or "num_experts" in params:
        return
    t = cols.trace
    rows = np.flatnonzero(C.one_of(cols.kind, (int(Kind.COUNT), int(Kind.DELIVER))))
    routes = np.flatnonzero(cols.kind == Kind.ROUTE)
    if not len(rows) and not len(routes):  # nothing names an expert (and their columns are all null)
        return
    le = t["local_expert"][rows].astype(np.int64)
    le = le[le >= 0]
    dst = t["dst_rank"][routes].astype(np.int64)
    e = t["expert"][routes].astype(np.int64)
    seen = (dst >= 0) & (dst < m.ranks)
    lo, hi = bounds_experts_per_rank(e[seen], dst[seen])
    if len(le):
        lo = max(lo, int(le.max()) + 1)
    if lo <= hi and (len(le) or seen.any()) and lo < 2**31:
        set_experts(params, notes, m, lo, "the local experts counts / delivers name"
                     + (f" and the dst_rank of {int(seen.sum())} routes" if seen.any() else ""))


def _region(cols: _Columns, m: Manifest, r: Region, params: dict, notes: dict) -> Region:
    t = cols.trace
    given = r.annotated
    mine = cols.w_region == r.id
    waits = np.flatnonzero((cols.kind == Kind.WAIT_BEGIN) & (cols.region == r.id))
    w_off = t["offset"][waits].astype(np.int64)
    changes: dict = {}
    width = r.slot_words
    if "slot_words" not in given:
        ext = cols.w_bytes[mine] // r.elem_bytes
        g = math.gcd(*[int(x) for x in np.unique(np.concatenate((cols.w_offset[mine], w_off, ext[ext > 1])))]) \
            if mine.any() or len(waits) else 0
        width = g if 1 < g <= max(r.length, 1) else 1
    reset = r.reset
    if "reset" not in given:
        reset = _reset(cols, t, r, waits)
        if reset is not None:
            changes["reset"] = reset[0]
            notes[(r.id, "reset")] = reset[1]
            reset = reset[0]
    if "monotonic" not in given and reset is None:
        why = _monotonic(cols, t, r, waits)
        if why:
            changes["monotonic"] = True
            notes[(r.id, "monotonic")] = why
    if "index" not in given or "slot_words" not in given:
        # The slot width is whatever lets a mapping name the writers: the index is inferred
        # with it, or a stated index picks it; a width no mapping confirms is not adopted.
        names = CANDIDATES if "index" not in given else ((r.index,) if r.index else ())
        stated = r.slot_words if "slot_words" in given else None
        found = fit(cols, m, r, Ask(tuple(names), stated, width, reset, infer_name="index" not in given),
                    params, notes)
        if found:
            if "index" not in given:
                changes["index"] = found[0]
            if stated is None and found[1] != r.slot_words:
                changes["slot_words"] = found[1]
                notes[(r.id, "slot_words")] = f"{found[1]}, the slot width at which {found[0]} names the writers"
    return dataclasses.replace(r, **changes) if changes else r


def _reset(cols: _Columns, t, r: Region, waits: np.ndarray) -> tuple[int, str] | None:
    """The value the owner writes back into a word it waited on, earlier in the same launch and core."""
    ends = np.flatnonzero((cols.kind == Kind.WAIT_END) & (cols.region == r.id))
    local = (cols.w_region == r.id) & (cols.w_owner == cols.w_rank) & ~cols.w_add & (cols.w_value != cols.vnull)
    rows, offs = cols.w_row[local], cols.w_offset[local]
    if not len(ends) or not len(rows):
        return None
    span = max(r.length, 1)
    nl = int(t["launch"].max()) + 1

    def ident(seg, launch, off):
        return (seg.astype(np.int64) * nl + launch.astype(np.int64)) * span + off

    wait_id = ident(cols.segment_of(ends), t["launch"][ends], t["offset"][ends].astype(np.int64))
    order = np.argsort(wait_id, kind="stable")
    wait_id, first = wait_id[order], ends[order]
    write_id = ident(cols.segment_of(rows), t["launch"][rows], offs)
    at = np.searchsorted(wait_id, write_id)
    hit = at < len(wait_id)
    hit[hit] = (wait_id[at[hit]] == write_id[hit]) & (first[at[hit]] < rows[hit])
    values = cols.w_value[local][hit]
    if not len(values):
        return None
    v, n = np.unique(values, return_counts=True)
    best = int(np.argmax(n))
    if n[best] < FIT_SHARE * len(values):
        return None
    # A reset re-arms the word: the waits on it must not pass on that value. A generation the
    # owner writes after waiting (its own new epoch) satisfies them, so it is no reset.
    passes = _satisfied(t["cmp"][waits], int(v[best]), t["value"][waits].astype(np.int64))
    if passes.any():
        return None
    return int(v[best]), (f"{int(v[best])}, what the owner wrote back after waiting in "
                          f"{int(n[best])} of {len(values)} such writes, and no wait passes on it")


def _satisfied(cmp: np.ndarray, value: int, target: np.ndarray) -> np.ndarray:
    """Per wait: would ``value`` satisfy it?"""
    out = np.zeros(len(cmp), bool)
    for code, test in ((Cmp.EQ, np.equal), (Cmp.NE, np.not_equal), (Cmp.GT, np.greater),
                       (Cmp.GE, np.greater_equal), (Cmp.LT, np.less), (Cmp.LE, np.less_equal)):
        sel = cmp == code
        out[sel] = test(value, target[sel])
    return out


def _monotonic(cols: _Columns, t, r: Region, waits: np.ndarray) -> str | None:
    """Waits whose targets only grow per (core, word), writers whose values only grow."""
    if len(waits) < 2:
        return None
    target = t["value"][waits].astype(np.int64)
    word = cols.segment_of(waits) * max(r.length, 1) + t["offset"][waits].astype(np.int64)
    order = np.argsort(word, kind="stable")  # stable: program order within a (core, word)
    word, target = word[order], target[order]
    same = word[1:] == word[:-1]
    if not same.any() or (target[1:][same] <= target[:-1][same]).any():
        return None
    mine = np.flatnonzero((cols.w_region == r.id) & ~cols.w_add & (cols.w_value != cols.vnull))
    seg = cols.segment_of(cols.w_row[mine])
    wword = (seg * (int(t.declared.ranks) + 1) + cols.w_owner[mine]) * max(r.length, 1) + cols.w_offset[mine]
    o = np.argsort(wword, kind="stable")
    ww, wv = wword[o], cols.w_value[mine][o]
    wsame = ww[1:] == ww[:-1]
    if (wv[1:][wsame] < wv[:-1][wsame]).any():
        return None
    return (f"the targets of {int(same.sum())} repeated waits on one word only grow, and no writer's "
            f"value ever falls: a generation counter")


