"""Per flag-like region, how many words one word-table entry stands for: its slot, where the trace allows.

The word table (``_words``) holds one entry per word written into a flag-like
region. The classic kernels write their ready, count and status flags as whole
32-byte slots: a put of 8 words sets each of them, a reset writes all 8, a wait
covers all 8. Every word of such a slot then has the same writes, in the same
order, with the same values: the same history, eight times over (10.6 M entries
for 1.3 M writes on the 10 M-event bench trace). Where every access to a region
is whole slots, one entry per slot says all of it: the entry stands for the
slot's words, keyed by its first, and what names words (MT202's counts and
offsets, the unreset offsets a wait cites) expands it again.

A region's unit is its ``slot_words`` only where nothing in the view could tell
two words of one slot apart: every row keyed into the region (its word, a get's
source) at a slot's first word; every write into it (put, write, get, a
put_signal's payload) whole slots after clipping to the region and to
``widest``; no signal, amo or put_signal signal word into it (one word each);
every wait on it whole slots, and every wait_end paired with its begin (an
unpaired one covers one word). Else its unit is 1, the table as it always was.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import kernel
from . import _passes as P
from . import codes as C
from . import regions as R
from ._cache import cached
from ._words_table import widest
from .stages import Stage

K_SIGNAL, K_AMO, K_PUT, K_WRITE, K_GET, K_PUTSIG = C.K_SIGNAL, C.K_AMO, C.K_PUT, C.K_WRITE, C.K_GET, C.K_PUTSIG
K_WBEGIN, K_WEND, NULL64 = C.K_WBEGIN, C.K_WEND, C.NULL64


def word_units(trace) -> np.ndarray:
    """Per region id: the words one entry of the word table stands for (1, or the region's slot)."""
    def build():
        regions = trace.manifest.regions
        rt = R.region_table(trace)
        slot = np.array([r.slot_words for r in regions] or [1], np.int64)
        wide = widest(trace)
        candidate = rt["flaglike"] & (slot > 1) & (rt["length"] % slot == 0) & (wide % slot == 0)
        unit = np.ones(len(slot), np.int64)
        if not trace.n or not candidate.any():
            return unit
        kind = trace["kind"]
        has_get = bool((kind == K_GET).any())
        _, wait_begin = P.wait_pairs(trace)
        split = np.zeros(len(slot), np.bool_)
        rows = Rows(kind, trace["region"], trace["offset"], trace["local_region"] if has_get else trace["region"],
                    trace["local_offset"] if has_get else trace["offset"], R.target_region(trace), R.extent(trace),
                    trace.carried("sig_region"), trace.wait_words, wait_begin)
        _split_slots(rows, Slots(candidate, slot, rt["length"], np.int64(wide)), split)
        unit[candidate & ~split] = slot[candidate & ~split]
        return unit
    return cached(trace, "word_units", build, Stage.WORD_TABLE)


class Rows(NamedTuple):
    """The columns ``_split_slots`` reads, per event (a get's local_* where the trace has gets)."""
    kind: np.ndarray
    region: np.ndarray
    offset: np.ndarray
    local_region: np.ndarray
    local_offset: np.ndarray
    target: np.ndarray      # the region each row writes (``regions.target_region``)
    extent: np.ndarray      # the words it writes there (``regions.extent``)
    sig_region: np.ndarray
    wait_words: np.ndarray  # words a wait_begin covers
    wait_begin: np.ndarray  # a wait_end's wait_begin row (-1: none)


class Slots(NamedTuple):
    """Per region: whether it may take slot units, its slot and length in words; and ``widest``."""
    candidate: np.ndarray
    slot: np.ndarray
    length: np.ndarray
    wide: np.int64


@kernel
def _split_slots(rows, slots, split):
    # Marks split[r] where a row could tell two words of one of region r's slots apart.
    (kind, region, offset, local_region, local_offset, target, extent, sig_region, wait_words,
     wait_begin) = rows
    candidate, slot, length, wide = slots
    nreg = len(candidate)
    for i in range(len(kind)):
        k = kind[i]
        for side in range(2):  # a row's own word; a get's source as well as its destination
            if side == 0:
                r, o = (local_region[i], local_offset[i]) if k == K_GET else (region[i], offset[i])
            elif k == K_GET:
                r, o = region[i], offset[i]
            else:
                break
            if 0 <= r < nreg and candidate[r] and o != NULL64 and o % slot[r] != 0:
                split[r] = True  # (a null offset names no word: the row has no key)
        t = target[i]
        if 0 <= t < nreg and candidate[t]:
            if k == K_SIGNAL or k == K_AMO:
                split[t] = True
            elif k == K_PUT or k == K_WRITE or k == K_GET or k == K_PUTSIG:
                o = local_offset[i] if k == K_GET else offset[i]
                if o >= 0 and max(min(extent[i], length[t] - o, wide), 0) % slot[t] != 0:
                    split[t] = True
        if k == K_PUTSIG:
            s = sig_region[i]
            if 0 <= s < nreg and candidate[s]:
                split[s] = True
        r = region[i]
        if 0 <= r < nreg and candidate[r]:
            if k == K_WBEGIN and max(wait_words[i], 1) % slot[r] != 0:
                split[r] = True
            elif k == K_WEND and wait_begin[i] < 0:
                split[r] = True
