"""Every word write into a flag-like region, one entry per word, grouped by key.

Flag-like: role flag or counter, or a region with ``reset`` or ``monotonic``.
Sources: signal and amo (one word), put_signal's signal word, puts / local
writes / get destinations into a flag-like region (one entry per element).
Payload regions are never expanded, so the cost stays with the control words;
and where a region is written and waited on in whole slots only, one entry
stands for each slot's words (``_units``: its words have one history).

The entries are sorted once by (key, launch, phase_all, after_wait, row):
within a launch, a write that follows a wait on the same word on the same
core comes after the write that satisfied that wait (the usual "wait, then
reset" of a consumer), and a later barrier phase comes after an earlier one.
Writes the trace cannot order stay in row order; the simulated values
(``after``: the word after each write) are then one possible history.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from . import _passes as P
from . import _phases
from . import codes as C
from . import regions as R
from ._cache import cached
from ._units import word_units
from ._words_packed import build_packed
from ._words_table import NULL64, OP_ADD, Words, widest
from .stages import Stage


def expand(first_key, count, stride=None):
    """Keys first_key[i] .. first_key[i]+count[i]-1 and the source index of each; with ``stride``
    (per i), every stride[i]-th of them only, from the first (as ``range(0, count, stride)``)."""
    count = np.maximum(count, 0)
    if stride is not None:
        count = -(-count // stride)
    src = np.repeat(np.arange(len(count), dtype=np.int64), count)
    start = np.cumsum(count) - count
    within = np.arange(len(src), dtype=np.int64) - np.repeat(start, count)
    return first_key[src] + (within if stride is None else within * stride[src]), src


def expand_onto(first_key, count, stride, keys):
    """``expand(first_key, count, stride)``, only the keys in ``keys`` (sorted, distinct): a wait's
    words that nothing writes order nothing, and a wait may cover billions of them."""
    count = np.maximum(count, 0)
    lo = np.searchsorted(keys, first_key)
    hi = np.searchsorted(keys, first_key + count)
    at, src = expand(lo, hi - lo)
    out = keys[at]
    on = (out - first_key[src]) % stride[src] == 0
    return out[on], src[on]


@kernel
def _after_wait_kernel(gk, rc, is_wait, out):
    # Sorted by (key, launch, rank/core, row): a write after a wait of its group.
    seen = False
    for i in range(len(gk)):
        if i == 0 or gk[i] != gk[i - 1] or rc[i] != rc[i - 1]:
            seen = False
        if is_wait[i]:
            seen = True
        else:
            out[i] = seen


@kernel
def _simulate(key, launch, op, value, init, init_known, after, last):
    cur = 0
    known = False
    for i in range(len(key)):
        if i == 0 or key[i] != key[i - 1]:
            cur = init[i]
            known = init_known[i]
        v = value[i]
        if op[i] == OP_ADD:
            if v == NULL64:
                known = False
            else:
                cur += v
        else:
            if v == NULL64:
                known = False
            else:
                cur = v
                known = True
        after[i] = cur if known else NULL64
        last[i] = i + 1 == len(key) or key[i + 1] != key[i] or launch[i + 1] != launch[i]


def signal_words(trace, rt):
    """put_signal rows whose signal word is flag-like: (rows, sig region, key of the word).

    The signal word lives in its sig_region at the peer, not where the payload goes.
    """
    kind = trace["kind"]
    ps = np.flatnonzero(kind == C.K_PUTSIG)
    sreg = trace.carried("sig_region")[ps].astype(np.int64) if len(ps) else ps
    ok = sreg >= 0
    ps, sreg = ps[ok], sreg[ok]
    ok = rt["flaglike"][sreg]
    ps, sreg = ps[ok], sreg[ok]
    wpr = trace.manifest.words_per_rank
    kps = trace.owner[ps].astype(np.int64) * wpr + rt["base"][sreg] + trace.carried("sig_offset")[ps]
    return ps, sreg, kps


def words(trace) -> Words:
    return cached(trace, "words", lambda: _build(trace), Stage.WORD_TABLE)


def _build(trace) -> Words:
    w = build_packed(trace)
    return w if w is not None else _build_lexsort(trace)


def _build_lexsort(trace) -> Words:
    """The general form: lexsorts over int64 copies; used when the packed keys would overflow."""
    kind = trace["kind"]
    rt = R.region_table(trace)
    key = trace.key
    reg = R.target_region(trace)
    flaglike = np.where(reg >= 0, rt["flaglike"][np.where(reg >= 0, reg, 0)], False)
    ext = R.extent(trace)
    # Whole-trace temporaries only where needed: each is 8 bytes/event at its peak.
    has_get = bool((kind == C.K_GET).any())
    offset = np.where(kind == C.K_GET, trace["local_offset"], trace["offset"]) if has_get else trace["offset"]
    room = rt["length"][np.where(reg >= 0, reg, 0)] - offset  # clip: overflow is MT303's
    value = np.asarray(trace["value"], dtype=np.int64)
    op = trace["op"]

    one = C.one_of(kind, (C.K_SIGNAL, C.K_AMO)) & flaglike
    multi = C.one_of(kind, (C.K_PUT, C.K_WRITE, C.K_GET, C.K_PUTSIG)) & flaglike & (offset >= 0)
    r1 = np.flatnonzero(one)
    rm = np.flatnonzero(multi)
    unit = word_units(trace)
    km, src = expand(key[rm], np.minimum(np.minimum(ext[rm], room[rm]), widest(trace)), unit[reg[rm]])
    rows_m = rm[src]
    ps, sreg, kps = signal_words(trace, rt)

    rows = np.concatenate((r1, rows_m, ps))
    wkey = np.concatenate((key[r1], km, kps))
    wreg = np.concatenate((reg[r1], reg[rows_m], sreg))
    wop = np.concatenate((op[r1].astype(np.int64), np.full(len(rows_m), C.OP_SET, np.int64), op[ps].astype(np.int64)))
    # A get's destination value is unknown; so is a payload word a put_signal carries.
    mval = np.where(np.isin(kind[rows_m], (C.K_GET, C.K_PUTSIG)), C.NULL64, value[rows_m])
    wval = np.concatenate((value[r1], mval, value[ps]))
    launch = trace["launch"]
    wl = launch[rows].astype(np.int64)
    launch_min = int(launch.min()) if trace.n else 0
    launch_span = (int(launch.max()) - launch_min + 2) if trace.n else 1
    key_launch = wkey * launch_span + (wl - launch_min)

    # after_wait: merge with the wait_ends of the same keys.
    # A multi-word wait (`words` on its begin) covers each of its words.
    we = np.flatnonzero((kind == C.K_WEND) & (key >= 0))
    _, e2b = P.wait_pairs(trace)
    nw = trace.wait_words[np.maximum(e2b[we], 0)].astype(np.int64)
    nw = np.where((e2b[we] >= 0) & (nw > 0), nw, 1)
    wreg_e = trace["region"][we].astype(np.int64)
    wk, wsrc = expand_onto(key[we], nw, np.where((wreg_e >= 0) & (wreg_e < len(unit)), unit[np.maximum(wreg_e, 0)], 1),
                           np.unique(wkey))
    we = we[wsrc]
    both = np.concatenate((rows, we))
    mrc = trace["rank"][both].astype(np.int64) * (trace.manifest.cores + 1) + trace["core"][both]
    mk = np.concatenate((key_launch, wk * launch_span + (launch[we].astype(np.int64) - launch_min)))
    mrow = both
    mw = np.concatenate((np.zeros(len(rows), bool), np.ones(len(we), bool)))
    order = np.lexsort((mrow, mrc, mk))
    aw_sorted = np.zeros(len(order), bool)
    if len(order):
        _after_wait_kernel(mk[order], mrc[order], mw[order], aw_sorted)
    aw = np.zeros(len(mk), bool)
    aw[order] = aw_sorted
    aw = aw[: len(rows)]

    phase_all, _ = _phases.phases(trace)
    wph = phase_all[rows].astype(np.int64)
    order = np.lexsort((rows, aw, wph, key_launch))
    rows, wkey, wreg, wl, wph, wop, wval, key_launch = (a[order] for a in (rows, wkey, wreg, wl, wph, wop, wval,
                                                                          key_launch))
    init = rt["reset"][wreg]
    init_known = rt["has_reset"][wreg]
    after = np.zeros(len(rows), np.int64)
    last = np.zeros(len(rows), bool)
    if len(rows):
        _simulate(wkey, wl, wop, wval, init, init_known, after, last)
    # The packed form's dtypes: rows, region, phase and op as narrow as their columns.
    return Words(rows.astype(C.row_dtype(trace.n)), wreg.astype(np.int16), wph.astype(np.int32),
                 wop.astype(np.int8), wval, after, last, key_launch, launch_min, launch_span, kind[rows], unit)


# ---- packed form ------------------------------------------------------------
# The order (key, launch, phase_all, after_wait, row) packed into one unique
# int64 per entry, ((key_launch * nph + phase) * n + row) * 2 + is_putsig_signal, and
# sorted in place (no argsort, no gathers of entry arrays): every field of an
# entry decodes from it and the row's columns.  after_wait is not in the key:
# it only reorders entries within a (key_launch, phase) group, which the final pass
# does as a stable partition.  Ties of (key, row) exist only between a
# put_signal's payload word and its signal word, and is_putsig_signal orders
# them as the concatenation did.
