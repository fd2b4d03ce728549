"""The word table's fast form: one packed int64 key per entry, one in-place sort.

Each entry's (key, launch, phase, selected row, signal-word bit) is packed
into one unique int64, so a plain sort gives exactly the order ``_words``
documents, without argsorts or gathers of per-entry copies. Returns None where
the packed key would overflow; ``_words`` then uses its lexsort form.

After the sort the entries of one word sit far apart from their rows, so every
per-row field an entry needs is first copied into ``info``, one 32-byte line per
selected row (a few million rows, not the trace's ten): decoding an entry then
costs one cache miss instead of one per column it reads.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from . import _passes as P
from . import codes as C
from . import regions as R
from ._words_squeeze import squeeze
from ._words_table import NULL64, OP_ADD, Words, widest

K_SIGNAL, K_AMO, K_PUT, K_WRITE, K_GET, K_PUTSIG = C.K_SIGNAL, C.K_AMO, C.K_PUT, C.K_WRITE, C.K_GET, C.K_PUTSIG
K_WEND, OP_SET = C.K_WEND, C.OP_SET
# info[s, 3] bit fields: payload region, signal-word region, op + 128, payload keeps its op
# (a scalar signal / amo; bulk words are sets), payload value unknown (get, put_signal), kind.
_SREG, _OP, _SCALAR, _PNULL, _KIND = 16, 32, 48, 49, 50


@kernel
def _rows(fill, kind, treg, offset, loffset, ext, sig_region, sig_offset, key, owner, launch, phase,
          rank, core, value, op, flaglike, length, base, wpr, cp1, kmin, lmin, lspan, phmin, nph, ns,
          strict, info, pk):
    # fill False: count selected rows and entries and the key range; True: write info and pk.
    # strict (keys renumbered by _words_squeeze): a word outside its flag-like region has no
    # renumbered key; the count pass then returns s = -1.
    s = 0
    j = 0
    klo = np.int64(2**62)
    khi = np.int64(-2**62)
    for i in range(len(kind)):
        k = kind[i]
        r = treg[i]
        c = 0  # payload words
        scalar = False
        if r >= 0 and flaglike[r]:
            if k == K_SIGNAL or k == K_AMO:
                c = 1
                scalar = True
            elif k == K_PUT or k == K_WRITE or k == K_GET or k == K_PUTSIG:
                o = loffset[i] if k == K_GET else offset[i]
                if o >= 0:
                    c = max(min(ext[i], length[r] - o), 0)  # clip: overflow is MT303's
        sr = sig_region[i] if k == K_PUTSIG else -1
        sig = sr >= 0 and flaglike[sr]
        if c == 0 and not sig:
            continue
        ks = owner[i] * wpr + base[max(sr, 0)] + sig_offset[i]
        if strict and ((c > 0 and key[i] < 0) or (sig and not 0 <= sig_offset[i] < length[sr])):
            return -1, 0, klo, khi
        if not fill:
            if c > 0:
                klo = min(klo, key[i])
                khi = max(khi, key[i] + c - 1)
            if sig:
                klo = min(klo, ks)
                khi = max(khi, ks)
            s += 1
            j += c + (1 if sig else 0)
            continue
        info[s, 0] = i
        info[s, 1] = rank[i] * cp1 + core[i]
        info[s, 2] = value[i]
        info[s, 3] = ((r & 0xFFFF) | ((sr & 0xFFFF) << _SREG) | ((op[i] + 128) << _OP)
                      | (np.int64(scalar) << _SCALAR) | (np.int64(k == K_GET or k == K_PUTSIG) << _PNULL)
                      | (np.int64(k) << _KIND))
        lp = launch[i] - lmin
        ph = phase[i] - phmin
        for x in range(c):
            pk[j] = ((((key[i] + x - kmin) * lspan + lp) * nph + ph) * ns + s) * 2
            j += 1
        if sig:
            pk[j] = ((((ks - kmin) * lspan + lp) * nph + ph) * ns + s) * 2 + 1
            j += 1
        s += 1
    return s, j, klo, khi


@kernel
def _wait_keys(fill, kind, key, e2b, words, launch, rank, core, kmin, kmax, lmin, lspan, rcs, cp1, strict,
               room, out):
    # One entry per word a completed-or-not wait_end covers: ((ck, rank/core), row), packed.
    # strict: keys renumbered (room: words left in the key's flag-like region); a wait on no
    # flag-like word matches no entry, one running out of its region returns -1.
    n = len(kind)
    j = 0
    for i in range(n):
        if kind[i] != K_WEND:
            continue
        b = e2b[i]
        nw = 1
        if b >= 0 and words[b] > 0:
            nw = words[b]  # a multi-word wait covers each of its words
        if strict and room[i] >= 0 and nw > room[i] and (key[i] >= 0 or nw > 1):
            return -1
        if key[i] < 0:
            continue
        for x in range(nw):
            wk = key[i] + x
            if wk < kmin or wk > kmax:
                continue
            if fill:
                out[j] = ((((wk - kmin) * lspan + (launch[i] - lmin)) * rcs + rank[i] * cp1 + core[i])) * n + i
            j += 1
    return j


@kernel
def _unpack(pk, ns, nph, phmin, lspan, kmin, lmin, wp, n, info, rcs, reset, has_reset,
            fwords, flag_base, orig_base, wpr,
            o_row, o_reg, o_phase, o_op, o_value, o_after, o_last, o_kind):
    # Per (ck, phase) group of the sorted pk: decode, move the writes after a wait of
    # their core on the word behind the others (stable), simulate. pk becomes ck (keys
    # renumbered by _words_squeeze when fwords > 0: decoded back to the trace's keys).
    m = len(pk)
    g = len(wp)
    span = 2 * ns
    ck_lo = kmin * lspan
    # Scratch sized once for the largest group: an array variable reassigned in the loop makes
    # numba count references on every inner iteration.
    longest = 0
    i = 0
    while i < m:
        e = i
        hi_pk = (pk[i] // span + 1) * span
        while e < m and pk[e] < hi_pk:
            e += 1
        longest = max(longest, e - i)
        i = e
    buf = np.empty(5 * longest, np.int64)  # the after-wait entries of a group, parked (5 fields each)
    flag = np.empty(longest, np.bool_)
    j = 0
    i = 0
    cur = np.int64(0)
    known = False
    prev_key = np.int64(-1)
    while i < m:
        grp = pk[i] // span
        ck_off = grp // nph
        lo_pk = grp * span
        hi_pk = lo_pk + span
        while j < g and wp[j] < ck_off * rcs * n:
            j += 1
        jend = j
        while jend < g and wp[jend] < (ck_off + 1) * rcs * n:
            jend += 1
        e = i
        while e < m and pk[e] < hi_pk:
            e += 1
        naw = 0
        for q in range(i, e):
            s = (pk[q] - lo_pk) >> 1
            row = info[s, 0]
            a = False
            if jend > j:  # the same (key, launch, rank/core) waited at an earlier row
                t = (ck_off * rcs + info[s, 1]) * n
                kk = j + np.searchsorted(wp[j:jend], t)  # its first wait, if any
                a = kk < jend and wp[kk] < t + row
            flag[q - i] = a
            naw += a
            meta = info[s, 3]
            v = info[s, 2]
            opv = ((meta >> _OP) & 0xFF) - 128
            if pk[q] & 1:
                o_reg[q] = (meta >> _SREG) & 0xFFFF
            else:
                o_reg[q] = meta & 0xFFFF
                if not (meta >> _SCALAR) & 1:
                    opv = OP_SET
                if (meta >> _PNULL) & 1:
                    v = NULL64
            o_row[q] = row
            o_kind[q] = (meta >> _KIND) & 0xFF
            o_op[q] = opv
            o_value[q] = v
        if naw and naw < e - i:  # stable partition: the after-wait entries go last
            t = 0
            p = i
            for q in range(i, e):
                if flag[q - i]:
                    buf[5 * t] = o_row[q]
                    buf[5 * t + 1] = o_reg[q]
                    buf[5 * t + 2] = o_op[q]
                    buf[5 * t + 3] = o_value[q]
                    buf[5 * t + 4] = o_kind[q]
                    t += 1
                else:
                    o_row[p] = o_row[q]
                    o_reg[p] = o_reg[q]
                    o_op[p] = o_op[q]
                    o_value[p] = o_value[q]
                    o_kind[p] = o_kind[q]
                    p += 1
            for x in range(t):
                o_row[p + x] = buf[5 * x]
                o_reg[p + x] = buf[5 * x + 1]
                o_op[p + x] = buf[5 * x + 2]
                o_value[p + x] = buf[5 * x + 3]
                o_kind[p + x] = buf[5 * x + 4]
        key = ck_off // lspan + kmin
        ph = grp % nph + phmin
        last_ck = e == m or pk[e] // span // nph != ck_off
        ck_out = ck_off + ck_lo
        if fwords > 0:
            owner = key // fwords
            rest = key - owner * fwords
            r = np.searchsorted(flag_base, rest, "right") - 1
            ck_out = (owner * wpr + orig_base[r] + rest - flag_base[r]) * lspan + ck_off % lspan
        for q in range(i, e):
            o_phase[q] = ph
            pk[q] = ck_out
            if q == 0 or key != prev_key:
                cur = reset[o_reg[q]]
                known = has_reset[o_reg[q]]
                prev_key = key
            v = o_value[q]
            if v == NULL64:
                known = False
            elif o_op[q] == OP_ADD:
                cur += v
            else:
                cur = v
                known = True
            o_after[q] = cur if known else NULL64
            o_last[q] = q + 1 == e and last_ck
        i = e


def build_packed(trace) -> Words | None:
    n = trace.n
    if not n:
        return None
    kind = trace["kind"]
    rt = R.region_table(trace)
    key = trace.key
    launch = trace["launch"]
    lmin = int(launch.min())
    lspan = int(launch.max()) - lmin + 2
    phase_all, _ = P.phases(trace)
    phmin = int(phase_all.min())
    nph = int(phase_all.max()) - phmin + 1
    rank, core = trace["rank"], trace["core"]
    cp1 = trace.manifest.cores + 1
    if int(rank.min()) < 0 or int(core.min()) < 0 or int(core.max()) >= cp1:
        return None
    rcs = (int(rank.max()) + 1) * cp1
    offset = trace["offset"]
    loffset = trace["local_offset"] if bool((kind == K_GET).any()) else offset
    ext = R.extent(trace)
    if len(ext) and int(ext.max()) > widest(trace):  # a copy only for the rare trace that needs one
        ext = np.minimum(ext, widest(trace))
    cols = (kind, R.target_region(trace), offset, loffset, ext, trace["sig_region"],
            trace["sig_offset"], key, trace.owner, launch, phase_all, rank, core, trace["value"], trace["op"],
            rt["flaglike"], rt["length"], rt["base"], np.int64(trace.manifest.words_per_rank), np.int64(cp1))
    spans = (np.int64(lmin), np.int64(lspan), np.int64(phmin), np.int64(nph))
    none = np.zeros(0, np.int64)
    _, e2b = P.wait_pairs(trace)
    wcols = (kind, key, e2b, trace.wait_words, launch, rank, core)
    wspans = (np.int64(lmin), np.int64(lspan), np.int64(rcs), np.int64(cp1))
    room = np.zeros(0, np.int32)
    fit = _fit(cols, spans, wcols, wspans, False, room, lspan, nph, rcs, n)
    sq = None
    if fit is not None and not fit[1]:
        return None
    if fit is None:  # keys too far apart to pack: renumber them over the flag-like words
        sq = squeeze(trace, rt)
        if sq is None:
            return None
        cols = cols[:7] + (sq.key,) + cols[8:17] + (sq.base, np.int64(sq.words)) + cols[19:]
        wcols = (kind, sq.key) + wcols[2:]
        fit = _fit(cols, spans, wcols, wspans, True, sq.room, lspan, nph, rcs, n)
        if fit is None:
            return None
    ns, m, kmin, kmax, wn = fit
    strict = sq is not None
    info = np.empty((ns, 4), np.int64)
    pk = np.empty(m, np.int64)
    _rows(True, *cols, np.int64(kmin), *spans, np.int64(ns), strict, info, pk)
    del cols
    pk.sort()

    # Waits by (ck, rank/core), then row: a group's first wait is where a search for the group lands.
    wargs = (*wcols, np.int64(kmin), np.int64(kmax), *wspans, strict, sq.room if strict else room)
    wp = np.empty(wn, np.int64)
    _wait_keys(True, *wargs, wp)
    wp.sort()
    decode = (np.int64(sq.words), sq.flag_base, sq.orig_base) if strict else (np.int64(0), none, none)

    value, after = np.empty(m, np.int64), np.empty(m, np.int64)
    row = np.empty(m, C.row_dtype(n))
    reg, wph, op = np.empty(m, np.int16), np.empty(m, np.int32), np.empty(m, np.int8)
    last, wkind = np.empty(m, bool), np.empty(m, np.int8)
    _unpack(pk, np.int64(ns), np.int64(nph), np.int64(phmin), np.int64(lspan), np.int64(kmin), np.int64(lmin),
            wp, np.int64(n), info, np.int64(rcs), rt["reset"], rt["has_reset"],
            *decode, np.int64(trace.manifest.words_per_rank),
            row, reg, wph, op, value, after, last, wkind)
    return Words(row, reg, wph, op, value, after, last, pk, lmin, lspan, wkind)


def _fit(cols, spans, wcols, wspans, strict, room, lspan, nph, rcs, n):
    """The count passes: (rows, entries, key range, wait entries), or None where a key is out of
    its flag-like region (``strict``) or the packed keys would overflow; entries 0: no table."""
    none = np.zeros(0, np.int64)
    ns, m, kmin, kmax = _rows(False, *cols, np.int64(0), *spans, np.int64(1), strict, none.reshape(0, 4), none)
    if ns < 0:
        return None
    if not m:
        return 0, 0, 0, 0, 0
    cspan = (kmax - kmin + 1) * lspan
    if cspan * nph * ns * 2 >= 2**62 or cspan * rcs * n >= 2**62:
        return None
    wn = _wait_keys(False, *wcols, np.int64(kmin), np.int64(kmax), *wspans, strict, room, none)
    return None if wn < 0 else (ns, m, kmin, kmax, wn)
