"""MT408's compiled passes (``mt408_put_source_reused`` is their glue): typed arrays in, arrays out.

``same_core`` walks each core's puts and overwrites in program order; ``cross_core`` pairs
the puts and the overwrites of another core of the rank that no barrier orders.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._jit import kernel
from .analysis import codes as C

K_BEGIN = C.K_BEGIN


class Span(NamedTuple):
    """Per listed row, the words [lo, hi) of ``region`` it reads (a put's source) or writes."""
    region: np.ndarray
    lo: np.ndarray
    hi: np.ndarray


class Sorted(NamedTuple):
    """Puts or overwrites sorted by (bucket, lo): their (rank, launch, region) bucket, words, core and
    core barrier phase."""
    bucket: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    core: np.ndarray
    phase: np.ndarray


class Steps(NamedTuple):
    """The rows ``_same_core`` walks, ascending: kernel begins, sourced puts and overwrites (a put to
    its own rank is both), with each one's index among the puts and among the overwrites (-1: not one)."""
    row: np.ndarray
    begin: np.ndarray
    put: np.ndarray
    write: np.ndarray


@kernel
def same_core(seg, steps, put_rows, target, source, cover, out):
    # Per core, in program order: the sourced puts still outstanding (no quiet has completed them
    # yet); an overwrite of their source words before that quiet is a hit (out: per overwrite, the
    # put's index). The list grows as it must: a cap would drop the oldest put, and a refill of
    # its source would go unseen. seg: each core's first step.
    treg, tlo, thi = target
    lreg, slo, shi = source
    for s in range(len(seg) - 1):
        pending = np.empty(64, np.int64)
        n = 0
        for e in range(seg[s], seg[s + 1]):
            if steps.begin[e]:
                n = 0
                continue
            i, w = steps.row[e], steps.write[e]
            if w >= 0 and n:
                keep = 0
                for j in range(n):
                    p = pending[j]
                    done = cover[put_rows[p]]
                    if done >= 0 and done < i:
                        continue  # completed: its source is free again
                    pending[keep] = p
                    keep += 1
                    if out[w] < 0 and lreg[p] == treg[w] and slo[p] < thi[w] and tlo[w] < shi[p]:
                        out[w] = p
                n = keep
            if steps.put[e] >= 0:
                if n == len(pending):
                    bigger = np.empty(2 * n, np.int64)
                    bigger[:n] = pending
                    pending = bigger
                pending[n] = steps.put[e]
                n += 1


@kernel
def cross_core(puts, pmax, pcov, writes, out_p):
    # Puts sorted by (bucket, source start), pmax the running maximum of their source ends per
    # bucket, pcov the phase of their quiet; overwrites sorted by (bucket, start). A put pairs with
    # an overwrite of another core of its rank when their words meet and no barrier orders the
    # overwrite before the put or after the put's quiet: the overwrite's phase lies in
    # [put phase, quiet phase].
    pb, plo, phi, pcore, pph = puts
    wb, wlo, whi, wcore, wph = writes
    lo = 0
    for w in range(len(wb)):
        while lo < len(pb) and (pb[lo] < wb[w] or (pb[lo] == wb[w] and pmax[lo] <= wlo[w])):
            lo += 1
        j = lo
        while j < len(pb) and pb[j] == wb[w] and plo[j] < whi[w]:
            if phi[j] > wlo[w] and pcore[j] != wcore[w] and pph[j] <= wph[w] and wph[w] <= pcov[j]:
                out_p[w] = j
                break
            j += 1


@kernel
def running_max(bucket, values, out):
    # The running maximum of values within each run of equal (sorted) bucket.
    for i in range(len(values)):
        if i == 0 or bucket[i] != bucket[i - 1] or values[i] > out[i - 1]:
            out[i] = values[i]
        else:
            out[i] = out[i - 1]
