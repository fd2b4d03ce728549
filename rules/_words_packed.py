"""The word table's fast form: one packed int64 key per entry, one in-place sort.

Each entry's (key, launch, phase, row, signal-word bit) is packed into one
unique int64, so a plain sort gives exactly the order ``_words`` documents,
without argsorts or gathers of per-entry copies; one numba pass then decides
"after a wait", decodes the fields and simulates the word values. Returns
None where the packed key would overflow; ``_words`` then uses its lexsort form.
"""

from __future__ import annotations

import numpy as np

from . import _passes as P
from ._jit import kernel
from ._words import NULL64, OP_ADD, Words, _expand, signal_words


@kernel
def _pack(r1, rm, cnt, ps, kps, key, launch, phase, kmin, lmin, lspan, phmin, nph, n, out):
    j = 0
    for i in range(len(r1)):
        r = r1[i]
        ck = (key[r] - kmin) * lspan + (launch[r] - lmin)
        out[j] = ((ck * nph + (phase[r] - phmin)) * n + r) * 2
        j += 1
    for i in range(len(rm)):
        r = rm[i]
        base = (key[r] - kmin) * lspan + (launch[r] - lmin)
        ph = phase[r] - phmin
        for c in range(cnt[i]):
            out[j] = (((base + c * lspan) * nph + ph) * n + r) * 2
            j += 1
    for i in range(len(ps)):
        r = ps[i]
        ck = (kps[i] - kmin) * lspan + (launch[r] - lmin)
        out[j] = ((ck * nph + (phase[r] - phmin)) * n + r) * 2 + 1
        j += 1


@kernel
def _unpack(pk, n, nph, phmin, lspan, kmin, lmin, gk, grow, rank, core, cp1, rcs,
            kind, reg, sig_region, op, value, k_signal, k_amo, k_get, k_putsig, op_set, reset, has_reset,
            o_row, o_key, o_reg, o_launch, o_phase, o_op, o_value, o_ck, o_after, o_last, aw):
    m = len(pk)
    g = len(gk)
    ck_lo = kmin * lspan
    j = 0  # first wait group of this entry's ck
    i = 0
    while i < m:
        grp = pk[i] // (2 * n)  # ck_off * nph + phase
        ck_off = grp // nph
        while j < g and gk[j] < ck_off * rcs:
            j += 1
        jend = j
        while jend < g and gk[jend] < (ck_off + 1) * rcs:
            jend += 1
        # after_wait: the same (key, launch, rank/core) waited at an earlier row.
        e = i
        zeros = 0
        while e < m and pk[e] // (2 * n) == grp:
            row = (pk[e] >> 1) % n
            a = False
            if jend > j:
                t = ck_off * rcs + rank[row] * cp1 + core[row]
                k = j + np.searchsorted(gk[j:jend], t)
                a = k < jend and gk[k] == t and grow[k] < row
            aw[e] = a
            if not a:
                zeros += 1
            e += 1
        key = ck_off // lspan + kmin
        la = ck_off % lspan + lmin
        ph = grp % nph + phmin
        p0 = i
        p1 = i + zeros
        for q in range(i, e):
            if aw[q]:
                pos = p1
                p1 += 1
            else:
                pos = p0
                p0 += 1
            row = (pk[q] >> 1) % n
            kd = kind[row]
            if pk[q] & 1:
                o_reg[pos] = sig_region[row]
                o_op[pos] = op[row]
                o_value[pos] = value[row]
            elif kd == k_signal or kd == k_amo:
                o_reg[pos] = reg[row]
                o_op[pos] = op[row]
                o_value[pos] = value[row]
            else:
                o_reg[pos] = reg[row]
                o_op[pos] = op_set
                o_value[pos] = NULL64 if (kd == k_get or kd == k_putsig) else value[row]
            o_row[pos] = row
            o_key[pos] = key
            o_launch[pos] = la
            o_phase[pos] = ph
            o_ck[pos] = ck_off + ck_lo
        i = e
    cur = 0
    known = False
    for i in range(m):
        if i == 0 or o_key[i] != o_key[i - 1]:
            cur = reset[o_reg[i]]
            known = has_reset[o_reg[i]]
        v = o_value[i]
        if v == NULL64:
            known = False
        elif o_op[i] == OP_ADD:
            cur += v
        else:
            cur = v
            known = True
        o_after[i] = cur if known else NULL64
        o_last[i] = i + 1 == m or o_key[i + 1] != o_key[i] or o_launch[i + 1] != o_launch[i]


def build_packed(trace) -> Words | None:
    n = trace.n
    if not n:
        return None
    kind = trace["kind"]
    rt = P.region_table(trace)
    key = trace.key
    reg = P.target_region(trace)
    flaglike = np.where(reg >= 0, rt["flaglike"][np.where(reg >= 0, reg, 0)], False)
    one = np.isin(kind, (P.K_SIGNAL, P.K_AMO)) & flaglike
    r1 = np.flatnonzero(one)
    del one
    has_get = bool((kind == P.K_GET).any())
    offset = np.where(kind == P.K_GET, trace["local_offset"], trace["offset"]) if has_get else trace["offset"]
    rm = np.flatnonzero(np.isin(kind, (P.K_PUT, P.K_WRITE, P.K_GET, P.K_PUTSIG)) & flaglike & (offset >= 0))
    del flaglike
    room = rt["length"][reg[rm]] - offset[rm]  # clip: overflow is MT303's
    del offset
    cnt = np.maximum(np.minimum(P.extent(trace)[rm], room), 0)
    del room
    ps, sreg, kps = signal_words(trace, rt)
    m = len(r1) + int(cnt.sum()) + len(ps)
    if not m:
        return None
    launch = trace["launch"]
    lmin = int(launch.min())
    lspan = int(launch.max()) - lmin + 2
    phase_all, _ = P.phases(trace)
    phmin = int(phase_all.min())
    nph = int(phase_all.max()) - phmin + 1
    has = cnt > 0
    km = key[rm][has]
    kmin = min(int(a.min()) for a in (key[r1], km, kps) if len(a))
    kmax = max(int(a.max()) for a in (key[r1], km + cnt[has] - 1, kps) if len(a))
    del km, has
    rank, core = trace["rank"], trace["core"]
    cp1 = trace.manifest.cores + 1
    if int(rank.min()) < 0 or int(core.min()) < 0 or int(core.max()) >= cp1:
        return None
    rcs = (int(rank.max()) + 1) * cp1
    cspan = (kmax - kmin + 1) * lspan
    if cspan * nph * n * 2 >= 2**62 or cspan * rcs * n >= 2**62:
        return None

    pk = np.empty(m, np.int64)
    _pack(r1, rm, cnt, ps, kps, key, launch, phase_all, kmin, lmin, lspan, phmin, nph, n, pk)
    del r1, rm, cnt, ps, kps
    pk.sort()

    # Wait groups (ck, rank/core) with their first row; a multi-word wait covers each word.
    we = np.flatnonzero((kind == P.K_WEND) & (key >= 0))
    _, e2b = P.wait_pairs(trace)
    nw = trace["words"].astype(np.int64)[np.maximum(e2b[we], 0)]
    nw = np.where((e2b[we] >= 0) & (nw > 0), nw, 1)
    wk, wsrc = _expand(key[we], nw)
    we = we[wsrc]
    ok = (wk >= kmin) & (wk <= kmax)
    wk, we = wk[ok], we[ok]
    wp = (((wk - kmin) * lspan + (launch[we].astype(np.int64) - lmin)) * rcs
          + rank[we].astype(np.int64) * cp1 + core[we]) * n + we
    del wk, we, wsrc, nw, ok
    wp.sort()
    wg = wp // n
    first = np.ones(len(wp), bool)
    first[1:] = wg[1:] != wg[:-1]
    gk, grow = wg[first], wp[first] % n
    del wp, wg, first

    o = [np.empty(m, np.int64) for _ in range(9)]
    last = np.empty(m, bool)
    aw = np.empty(m, bool)
    value = trace["value"]
    _unpack(pk, n, nph, phmin, lspan, kmin, lmin, gk, grow, rank, core, cp1, rcs,
            kind, reg, trace["sig_region"], trace["op"], value, P.K_SIGNAL, P.K_AMO, P.K_GET, P.K_PUTSIG,
            P.OP_SET, rt["reset"], rt["has_reset"], *o, last, aw)
    row, wkey, wreg, wl, wph, wop, wval, ck, after = o
    return Words(row, wkey.astype(key.dtype, copy=False), wreg, wl, wph, wop, wval, after, last, ck, lmin, lspan)
