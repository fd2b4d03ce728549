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

from . import _passes as P
from . import _phases
from . import _words_packed_kernels as K
from . import codes as C
from . import regions as R
from ._units import word_units
from ._words_squeeze import squeeze
from ._words_table import Words, widest

K_GET = C.K_GET
# Words a wait may cover here: the packed form makes an entry per word a wait covers within the
# table's keys, so a wait on two billion words (a kernel's bad count) would take the machine.
WIDEST_WAIT = 1 << 12


def build_packed(trace) -> Words | None:
    n = trace.n
    if not n:
        return None
    if int(trace.wait_words.max()) > WIDEST_WAIT:
        return None  # the general form, which keeps only the waited words something writes
    kind = trace["kind"]
    rt = R.region_table(trace)
    key = trace.key
    launch = trace["launch"]
    launch_min = int(launch.min())
    launch_span = int(launch.max()) - launch_min + 2
    phase_all, _ = _phases.phases(trace)
    phase_min = int(phase_all.min())
    phases = int(phase_all.max()) - phase_min + 1
    rank, core = trace["rank"], trace["core"]
    cores_plus_one = trace.manifest.cores + 1
    if int(rank.min()) < 0 or int(core.min()) < 0 or int(core.max()) >= cores_plus_one:
        return None
    rank_cores = (int(rank.max()) + 1) * cores_plus_one
    offset = trace["offset"]
    loffset = trace["local_offset"] if bool((kind == K_GET).any()) else offset
    ext = R.extent(trace)
    if len(ext) and int(ext.max()) > widest(trace):  # a copy only for the rare trace that needs one
        ext = np.minimum(ext, widest(trace))
    unit = word_units(trace)
    rows = K.Rows(kind, R.target_region(trace), offset, loffset, ext, trace.carried("sig_region"),
                  trace.carried("sig_offset"), key, trace.owner, launch, phase_all, rank, core, trace["value"],
                  trace["op"], rt["flaglike"], rt["length"], rt["base"], unit,
                  np.int64(trace.manifest.words_per_rank))
    # key_min, key_max and selected are the count pass's: placeholders until then
    packing = K.Packing(*(np.int64(v) for v in (0, 0, launch_min, launch_span, phase_min, phases, 1, rank_cores,
                                               cores_plus_one, n)))
    none = np.zeros(0, np.int64)
    _, wait_begin = P.wait_pairs(trace)
    waits = K.Waits(kind, key, wait_begin, trace.wait_words, launch, rank, core, trace["region"], unit)
    room = np.zeros(0, np.int32)
    fit = _fit(rows, waits, packing, False, room)
    sq = None
    if fit is not None and not fit[1]:
        return None
    if fit is None:  # keys too far apart to pack: renumber them over the flag-like words
        sq = squeeze(trace, rt)
        if sq is None:
            return None
        rows = rows._replace(key=sq.key, base=sq.base, words_per_owner=np.int64(sq.words))
        waits = waits._replace(key=sq.key)
        fit = _fit(rows, waits, packing, True, sq.room)
        if fit is None:
            return None
    selected, m, key_min, key_max, wn = fit
    strict = sq is not None
    packing = packing._replace(key_min=np.int64(key_min), key_max=np.int64(key_max), selected=np.int64(selected))
    info = np.empty((selected, 4), np.int64)
    packed = np.empty(m, np.int64)
    K.pack_rows(True, rows, packing, strict, info, packed)
    del rows
    packed.sort()

    # Waits by (key_launch, rank/core), then row: a group's first wait is where a search for the group lands.
    wait_keys = np.empty(wn, np.int64)
    K.pack_wait_keys(True, waits, packing, strict, sq.room if strict else room, wait_keys)
    wait_keys.sort()
    wpr = np.int64(trace.manifest.words_per_rank)
    regions = (K.Unsqueeze(rt["reset"], rt["has_reset"], np.int64(sq.words), sq.flag_base, sq.orig_base, wpr)
               if strict else K.Unsqueeze(rt["reset"], rt["has_reset"], np.int64(0), none, none, wpr))

    out = K.Entries(np.empty(m, C.row_dtype(n)), np.empty(m, np.int16), np.empty(m, np.int32), np.empty(m, np.int8),
                  np.empty(m, np.int64), np.empty(m, np.int64), np.empty(m, bool), np.empty(m, np.int8))
    K.unpack(packed, packing, wait_keys, info, regions, out)
    return Words(out.row, out.region, out.phase, out.op, out.value, out.after, out.last, packed, launch_min,
                 launch_span, out.kind, unit)


def _fit(rows: K.Rows, waits: K.Waits, packing: K.Packing, strict: bool, room):
    """The count passes: (rows, entries, key range, wait entries), or None where a key is out of
    its flag-like region (``strict``) or the packed keys would overflow; entries 0: no table."""
    none = np.zeros(0, np.int64)
    selected, m, key_min, key_max = K.pack_rows(False, rows, packing, strict, none.reshape(0, 4), none)
    if selected < 0:
        return None
    if not m:
        return 0, 0, 0, 0, 0
    cspan = (int(key_max) - int(key_min) + 1) * int(packing.launch_span)  # Python ints: no wrap-around
    if cspan * int(packing.phases) * int(selected) * 2 >= 2**62 or cspan * int(packing.rank_cores) * int(packing.events) >= 2**62:
        return None
    bounds = packing._replace(key_min=np.int64(key_min), key_max=np.int64(key_max))
    wn = K.pack_wait_keys(False, waits, bounds, strict, room, none)
    return None if wn < 0 else (selected, m, key_min, key_max, wn)
