"""The timeline's arrows: each write to the wait_end it released, each root cause to its symptoms.

Release flows are found by data, never by time: a wait_end observed value v
on its word (owner = the waiting rank, region, offset); the word table
(``rules._words``: every write into a flag-like word, with the word's
simulated value after it) names the write that left v there, the first in
the word's history of that launch; where no write of the launch did, the
last of an earlier launch (a stale value).  A wait on several words gets an
arrow from each word's writer (a write covering several words, once).
Cause flows run from a root cause's first evidence event to each symptom's.

A flow whose ends are on ranks placed by different clocks may point
backward once drawn; it is then named ``... (approximate: clock offsets)``
and its args say ``approximate: true`` (the pairing itself is exact).
"""

from __future__ import annotations

import numpy as np

from ._draw import CATEGORY, Drawing


def release_pairs(trace, drawn: np.ndarray) -> list[tuple[int, int, dict]]:
    """(write row, wait_end row, args) for each drawn wait_end whose releasing write the data names."""
    from ingest.contract import Kind
    from rules import _passes as P
    from rules._waitfor_producers import satisfies
    from rules._words import words

    kind = trace["kind"]
    ends = drawn[kind[drawn] == Kind.WAIT_END]
    if not len(ends):
        return []
    _, e2b = P.wait_pairs(trace)
    w = words(trace)
    observed, launch = trace["observed"], trace["launch"]
    nwords, cmp, target = trace["words"], trace["cmp"], trace["value"]
    key = trace.key
    null_words = trace.null("words")
    out: list[tuple[int, int, dict]] = []
    for e in ends.tolist():
        b = int(e2b[e])
        if b < 0:
            continue
        n = 1 if int(nwords[b]) == null_words else max(1, int(nwords[b]))
        seen: set[int] = set()
        for j in range(n):
            found = _writer(w, int(key[b]) + j, int(launch[e]), int(observed[e]), int(cmp[b]), int(target[b]),
                            satisfies)
            if found is not None and found[0] not in seen:
                seen.add(found[0])
                out.append((found[0], e, {"matched_by": found[1], "word": j}))
    return out


def _writer(w, key: int, launch: int, observed: int, cmp: int, target: int, satisfies) -> tuple[int, str] | None:
    """The row that left the word as the wait saw it, and how it was matched."""
    lo, hi = w.key_bounds(key)
    lo, hi = int(lo), int(hi)
    if lo == hi:
        return None
    launches = w.launch_of(np.arange(lo, hi))
    after = w.after[lo:hi]
    here = np.flatnonzero(launches == launch)
    exact = here[after[here] == observed]
    if len(exact):
        return int(w.row[lo + exact[0]]), "value"
    # The observed value is the first word's; the other words of a multi-word wait only satisfy cmp.
    ok = [i for i in here.tolist() if satisfies(cmp, int(after[i]), target)]
    if ok:
        return int(w.row[lo + ok[0]]), "cmp"
    before = np.flatnonzero((launches < launch) & (after == observed))
    if len(before):
        return int(w.row[lo + before[-1]]), "stale value"
    # The value the write left is unknown (a put whose value field is not every word's): the
    # word's first write of the launch, which the table orders before the waiter's own reset.
    return (int(w.row[lo + here[0]]), "first write of the launch") if len(here) else None


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
    """(root evidence row, symptom evidence row, args) for every symptom a root cause explains."""
    by_id = {f.id: f for f in report.findings}
    out = []
    for root in report.roots:
        if not root.explains or not root.evidence:
            continue
        ev = root.evidence[0]
        src = find(ev.rank, ev.core, ev.seq)
        for sid in root.explains:
            s = by_id[sid]
            if not s.evidence or src is None:
                continue
            sv = s.evidence[0]
            dst = find(sv.rank, sv.core, sv.seq)
            if dst is not None:
                out.append((src, dst, {"root": f"{root.id} {root.code}", "symptom": f"{s.id} {s.code}"}))
    return out
