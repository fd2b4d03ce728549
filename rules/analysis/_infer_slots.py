"""The slot mappings inference tries (``ingest.manifest.SLOT_INDEX``), and the experts per rank.

``fit`` scores each mapping, at each slot width worth trying, by how many
of the writes seen into a region it names the writer of (a multi-word write
at both ends); ``inference`` adopts the best one only where it is clear.
"""

from __future__ import annotations

import numpy as np

from ingest.contract import Kind
from ingest.manifest import Manifest, Region

# A mapping that names the writer of at least this share of the writes seen
# fits: a kernel bug that misdirects a few writes must not hide the mapping
# the rest of the kernel follows (that write is what MT105 then reports).
FIT_SHARE = 0.75
# The index candidates, the most specific first (each needs more parameters).
CANDIDATES = ("token_topk", "dispatch", "segment", "rank")


def bounds_experts_per_rank(expert: np.ndarray, writer: np.ndarray) -> tuple[int, int]:
    """Experts per rank E such that expert // E == writer for every pair: the range [lo, hi]."""
    ok = (expert >= 0) & (writer >= 0)
    e, w = expert[ok], writer[ok]
    if not len(e):
        return 1, 2**31
    lo = int((e // (w + 1)).max()) + 1
    upper = e[w > 0] // w[w > 0]
    hi = int(upper.min()) if len(upper) else 2**31
    return lo, hi


def set_experts(params: dict, notes: dict, m: Manifest, per_rank: int, why: str) -> None:
    params["local_experts"] = per_rank
    notes[(-1, "local_experts")] = f"{per_rank}, from {why}"
    if "num_experts" not in m.params:
        params["num_experts"] = per_rank * m.ranks
        notes[(-1, "num_experts")] = f"{per_rank * m.ranks} = {m.ranks} ranks x {per_rank} local experts"


def fit(cols, m: Manifest, r: Region, names, stated_width: int | None, divisor: int, reset,
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
    ranks = m.ranks
    topk, tokens = params.get("topk"), params.get("tokens")
    per_rank = params.get("local_experts") or (params["num_experts"] // ranks if params.get("num_experts") else None)
    slots = {"token_topk": tokens * topk if tokens and topk else None, "dispatch": ranks * per_rank * tokens * topk if tokens and topk and per_rank else None,
             "segment": ranks * per_rank if per_rank else None, "rank": ranks}
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
            experts_per_rank = per_rank
            if name == "token_topk" and experts_per_rank is None and topk:
                experts = _route_experts(cols, t, owner, launch, (offset // width) // topk, (offset // width) % topk)
                lo, hi = bounds_experts_per_rank(experts, writer)
                if lo > hi or lo >= 2**31:
                    continue
                experts_per_rank = inferred_el[(name, width)] = lo
            ends = [_predict(cols, t, name, ranks, topk, tokens, experts_per_rank, owner, launch, at // width) for at in (offset, last)]
            if ends[0] is None:
                continue
            fits[(name, width)] = ends[0]
            hits[(name, width)] = (ends[0] == writer) & (ends[1] == writer)
            whole[(name, width)] = int((offset // width == last // width).sum())
    scores = {c: int(hit.sum()) for c, hit in hits.items()}
    if not scores:
        return None
    # Ties: the slots the kernel's writes fill, then the more specific mapping, then the narrower slot.
    best = max(scores, key=lambda c: (scores[c], whole[c], -CANDIDATES.index(c[0]), -c[1]))
    if scores[best] < 2 or scores[best] < FIT_SHARE * len(idx):
        return None
    # Another mapping that fits as well but names other writers: the trace cannot tell them apart.
    for c, score in scores.items():
        if c[0] != best[0] and (score, whole[c]) == (scores[best], whole[best]) \
                and not np.array_equal(fits[c], fits[best]):
            return None
    if best in inferred_el:
        set_experts(params, notes, m, inferred_el[best],
                     f"the ranks that wrote {r.name}'s slots for the routes' experts")
    name, width = best
    if infer_name:
        notes[(r.id, "index")] = (f"{name} ({_WHAT[name]}), {width}-word slots: it names the writer of "
                                  f"{scores[best]} of the {len(idx)} writes into {r.name}")
    return best


def _predict(cols, t, name: str, ranks: int, topk, tokens, experts_per_rank, owner, launch, slot) -> np.ndarray | None:
    """The writer each slot's mapping names (-1: none can), or None where its parameters are unknown."""
    if name == "token_topk":
        if not (topk and experts_per_rank):
            return None
        experts = _route_experts(cols, t, owner, launch, slot // topk, slot % topk)
        return np.where(experts >= 0, experts // experts_per_rank, -1)
    if name == "dispatch":
        return (slot // (tokens * topk)) // experts_per_rank if topk and tokens and experts_per_rank else None
    if name == "segment":
        return slot % ranks if experts_per_rank else None
    return np.where(slot < ranks, slot, -1)


_WHAT = {"token_topk": "slot = token*topk + k, written by the rank owning the route's expert",
         "dispatch": "slot = (src_rank*local_experts + expert)*(tokens*topk) + i, written by src_rank",
         "segment": "slot = local_expert*ranks + src_rank, written by src_rank",
         "rank": "slot = the writer's rank"}


def _route_experts(cols, t, owner, launch, token, topk) -> np.ndarray:
    """The expert of route (token, topk) on rank ``owner`` in ``launch``; -1 where there is none."""
    routes = np.flatnonzero(cols.kind == Kind.ROUTE)
    out = np.full(len(owner), -1, np.int64)
    if not len(routes):
        return out
    topks = int(t["topk"][routes].max()) + 1
    tokens = int(t["token"][routes].max()) + 1
    launches = int(t["launch"].max()) + 1

    def key(rank, launch, tok, k):
        return ((rank.astype(np.int64) * launches + launch.astype(np.int64)) * tokens + tok.astype(np.int64)) * topks \
            + k.astype(np.int64)

    rk = key(t["rank"][routes], t["launch"][routes], t["token"][routes], t["topk"][routes])
    o = np.argsort(rk, kind="stable")
    rk = rk[o]
    inside = (token >= 0) & (token < tokens) & (topk >= 0) & (topk < topks)
    q = key(owner, launch, np.where(inside, token, 0), np.where(inside, topk, 0))
    at = np.minimum(np.searchsorted(rk, q), len(rk) - 1)
    found = inside & (rk[at] == q)
    out[found] = t["expert"][routes[o[at[found]]]].astype(np.int64)
    return out
