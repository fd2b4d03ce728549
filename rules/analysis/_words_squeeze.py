"""Element keys renumbered over the flag-like words only, so the word table's packed key fits.

A trace's element keys span every rank's whole symmetric heap (owner *
words_per_rank + base + offset): with a large payload region, a few flag
words per rank sit 10^9 keys apart, and the word table's packed sort key
(key x launch x phase x entry, ``_words_packed``) overflows 63 bits, which
sent such traces to the lexsort form (several sorts and a dozen int64 copies
of the table).  Every entry of the table is a word of a flag-like region, so
the table can be packed over those words alone: owner * flag_words +
flag_base + offset, which orders as the key does (the flag-like regions are
disjoint and keep their base order) and decodes back to it exactly
(``_words_packed_kernels.unpack``).  Where a row's word is not inside a flag-like
region (a signal or put_signal word out of its region, a wait running past
its region's end) the renumbering cannot stand in for the key, and
``squeeze`` says None.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import kernel


class Squeezed(NamedTuple):
    key: np.ndarray        # per row: its key renumbered, -1 where its word is in no flag-like region
    room: np.ndarray       # per row: words from its key to its flag-like region's end (0: none, -1: no key)
    words: int             # flag-like words per rank: the renumbered space's stride
    base: np.ndarray       # per region id: its renumbered base (flag-like regions only)
    flag_base: np.ndarray  # flag-like regions in base order: renumbered bases ...
    orig_base: np.ndarray  # ... and their keys' bases, to decode


@kernel
def _squeeze_kernel(key, wpr, orig_base, length, flag_base, words, out, room):
    m = len(orig_base)
    for i in range(len(key)):
        k = key[i]
        out[i] = -1
        room[i] = 0
        if k < 0:
            room[i] = -1  # no word at all
            continue
        owner = k // wpr
        rest = k - owner * wpr
        lo, hi = 0, m  # the last flag-like region whose base is <= rest
        while lo < hi:
            mid = (lo + hi) // 2
            if orig_base[mid] <= rest:
                lo = mid + 1
            else:
                hi = mid
        j = lo - 1
        if j >= 0 and rest - orig_base[j] < length[j]:
            out[i] = owner * words + flag_base[j] + rest - orig_base[j]
            room[i] = min(length[j] - (rest - orig_base[j]), 2**31 - 1)


def squeeze(trace, rt) -> Squeezed | None:
    """The renumbering, or None where the flag-like regions overlap or leave a rank's word range."""
    flag = np.flatnonzero(rt["flaglike"][: len(trace.manifest.regions)])
    if not len(flag):
        return None
    flag = flag[np.argsort(rt["base"][flag], kind="stable")]
    ob, ln = rt["base"][flag], rt["length"][flag]
    wpr = int(trace.manifest.words_per_rank)
    if (ob[1:] < ob[:-1] + ln[:-1]).any() or ob[0] < 0 or int(ob[-1] + ln[-1]) > wpr:
        return None
    fb = np.concatenate(([0], np.cumsum(ln)[:-1])).astype(np.int64)
    words = int(ln.sum())
    base = np.zeros(len(rt["base"]), np.int64)
    base[flag] = fb
    key = np.empty(trace.n, np.int64)
    room = np.empty(trace.n, np.int32)
    _squeeze_kernel(trace.key, np.int64(wpr), ob, ln, fb, np.int64(words), key, room)
    return Squeezed(key, room, words, base, fb, ob)
