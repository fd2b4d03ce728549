"""The word table's packed-key kernels (``_words_packed`` is their glue): typed arrays in, arrays out.

``pack_rows`` packs each entry's (key, launch, phase, selected row, signal-word bit)
into one unique int64 and copies the per-row fields an entry needs into
``info`` (one 32-byte line per selected row); ``pack_wait_keys`` packs the waits by
(key, rank/core); ``unpack`` decodes the sorted keys into the table's columns.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._jit import kernel
from . import codes as C
from ._words_table import NULL64, OP_ADD

K_SIGNAL, K_AMO, K_PUT, K_WRITE, K_GET, K_PUTSIG = C.K_SIGNAL, C.K_AMO, C.K_PUT, C.K_WRITE, C.K_GET, C.K_PUTSIG
K_WEND, OP_SET = C.K_WEND, C.OP_SET
# info[s, 3] bit fields: payload region, signal-word region, op + 128, payload keeps its op
# (a scalar signal / amo; bulk words are sets), payload value unknown (get, put_signal), kind.
_SREG, _OP, _SCALAR, _PNULL, _KIND = 16, 32, 48, 49, 50


class Rows(NamedTuple):
    """What ``pack_rows`` reads: per-event columns, then per-region tables (a tuple: numba takes it whole)."""
    kind: np.ndarray
    target_region: np.ndarray
    offset: np.ndarray
    local_offset: np.ndarray  # a get's payload offset (offset where the trace has no get)
    extent: np.ndarray        # words a write covers, clipped to ``widest``
    sig_region: np.ndarray
    sig_offset: np.ndarray
    key: np.ndarray           # element key (renumbered by _words_squeeze in the strict pass)
    owner: np.ndarray
    launch: np.ndarray
    phase: np.ndarray
    rank: np.ndarray
    core: np.ndarray
    value: np.ndarray
    op: np.ndarray
    flaglike: np.ndarray      # per region
    length: np.ndarray        # per region: words
    base: np.ndarray          # per region: first word within its owner's keys
    unit: np.ndarray          # per region: words one entry stands for (``_units``)
    words_per_owner: np.int64  # key stride of one owner (rank)


class Waits(NamedTuple):
    """What ``pack_wait_keys`` reads, per event, and the words an entry stands for per region."""
    kind: np.ndarray
    key: np.ndarray
    wait_begin: np.ndarray  # a wait_end's wait_begin row (-1: none)
    words: np.ndarray       # words a wait covers, per wait_begin
    launch: np.ndarray
    rank: np.ndarray
    core: np.ndarray
    region: np.ndarray
    unit: np.ndarray        # per region


class Packing(NamedTuple):
    """The ranges the packed keys are built over (all int64): key x launch x phase x selected row."""
    key_min: np.int64
    key_max: np.int64
    launch_min: np.int64
    launch_span: np.int64
    phase_min: np.int64
    phases: np.int64
    selected: np.int64      # rows with an entry (info's rows)
    rank_cores: np.int64    # ranks x cores_plus_one: a wait key's (rank, core) span
    cores_plus_one: np.int64
    events: np.int64


class Unsqueeze(NamedTuple):
    """What ``unpack`` needs per region and to decode renumbered keys (squeezed_words 0: not renumbered)."""
    reset: np.ndarray
    has_reset: np.ndarray
    squeezed_words: np.int64
    flag_base: np.ndarray
    orig_base: np.ndarray
    words_per_rank: np.int64


class Entries(NamedTuple):
    """``unpack``'s outputs, one per table entry (the Words fields it fills)."""
    row: np.ndarray
    region: np.ndarray
    phase: np.ndarray
    op: np.ndarray
    value: np.ndarray
    after: np.ndarray
    last: np.ndarray
    kind: np.ndarray


@kernel
def pack_rows(fill, rows, packing, strict, info, packed):
    # fill False: count selected rows and entries and the key range; True: write info and packed.
    # strict (keys renumbered by _words_squeeze): a word outside its flag-like region has no
    # renumbered key; the count pass then returns s = -1.
    (kind, treg, offset, loffset, ext, sig_region, sig_offset, key, owner, launch, phase, rank, core,
     value, op, flaglike, length, base, unit, words_per_owner) = rows
    key_min, launch_min, launch_span = packing.key_min, packing.launch_min, packing.launch_span
    phase_min, phases, selected = packing.phase_min, packing.phases, packing.selected
    cores_plus_one = packing.cores_plus_one
    s = 0
    j = 0
    key_lo = np.int64(2**62)
    key_hi = np.int64(-2**62)
    for i in range(len(kind)):
        k = kind[i]
        r = treg[i]
        c = 0  # payload words
        u = 1  # words an entry stands for: the payload's entries are its words c in steps of u
        scalar = False
        if r >= 0 and flaglike[r]:
            if k == K_SIGNAL or k == K_AMO:
                c = 1
                scalar = True
            elif k == K_PUT or k == K_WRITE or k == K_GET or k == K_PUTSIG:
                o = loffset[i] if k == K_GET else offset[i]
                if o >= 0:
                    c = max(min(ext[i], length[r] - o), 0)  # clip: overflow is MT303's
                    u = unit[r]
        sr = sig_region[i] if k == K_PUTSIG else -1
        sig = sr >= 0 and flaglike[sr]
        if c == 0 and not sig:
            continue
        # sig_region and sig_offset are read at a put_signal alone: elsewhere they may be a
        # one-element stand-in (TraceView.carried)
        ks = owner[i] * words_per_owner + base[sr] + sig_offset[i] if sig else np.int64(-1)
        if strict and ((c > 0 and key[i] < 0) or (sig and not 0 <= sig_offset[i] < length[sr])):
            return -1, 0, key_lo, key_hi
        if not fill:
            if c > 0:
                key_lo = min(key_lo, key[i])
                key_hi = max(key_hi, key[i] + c - 1)
            if sig:
                key_lo = min(key_lo, ks)
                key_hi = max(key_hi, ks)
            s += 1
            j += (c + u - 1) // u + (1 if sig else 0)
            continue
        info[s, 0] = i
        info[s, 1] = rank[i] * cores_plus_one + core[i]
        info[s, 2] = value[i]
        info[s, 3] = ((r & 0xFFFF) | ((sr & 0xFFFF) << _SREG) | ((op[i] + 128) << _OP)
                      | (np.int64(scalar) << _SCALAR) | (np.int64(k == K_GET or k == K_PUTSIG) << _PNULL)
                      | (np.int64(k) << _KIND))
        lp = launch[i] - launch_min
        ph = phase[i] - phase_min
        for x in range(0, c, u):
            packed[j] = ((((key[i] + x - key_min) * launch_span + lp) * phases + ph) * selected + s) * 2
            j += 1
        if sig:
            packed[j] = ((((ks - key_min) * launch_span + lp) * phases + ph) * selected + s) * 2 + 1
            j += 1
        s += 1
    return s, j, key_lo, key_hi


@kernel
def pack_wait_keys(fill, waits, packing, strict, room, out):
    # One entry per word a completed-or-not wait_end covers: ((key_launch, rank/core), row), packed.
    # strict: keys renumbered (room: words left in the key's flag-like region); a wait on no
    # flag-like word matches no entry, one running out of its region returns -1.
    kind, key, wait_begin, words, launch, rank, core, region, unit = waits
    key_min, key_max, launch_min = packing.key_min, packing.key_max, packing.launch_min
    launch_span, rank_cores, cores_plus_one = packing.launch_span, packing.rank_cores, packing.cores_plus_one
    n = len(kind)
    j = 0
    for i in range(n):
        if kind[i] != K_WEND:
            continue
        b = wait_begin[i]
        nw = 1
        if b >= 0 and words[b] > 0:
            nw = words[b]  # a multi-word wait covers each of its words
        if strict and room[i] >= 0 and nw > room[i] and (key[i] >= 0 or nw > 1):
            return -1
        if key[i] < 0:
            continue
        r = region[i]
        u = unit[r] if 0 <= r < len(unit) else 1
        for x in range(0, nw, u):
            wk = key[i] + x
            if wk < key_min or wk > key_max:
                continue
            if fill:
                rank_core = rank[i] * cores_plus_one + core[i]
                out[j] = (((wk - key_min) * launch_span + (launch[i] - launch_min)) * rank_cores + rank_core) * n + i
            j += 1
    return j


@kernel
def unpack(packed, packing, wait_keys, info, regions, out):
    # Per (key_launch, phase) group of the sorted packed: decode, move the writes after a wait of
    # their core on the word behind the others (stable), simulate. packed becomes key_launch (keys
    # renumbered by _words_squeeze when squeezed_words > 0: decoded back to the trace's keys).
    # One 64-bit division per group: the rest of the decode is products and compares, and the
    # word's key is divided out only when the group starts a new one (a division is ~40 cycles,
    # and at 10 M events there are 9 M groups of two entries).
    selected, phases, phase_min = packing.selected, packing.phases, packing.phase_min
    launch_span, key_min, events, rank_cores = packing.launch_span, packing.key_min, packing.events, packing.rank_cores
    reset, has_reset, squeezed_words, flag_base, orig_base, words_per_rank = regions
    o_row, o_reg, o_phase, o_op, o_value, o_after, o_last, o_kind = out
    m = len(packed)
    g = len(wait_keys)
    span = 2 * selected
    key_launch_span = phases * span  # packed values of one (key, launch)
    key_span = launch_span * key_launch_span  # packed values of one key
    # Scratch sized once for the largest group: an array variable reassigned in the loop makes
    # numba count references on every inner iteration.
    longest = 0
    i = 0
    while i < m:
        e = i
        hi_packed = packed[i] - packed[i] % span + span
        while e < m and packed[e] < hi_packed:
            e += 1
        longest = max(longest, e - i)
        i = e
    buf = np.empty(5 * longest, np.int64)  # the after-wait entries of a group, parked (5 fields each)
    flag = np.empty(longest, np.bool_)
    j = 0
    i = 0
    cur = np.int64(0)
    known = False
    key_rel = np.int64(0)  # the current key, less key_min
    key_out = np.int64(0)  # the current key as the table gives it (decoded where renumbered)
    key_hi_packed = np.int64(0)  # the first packed value past the current key's
    while i < m:
        grp = packed[i] // span
        if phases == 1:
            key_launch = grp
            ph = phase_min
        else:
            key_launch = grp // phases
            ph = grp - key_launch * phases + phase_min
        lo_packed = grp * span
        hi_packed = lo_packed + span
        new_key = packed[i] >= key_hi_packed
        if new_key:
            key_rel = key_launch // launch_span
            key_hi_packed = (key_rel + 1) * key_span
            key_out = key_rel + key_min
            if squeezed_words > 0:  # renumbered: back to the trace's key
                owner = key_out // squeezed_words
                rest = key_out - owner * squeezed_words
                r = np.searchsorted(flag_base, rest, "right") - 1
                key_out = owner * words_per_rank + orig_base[r] + rest - flag_base[r]
        while j < g and wait_keys[j] < key_launch * rank_cores * events:
            j += 1
        jend = j
        while jend < g and wait_keys[jend] < (key_launch + 1) * rank_cores * events:
            jend += 1
        e = i
        while e < m and packed[e] < hi_packed:
            e += 1
        naw = 0
        for q in range(i, e):
            s = (packed[q] - lo_packed) >> 1
            row = info[s, 0]
            a = False
            if jend > j:  # the same (key, launch, rank/core) waited at an earlier row
                t = (key_launch * rank_cores + info[s, 1]) * events
                lo, hi = j, jend  # its first wait, if any: the first wait key >= t
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if wait_keys[mid] < t:
                        lo = mid + 1
                    else:
                        hi = mid
                a = lo < jend and wait_keys[lo] < t + row
            flag[q - i] = a
            naw += a
            meta = info[s, 3]
            v = info[s, 2]
            opv = ((meta >> _OP) & 0xFF) - 128
            if packed[q] & 1:
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
        last_of_key_launch = e == m or packed[e] >= (key_launch + 1) * key_launch_span
        key_launch_out = key_out * launch_span + key_launch - key_rel * launch_span
        for q in range(i, e):
            o_phase[q] = ph
            packed[q] = key_launch_out
            if new_key and q == i:
                cur = reset[o_reg[q]]
                known = has_reset[o_reg[q]]
            v = o_value[q]
            if v == NULL64:
                known = False
            elif o_op[q] == OP_ADD:
                cur += v
            else:
                cur = v
                known = True
            o_after[q] = cur if known else NULL64
            o_last[q] = q + 1 == e and last_of_key_launch
        i = e
