"""The timeline's arrows: each write to the wait_end it released, each root cause to its symptoms.

Release flows are found by data, never by time: a wait_end observed value v
on its word (owner = the waiting rank, region, offset); the word table
(``rules.analysis.word_table``: every write into a flag-like word, with the word's
simulated value after it) names the write that left v there: the first of
that launch to leave v; else the first whose value satisfies the wait's
comparison; else the last of an earlier launch to leave v (a stale value);
else, where the trace does not say what a write left, the word's first
write of the launch.  Each arrow's args say which (``matched_by``).  A wait
on several words gets an arrow from each word's writer (a write covering
several words, once).  One numba pass does every lookup.
Cause flows run from a root cause's first evidence event to each symptom's.

A flow whose ends are on ranks placed by different clocks may point
backward once drawn; it is then named ``... (approximate: clock offsets)``
and its args say ``approximate: true`` (the pairing itself is exact).
"""

from __future__ import annotations

import numpy as np

from ingest.contract import COLUMN
from rules._jit import kernel

from ._draw import CATEGORY, Drawing

NULL64 = COLUMN["value"].numpy_null  # a plain global for numba


# How a release arrow was matched, by the code the kernel returns.
MATCHED_BY = {1: "value", 2: "cmp", 3: "stale value", 4: "first write of the launch"}


def release_pairs(trace, drawn: np.ndarray) -> list[tuple[int, int, dict]]:
    """(write row, wait_end row, args) for each drawn wait_end whose releasing write the data names."""
    from ingest.contract import Kind
    from rules.analysis.core_scan import wait_pairs
    from rules.analysis.word_table import word_table

    kind = trace["kind"]
    ends = drawn[kind[drawn] == Kind.WAIT_END]
    if not len(ends):
        return []
    _, e2b = wait_pairs(trace)
    ends = ends[e2b[ends] >= 0]
    begins = e2b[ends].astype(np.int64)
    nw = trace["words"][begins].astype(np.int64)
    nw = np.where(nw == trace.null("words"), 1, np.maximum(nw, 1))
    # One lookup per (wait, word): the wait's j-th word is the key after its first.
    wait = np.repeat(np.arange(len(ends)), nw)
    word = np.arange(len(wait)) - np.repeat(np.cumsum(nw) - nw, nw)
    key = trace.key[begins][wait] + word
    w = word_table(trace).table
    launch = trace["launch"][ends][wait].astype(np.int64)
    here_lo, here_hi = w.entries_of(key, launch)
    key_lo, _ = w.key_bounds(key)
    at = np.full(len(wait), -1, np.int64)
    how = np.zeros(len(wait), np.int8)
    bounds = (np.asarray(key_lo, np.int64), here_lo.astype(np.int64), here_hi.astype(np.int64))
    waits = (trace["observed"][ends][wait].astype(np.int64), trace["cmp"][begins][wait].astype(np.int64),
             trace["value"][begins][wait].astype(np.int64))
    _match(bounds, w.after, waits, at, how)
    ok = at >= 0
    src = w.row[at[ok]].astype(np.int64)
    dst, wrd, hw = ends[wait[ok]].astype(np.int64), word[ok], how[ok]
    # A write covering several words of one wait releases it once: its first word speaks for it.
    _, first = np.unique(np.stack((dst, src)), axis=1, return_index=True)
    first.sort()
    return [(int(src[i]), int(dst[i]), {"matched_by": MATCHED_BY[int(hw[i])], "word": int(wrd[i])})
            for i in first.tolist()]


@kernel
def _match(bounds, after, waits, at, how):
    # Per lookup: the first write of the launch leaving the observed value (1); else the first
    # satisfying the wait's cmp (2); else the last earlier-launch write leaving it (3); else the
    # launch's first write (4). after == NULL64: the value a write left is unknown.
    # bounds: per lookup, the table entries of its key and of its launch [lo, hi); waits: per
    # lookup, the value observed, the wait's cmp and target.
    key_lo, lo, hi = bounds
    observed, cmp, target = waits
    for i in range(len(lo)):
        for e in range(lo[i], hi[i]):
            if after[e] == observed[i]:
                at[i], how[i] = e, 1
                break
        if at[i] >= 0:
            continue
        for e in range(lo[i], hi[i]):
            a, t, c = after[e], target[i], cmp[i]
            if a != NULL64 and ((c == 0 and a == t) or (c == 1 and a != t) or (c == 2 and a > t)
                                or (c == 3 and a >= t) or (c == 4 and a < t) or (c == 5 and a <= t)):
                at[i], how[i] = e, 2
                break
        if at[i] >= 0:
            continue
        for e in range(lo[i] - 1, key_lo[i] - 1, -1):
            if after[e] == observed[i]:
                at[i], how[i] = e, 3
                break
        if at[i] < 0 and hi[i] > lo[i]:
            at[i], how[i] = lo[i], 4


def row_of(trace) -> "callable":
    """(rank, core, seq) -> trace row, or None: rows are in (rank, core, seq) order."""
    seg = trace.segments
    rank, core, seq = trace["rank"], trace["core"], trace["seq"]
    where = {(int(rank[s]), int(core[s])): (int(s), int(t)) for s, t in zip(seg[:-1], seg[1:])}

    def find(r: int, c: int, s: int) -> int | None:
        span = where.get((r, c))
        if span is None:
            return None
        i = span[0] + int(np.searchsorted(seq[span[0]:span[1]], s))
        return i if i < span[1] and int(seq[i]) == s else None
    return find


def add_flows(d: Drawing, pairs, name: str, place) -> dict[str, int]:
    """Append an s/f pair per (source row, target row) with both ends drawn; counts drawn, approximate, off-screen."""
    counts = {"drawn": 0, "approximate": 0, "offscreen": 0}
    for n, (src, dst, *more) in enumerate(pairs):
        a, b = d.anchor.get(src), d.anchor.get(dst)
        if a is None or b is None:
            # One end is cut away (--ranks, --launch): say so on the end that is drawn.
            counts["offscreen"] += 1
            here = a or b
            if here is not None:
                here["args"].setdefault(f"{name}_offscreen", []).append(place(dst if a else src))
            continue
        backward = a["ts"] > b["ts"]
        fid = len(d.flows) + 1
        args = {"approximate": backward, **(more[0] if more else {})}
        label = f"{name} (approximate: clock offsets)" if backward else name
        for ph, end in (("s", a), ("f", b)):
            d.flows.append({"name": label, "cat": CATEGORY, "ph": ph, "id": fid, "bp": "e", "pid": end["pid"],
                            "tid": end["tid"], "ts": end["ts"], "args": args})
        counts["drawn"] += 1
        counts["approximate"] += backward
    return counts


def cause_pairs(report, find) -> list[tuple[int, int, dict]]:
    """(root evidence row, symptom evidence row, args) for every symptom a root cause explains that
    the report lists (``--max-findings``)."""
    out = []
    for root in report.roots:
        if not root.explains or not root.evidence:
            continue
        ev = root.evidence[0]
        src = find(ev.rank, ev.core, ev.seq)
        for s in report.listed(root.explains):
            if not s.evidence or src is None:
                continue
            sv = s.evidence[0]
            dst = find(sv.rank, sv.core, sv.seq)
            if dst is not None:
                out.append((src, dst, {"root": f"{root.id} {root.code}", "symptom": f"{s.id} {s.code}"}))
    return out
