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

# A mapping that names the writer of at least this share of the writes seen
# fits: a kernel bug that misdirects a few writes must not hide the mapping
# the rest of the kernel follows (that write is what MT105 then reports).
FIT_SHARE = 0.75
# The index candidates, the most specific first (each needs more parameters).
_CANDIDATES = ("token_topk", "dispatch", "segment", "rank")


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
    cols = _Columns(trace)
    notes: dict[tuple[int, str], str] = {}
    params = dict(declared.params)
    _route_params(cols, declared, params, notes)
    _experts_from_counts(cols, declared, params, notes)
    regions = list(declared.regions)
    waited = sorted(set(np.unique(cols.region[cols.kind == Kind.WAIT_BEGIN]).tolist()) - {-1})
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
    """The few columns inference reads, as int64, and every word write with its target."""

    def __init__(self, trace):
        trace.load(["kind", "rank", "core", "launch", "region", "offset", "nbytes", "value", "op",
                    "token", "topk", "expert", "dst_rank", "local_expert", "sig_region", "sig_offset"])
        self.trace = trace
        self.kind = trace["kind"]
        self.region = trace["region"].astype(np.int64)
        self.segment = np.searchsorted(trace.segments, np.arange(trace.n), side="right") - 1
        owner = trace.owner
        writes = np.flatnonzero(np.isin(self.kind, _WRITES))
        signal = np.flatnonzero(self.kind == Kind.PUT_SIGNAL)
        # The signal word of a put_signal is a write of its own, into sig_region.
        self.w_row = np.concatenate((writes, signal))
        self.w_region = np.concatenate((self.region[writes], trace["sig_region"][signal].astype(np.int64)))
        self.w_offset = np.concatenate((trace["offset"][writes], trace["sig_offset"][signal])).astype(np.int64)
        nbytes = trace["nbytes"][writes].astype(np.int64)
        self.w_bytes = np.concatenate((np.where(nbytes == trace.null("nbytes"), 0, nbytes),
                                       np.zeros(len(signal), np.int64)))
        self.w_owner = owner[self.w_row].astype(np.int64)
        self.w_rank = trace["rank"][self.w_row].astype(np.int64)
        self.w_value = trace["value"][self.w_row].astype(np.int64)
        self.w_add = trace["op"][self.w_row] == Op.ADD
        self.w_launch = trace["launch"][self.w_row].astype(np.int64)
        self.vnull = trace.null("value")


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


def _bounds_el(expert: np.ndarray, writer: np.ndarray) -> tuple[int, int]:
    """Experts per rank E such that expert // E == writer for every pair: the range [lo, hi]."""
    ok = (expert >= 0) & (writer >= 0)
    e, w = expert[ok], writer[ok]
    if not len(e):
        return 1, 2**31
    lo = int((e // (w + 1)).max()) + 1
    upper = e[w > 0] // w[w > 0]
    hi = int(upper.min()) if len(upper) else 2**31
    return lo, hi


def _experts_from_counts(cols: _Columns, m: Manifest, params: dict, notes: dict) -> None:
    """Where no mapping fixed local_experts: counts and delivers name every local expert."""
    if "local_experts" in params or "num_experts" in params:
        return
    t = cols.trace
    rows = np.flatnonzero(np.isin(cols.kind, np.array([int(Kind.COUNT), int(Kind.DELIVER)], np.int8)))
    routes = np.flatnonzero(cols.kind == Kind.ROUTE)
    le = t["local_expert"][rows].astype(np.int64)
    le = le[le >= 0]
    dst = t["dst_rank"][routes].astype(np.int64)
    e = t["expert"][routes].astype(np.int64)
    seen = (dst >= 0) & (dst < m.ranks)
    lo, hi = _bounds_el(e[seen], dst[seen])
    if len(le):
        lo = max(lo, int(le.max()) + 1)
    if lo <= hi and (len(le) or seen.any()) and lo < 2**31:
        _set_experts(params, notes, m, lo, "the local experts counts / delivers name"
                     + (f" and the dst_rank of {int(seen.sum())} routes" if seen.any() else ""))


def _set_experts(params: dict, notes: dict, m: Manifest, el: int, why: str) -> None:
    params["local_experts"] = el
    notes[(-1, "local_experts")] = f"{el}, from {why}"
    if "num_experts" not in m.params:
        params["num_experts"] = el * m.ranks
        notes[(-1, "num_experts")] = f"{el * m.ranks} = {m.ranks} ranks x {el} local experts"


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
        names = _CANDIDATES if "index" not in given else ((r.index,) if r.index else ())
        stated = r.slot_words if "slot_words" in given else None
        fit = _index(cols, m, r, names, stated, width, reset, params, notes, infer_name="index" not in given)
        if fit:
            if "index" not in given:
                changes["index"] = fit[0]
            if stated is None and fit[1] != r.slot_words:
                changes["slot_words"] = fit[1]
                notes[(r.id, "slot_words")] = f"{fit[1]}, the slot width at which {fit[0]} names the writers"
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

    wait_id = ident(cols.segment[ends], t["launch"][ends], t["offset"][ends].astype(np.int64))
    order = np.argsort(wait_id, kind="stable")
    wait_id, first = wait_id[order], ends[order]
    write_id = ident(cols.segment[rows], t["launch"][rows], offs)
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
    word = cols.segment[waits] * max(r.length, 1) + t["offset"][waits].astype(np.int64)
    order = np.argsort(word, kind="stable")  # stable: program order within a (core, word)
    word, target = word[order], target[order]
    same = word[1:] == word[:-1]
    if not same.any() or (target[1:][same] <= target[:-1][same]).any():
        return None
    mine = np.flatnonzero((cols.w_region == r.id) & ~cols.w_add & (cols.w_value != cols.vnull))
    seg = np.searchsorted(t.segments, cols.w_row[mine], side="right") - 1
    wword = (seg * (int(t.declared.ranks) + 1) + cols.w_owner[mine]) * max(r.length, 1) + cols.w_offset[mine]
    o = np.argsort(wword, kind="stable")
    ww, wv = wword[o], cols.w_value[mine][o]
    wsame = ww[1:] == ww[:-1]
    if (wv[1:][wsame] < wv[:-1][wsame]).any():
        return None
    return (f"the targets of {int(same.sum())} repeated waits on one word only grow, and no writer's "
            f"value ever falls: a generation counter")


def _index(cols: _Columns, m: Manifest, r: Region, names, stated_width: int | None, divisor: int, reset,
           params: dict, notes: dict, infer_name: bool = True) -> tuple[str, int] | None:
    """The SLOT_INDEX mapping, and its slot width, that names the writer of (almost) every
    producer write into the region. Each mapping is tried at the width the manifest states,
    else at the width its slot count implies (length / slots) and at the offsets' divisor."""
    t = cols.trace
    sel = cols.w_region == r.id
    if reset is not None:  # the owner putting its own word back is no producer write
        sel &= ~((cols.w_owner == cols.w_rank) & (cols.w_value == reset))
    idx = np.flatnonzero(sel)
    if len(idx) < 2:
        return None
    owner, writer = cols.w_owner[idx], cols.w_rank[idx]
    offset, launch = cols.w_offset[idx], cols.w_launch[idx]
    P = m.ranks
    K, B = params.get("topk"), params.get("tokens")
    el = params.get("local_experts") or (params["num_experts"] // P if params.get("num_experts") else None)
    slots = {"token_topk": B * K if B and K else None, "dispatch": P * el * B * K if B and K and el else None,
             "segment": P * el if el else None, "rank": P}
    fits: dict[tuple[str, int], np.ndarray] = {}
    inferred_el: dict[tuple[str, int], int] = {}
    # A multi-word write must fit at both ends: a 9-word put into 1-word slots spans nine writers.
    last = offset + np.maximum(cols.w_bytes[idx] // r.elem_bytes, 1) - 1
    hits: dict[tuple[str, int], np.ndarray] = {}
    # Writes that fill exactly one slot: of two mappings that fit as well, the one whose slots
    # are the kernel's writes is the simpler explanation (a 9-word put is one slot, not nine).
    whole: dict[tuple[str, int], int] = {}
    for name in names:
        if stated_width is not None:
            widths = [stated_width]
        else:
            natural = r.length // slots[name] if slots[name] and r.length % slots[name] == 0 else None
            widths = [w for w in dict.fromkeys((natural, divisor, 1)) if w]
        for width in widths:
            per = el
            if name == "token_topk" and per is None and K:
                experts = _route_experts(cols, t, owner, launch, (offset // width) // K, (offset // width) % K)
                lo, hi = _bounds_el(experts, writer)
                if lo > hi or lo >= 2**31:
                    continue
                per = inferred_el[(name, width)] = lo
            ends = [_predict(cols, t, name, P, K, B, per, owner, launch, at // width) for at in (offset, last)]
            if ends[0] is None:
                continue
            fits[(name, width)] = ends[0]
            hits[(name, width)] = (ends[0] == writer) & (ends[1] == writer)
            whole[(name, width)] = int((offset // width == last // width).sum())
    scores = {c: int(hit.sum()) for c, hit in hits.items()}
    if not scores:
        return None
    # Ties: the slots the kernel's writes fill, then the more specific mapping, then the narrower slot.
    best = max(scores, key=lambda c: (scores[c], whole[c], -_CANDIDATES.index(c[0]), -c[1]))
    if scores[best] < 2 or scores[best] < FIT_SHARE * len(idx):
        return None
    # Another mapping that fits as well but names other writers: the trace cannot tell them apart.
    for c, score in scores.items():
        if c[0] != best[0] and (score, whole[c]) == (scores[best], whole[best]) \
                and not np.array_equal(fits[c], fits[best]):
            return None
    if best in inferred_el:
        _set_experts(params, notes, m, inferred_el[best],
                     f"the ranks that wrote {r.name}'s slots for the routes' experts")
    name, width = best
    if infer_name:
        notes[(r.id, "index")] = (f"{name} ({_WHAT[name]}), {width}-word slots: it names the writer of "
                                  f"{scores[best]} of the {len(idx)} writes into {r.name}")
    return best


def _predict(cols, t, name: str, P: int, K, B, per, owner, launch, slot) -> np.ndarray | None:
    """The writer each slot's mapping names (-1: none can), or None where its parameters are unknown."""
    if name == "token_topk":
        if not (K and per):
            return None
        experts = _route_experts(cols, t, owner, launch, slot // K, slot % K)
        return np.where(experts >= 0, experts // per, -1)
    if name == "dispatch":
        return (slot // (B * K)) // per if K and B and per else None
    if name == "segment":
        return slot % P if per else None
    return np.where(slot < P, slot, -1)


_WHAT = {"token_topk": "slot = token*topk + k, written by the rank owning the route's expert",
         "dispatch": "slot = (src_rank*local_experts + expert)*(tokens*topk) + i, written by src_rank",
         "segment": "slot = local_expert*ranks + src_rank, written by src_rank",
         "rank": "slot = the writer's rank"}


def _route_experts(cols: _Columns, t, owner, launch, token, topk) -> np.ndarray:
    """The expert of route (token, topk) on rank ``owner`` in ``launch``; -1 where there is none."""
    routes = np.flatnonzero(cols.kind == Kind.ROUTE)
    out = np.full(len(owner), -1, np.int64)
    if not len(routes):
        return out
    K = int(t["topk"][routes].max()) + 1
    T = int(t["token"][routes].max()) + 1
    nl = int(t["launch"].max()) + 1

    def key(rank, launch, tok, k):
        return ((rank.astype(np.int64) * nl + launch.astype(np.int64)) * T + tok.astype(np.int64)) * K \
            + k.astype(np.int64)

    rk = key(t["rank"][routes], t["launch"][routes], t["token"][routes], t["topk"][routes])
    o = np.argsort(rk, kind="stable")
    rk = rk[o]
    inside = (token >= 0) & (token < T) & (topk >= 0) & (topk < K)
    q = key(owner, launch, np.where(inside, token, 0), np.where(inside, topk, 0))
    at = np.minimum(np.searchsorted(rk, q), len(rk) - 1)
    found = inside & (rk[at] == q)
    out[found] = t["expert"][routes[o[at[found]]]].astype(np.int64)
    return out
