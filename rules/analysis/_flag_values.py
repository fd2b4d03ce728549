"""What a wait's observed value needed of its word's writes in its launch (``_flag_edges``' facts).

What the observed value needed, per word and launch (the word table, ``_words``):
- a word only ``set`` in the launch: the one write of the observed value, where no other write
  of the launch sets that value;
- a word only added to (a completion counter, DeepEP's balanced barrier_block): the value at the
  launch's start S plus the adds that happen before the wait (its own core's earlier ones, rows a
  barrier orders before it) plus some subset of the unordered ones must equal the observed
  value. Where no subset of the unordered adds that are not after the write reaches it, one of the
  writer's later adds was applied first: ordered. S is where the host left the word before the
  first launch, its region's reset, else 0 (the symmetric windows are zeroed first, protocols.md
  1.2; a counter only ever added to starts from there), plus every add of the earlier launches,
  so it is known only where the view holds the whole trace from launch 0 (no ring wrap, no
  missing dump, no window): elsewhere the answer is "unknown".
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import codes as C
from . import regions as R

SUBSET_SUMS_CAP = 1 << 14  # distinct partial sums explored before giving up ("unknown")


class Observed(NamedTuple):
    """A wait's observed value against its word's writes in the launch (``_flag_edges.FlagOrder``)."""

    listed: list  # the writes' rows
    places: list  # a word only added to: each write's ``_place``
    hits: list  # a word only set: the rows that wrote the observed value
    adds: np.ndarray | None  # a word only added to: each write's addend; None for a set word
    need: int  # the adds' total the observed value needed since the launch began


def start_value(trace, w, key: int, launch: int) -> int | None:
    """The word's value when ``launch`` began, where every add to it since the trace's start is held."""
    window = getattr(trace, "blocks", None)
    if trace.partial or (window is not None and window[0] != 0) or w.launch_min != 0:
        return None
    lo = np.searchsorted(w.key_launch, w.key_launch_of(key, w.launch_min), "left")
    hi = np.searchsorted(w.key_launch, w.key_launch_of(key, launch), "left")
    if (w.op[lo:hi] != C.OP_ADD).any() or (w.value[lo:hi] == C.NULL64).any():
        return None
    _, region, _ = trace.decode_key(key)
    rt = R.region_table(trace)
    return int(rt["reset"][region]) + int(w.value[lo:hi].sum())


def reachable(values: np.ndarray, target: int) -> bool:
    """Can some subset of ``values`` sum to ``target``? True where too many sums to tell."""
    sums = {0}
    uniq, counts = np.unique(values, return_counts=True)
    for v, n in zip(uniq.tolist(), counts.tolist()):
        sums = {s + v * j for s in sums for j in range(n + 1)}
        if len(sums) > SUBSET_SUMS_CAP:
            return True
    return target in sums
