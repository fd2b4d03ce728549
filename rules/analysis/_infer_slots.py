"""The slot mappings inference tries (``ingest.manifest.SLOT_INDEX``), and the experts per rank.

``fit`` scores each mapping, at each slot width worth trying, by how many
of the writes seen into a region it names the writer of (a multi-word write
at both ends); ``inference`` adopts the best one only where it is clear.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ingest.manifest import Manifest, Region

from .slots import UNKNOWN, SlotParams, producer_of

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


@dataclass(frozen=True)
class Ask:
    """What ``fit`` tries for one region."""

    names: tuple[str, ...]  # the candidate mappings (CANDIDATES, or the index the manifest states)
    stated_width: int | None  # the slot width the manifest states, if it does
    divisor: int  # the common divisor of the offsets seen, a width worth trying
    reset: int | None  # the region's reset value: the owner writing it back is no producer write
    infer_name: bool = True  # note the mapping found (False: the manifest states it)


def fit(cols, m: Manifest, r: Region, ask: Ask, params: dict, notes: dict) -> tuple[str, int] | None:
    """The SLOT_INDEX mapping, and its slot width, that names the writer of (almost) every
    producer write into the region. Each mapping is tried at the width the manifest states,
    else at the width its slot count implies (length / slots) and at the offsets' divisor."""
    sel = cols.w_region == r.id
    if ask.reset is not None:  # the owner putting its own word back is no producer write
        sel &= ~((cols.w_owner == cols.w_rank) & (cols.w_value == ask.reset))
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
    for name in ask.names:
        if ask.stated_width is not None:
            widths = [ask.stated_width]
        else:
            natural = r.length // slots[name] if slots[name] and r.length % slots[name] == 0 else None
            widths = [w for w in dict.fromkeys((natural, ask.divisor, 1)) if w]
        for width in widths:
            experts_per_rank = per_rank
            if name == "token_topk" and experts_per_rank is None and topk:
                at = cols.routes.find(owner, launch, (offset // width) // topk, (offset // width) % topk)
                experts = cols.routes.experts_at(at)
                lo, hi = bounds_experts_per_rank(experts, writer)
                if lo > hi or lo >= 2**31:
                    continue
                experts_per_rank = inferred_el[(name, width)] = lo
            known = SlotParams(ranks, topk or 0, tokens or 0, experts_per_rank or 0, params.get("num_experts"))
            # segment needs no experts per rank to name a writer, but is tried only with them: below
            # slot P it names the writers rank names, and as the more specific candidate it would
            # take every one-slot-per-peer region from rank on the tie.
            if not known.knows(name) or (name == "segment" and not experts_per_rank):
                continue
            ends = [producer_of(name, end // width, owner, launch, cols.routes, known) for end in (offset, last)]
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
                and not np.array_equal(_named(fits[c]), _named(fits[best])):
            return None
    if best in inferred_el:
        set_experts(params, notes, m, inferred_el[best],
                     f"the ranks that wrote {r.name}'s slots for the routes' experts")
    name, width = best
    if ask.infer_name:
        notes[(r.id, "index")] = (f"{name} ({_WHAT[name]}), {width}-word slots: it names the writer of "
                                  f"{scores[best]} of the {len(idx)} writes into {r.name}")
    return best


def _named(writers: np.ndarray) -> np.ndarray:
    """The writers a mapping names; no writer (UNKNOWN or NOBODY) reads as one value."""
    return np.where(writers >= 0, writers, UNKNOWN)


_WHAT = {"token_topk": "slot = token*topk + k, written by the rank owning the route's expert",
         "dispatch": "slot = (src_rank*local_experts + expert)*(tokens*topk) + i, written by src_rank",
         "segment": "slot = local_expert*ranks + src_rank, written by src_rank",
         "rank": "slot = the writer's rank"}
