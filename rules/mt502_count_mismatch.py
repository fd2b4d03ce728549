"""MT502: what rank i announced to rank j differs from what j says it was sent."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Kind, Role

from . import _hits as H
from .analysis import Producers, Stage, WaitForGraph, WordTable
from .analysis.groups import group_columns
from .base import Confidence, Family, Rule, Severity, hits_of
from .hit_columns import HitColumns

_CAUSE_TEXT = {"MT202": "the receiver's counter was not reset after the previous launch",
               "MT404": "the sender's atomic count was relied on before its engine's quiet",
               "MT105": "the sender wrote a count meant for another peer here",
               "MT101": "the silent side is stuck in a wait of this launch",
               "MT102": "the silent side is stuck in a barrier of this launch",
               "MT106": "the sender stored its count raw, not encoded -n-1",
               "MT205": "the receiver's count word still held an earlier launch's count (its clean was skipped)"}


class CountMismatch(Rule):
    """Pairwise count mismatch: i's count to j versus j's deliver from i.

    What it does
        Per (launch, sender i, receiver j, local expert e) takes the last
        `count` event on i with peer j and the last `deliver` event on j
        with src_rank i, and compares the announced `value` with j's
        `requested`. Different values are a hit naming both. An announced
        non-zero count with no deliver at a receiver that delivered other
        segments in that launch (or the reverse) is a hit of confidence
        inferred; partial-trace, at most a note, with the gap named, when
        the silent side's dump is missing or its launch lost events to ring
        wrap (the count or delivery may be in the lost part).

    Why it matters
        The count exchange is what sizes every receive and every wait of the
        round. A receiver that expects other than what was sent either waits
        for rows that never come (a hang) or stops early (rows lost). The
        usual causes: a count written from a stale buffer, an id dropped on
        one side only, or a delivery that overtook its count.

    Example
        rank 0: count peer=1 local_expert=0 value=12; rank 1: deliver
        local_expert=0 src_rank=0 requested=9
        -- DeepEP #427's "9181 != 6888" is this at scale.

    Evidence
        The count event on the sender and the deliver event on the receiver
        (the one present, when the other is missing).
    """

    code = "MT502"
    name = "count-mismatch"
    family = Family.INVALID_EXPERT_ID
    severity = Severity.ERROR
    summary = "Pairwise count mismatch: announced by rank i to j versus received by j from i"
    requires = (Stage.WORD_TABLE, Stage.PRODUCERS, Stage.WAIT_FOR)
    cites = ("MT101", "MT102", "MT105", "MT106", "MT202", "MT205", "MT404")
    infers_from = ("params",)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        kind = trace["kind"]
        ra = np.flatnonzero(kind == int(Kind.COUNT))
        rb = np.flatnonzero(kind == int(Kind.DELIVER))
        if not len(ra) and not len(rb):
            return
        # Gather the count / deliver rows first, then widen: no int64 copies of the whole trace.
        rank, launch, le = trace["rank"], trace["launch"], trace["local_expert"]
        ka = np.stack([c[ra].astype(np.int64) for c in (launch, rank, trace["peer"], le)])
        kb = np.stack([c[rb].astype(np.int64) for c in (launch, trace["src_rank"], rank, le)])
        uniq, _, inv, _ = group_columns(np.concatenate((ka, kb), axis=1))
        g = uniq.shape[1]
        last_a = np.full(g, -1, np.int64)
        last_b = np.full(g, -1, np.int64)
        np.maximum.at(last_a, inv[: len(ra)], ra)
        np.maximum.at(last_b, inv[len(ra):], rb)
        va = np.where(last_a >= 0, trace["value"][np.maximum(last_a, 0)].astype(np.int64), 0)
        vb = np.where(last_b >= 0, trace["requested"][np.maximum(last_b, 0)].astype(np.int64), 0)
        # Which (launch, rank) pairs recorded any count / deliver at all.
        announced = set(zip(launch[ra].tolist(), rank[ra].tolist()))
        received = set(zip(launch[rb].tolist(), rank[rb].tolist()))
        missing = set(trace.ranks_missing)
        ix = _cause_index(trace, ctx.stage(WaitForGraph), ctx.stage(WordTable), ctx.stage(Producers))
        both = (last_a >= 0) & (last_b >= 0) & (va != vb)
        only_a = (last_a >= 0) & (last_b < 0) & (va != 0)
        only_b = (last_a < 0) & (last_b >= 0) & (vb != 0)
        sel = np.flatnonzero(both | only_a | only_b)
        # A trace can have millions of mismatches: they leave as columns (``HitColumns``), and what
        # depends on a mismatch's side, silent rank and launch (its confidence, a gap), or on its
        # (launch, sender, receiver, side) (its causes), is worked out once per such group.
        a_rows, b_rows = last_a[sel], last_b[sel]
        launches, senders, receivers, experts = uniq[:, sel]
        side = np.where((a_rows >= 0) & (b_rows >= 0), 0, np.where(a_rows >= 0, 1, 2)).astype(np.int8)
        silent = np.where(side == 1, receivers, senders)
        one = np.flatnonzero(side > 0)
        groups = group_columns([side[one], silent[one], launches[one]])
        per_confidence = np.zeros(len(groups.first), np.int8)  # CONFIDENCES[0]: certain
        per_gap = np.zeros(len(groups.first), np.int32)  # gaps[0]: None
        per_keep = np.ones(len(groups.first), bool)
        gaps: list[str | None] = [None]
        for g, (s, quiet, L) in enumerate(groups.values.T.tolist()):
            # One side recorded nothing: an absence, which a lost ring part or dump may explain.
            why_not = H.launch_gap(trace, [quiet], L)
            if why_not:
                gaps.append(why_not)
                per_gap[g] = len(gaps) - 1
            elif quiet in missing:
                per_confidence[g] = CONFIDENCES.index(Confidence.PARTIAL_TRACE)
            elif (L, quiet) in (received if s == 1 else announced):
                per_confidence[g] = CONFIDENCES.index(Confidence.INFERRED)
            else:
                per_keep[g] = False  # the silent rank recorded nothing at all this launch: nothing to compare
        confidence = np.zeros(len(sel), np.int8)
        gap = np.zeros(len(sel), np.int32)
        keep = np.ones(len(sel), bool)
        confidence[one], gap[one], keep[one] = (a[groups.inverse] for a in (per_confidence, per_gap, per_keep))
        kept = np.flatnonzero(keep)
        if not len(kept):
            return
        # Not a root of its own when the receiver's counter was never reset, or a copy meant
        # for another peer landed here: the count then differs by what those left behind.
        # One defect per side that recorded the count and per kind of cause that explains it.
        groups = group_columns([launches[kept], senders[kept], receivers[kept], side[kept]])
        cited = _may_cite(ix, *groups.values)
        explained = [_explained(ix, L, i, j, SIDES[s]) if c else ((), "", SIDES[s])
                     for (L, i, j, s), c in zip(groups.values.T.tolist(), cited.tolist())]
        cause = groups.inverse.astype(np.int32)
        first = np.where(a_rows >= 0, a_rows, b_rows)[kept]
        seq = trace["seq"]
        yield HitColumns(
            code=self.code, fields=Mismatch, render=_message, extra=_extra,
            columns={"launch": launches[kept], "sender": senders[kept], "receiver": receivers[kept],
                     "local_expert": experts[kept], "side": side[kept], "announced": va[sel][kept],
                     "requested": vb[sel][kept], "announced_seq": seq[np.maximum(a_rows, 0)][kept],
                     "requested_seq": seq[np.maximum(b_rows, 0)][kept], "why": cause, "caused_by": cause,
                     "defect": cause, "confidence": confidence[kept], "gap": gap[kept]},
            tables={"side": SIDES, "why": tuple(why for _, why, _ in explained),
                    "caused_by": tuple(causes for causes, _, _ in explained),
                    "defect": tuple(defect for _, _, defect in explained), "confidence": CONFIDENCES,
                    "gap": tuple(gaps)},
            roles=("announced count", "deliver"), rows=np.stack((a_rows[kept], b_rows[kept]), axis=1),
            key=np.stack([c[first].astype(np.int64) for c in (rank, trace["core"], seq)], axis=1))


SIDES = ("both", "not-received", "not-announced")  # which side recorded the count
CONFIDENCES = tuple(Confidence)


class Mismatch(NamedTuple):
    """A count mismatch's typed fields: its message and extra are rendered from these."""

    launch: int
    sender: int
    receiver: int
    local_expert: int
    side: str  # SIDES: both; not-received: only the sender recorded it; not-announced: only the receiver
    announced: int  # the sender's count (where it recorded one)
    requested: int  # the receiver's requested rows (where it recorded them)
    announced_seq: int
    requested_seq: int
    why: str  # the causes the message names, "" where none


def _message(f: Mismatch) -> str:
    if f.side == "not-announced":
        said = f"rank {f.sender} announced nothing to rank {f.receiver}"
    else:
        said = f"rank {f.sender} announced {f.announced} rows to rank {f.receiver} (seq {f.announced_seq})"
    if f.side == "not-received":
        heard = f"rank {f.receiver} recorded no delivery from rank {f.sender}"
    else:
        heard = f"rank {f.receiver} received requested={f.requested} from rank {f.sender} (seq {f.requested_seq})"
    return f"launch {f.launch} local expert {f.local_expert}: {said}, but {heard}{f.why}"


def _extra(f: Mismatch) -> dict:
    return {"launch": f.launch, "sender": f.sender, "receiver": f.receiver, "local_expert": f.local_expert,
            "announced": None if f.side == "not-announced" else f.announced,
            "requested": None if f.side == "not-received" else f.requested}


def _explained(ix: dict, launch: int, sender: int, receiver: int, side: str) -> tuple[tuple, str, str]:
    """A mismatch's causes, the message's note naming them, and its defect, from the side(s) that
    recorded the count ("both", "not-received": only the sender, "not-announced": only the receiver)."""
    silent = {"both": None, "not-received": receiver, "not-announced": sender}[side]
    causes = _count_causes(ix, launch, sender, receiver, silent=silent)
    why = ""
    if causes:
        why = " (" + "; ".join(_CAUSE_TEXT[c] for c in dict.fromkeys(c for c, _ in causes)) + ")"
    return causes, why, "+".join([side, *sorted({c for c, _ in causes})])


def _count_causes(ix: dict, launch: int, sender: int, receiver: int, silent: int | None = None) -> tuple:
    """Causes of a count mismatch from ``sender`` to ``receiver`` in ``launch``: the receiver's
    counter left unreset by the launch before (MT202), the sender's writes that the wait-for
    analysis found misdirected to the receiver in that launch (MT105, a copy meant for another
    peer), and where one side recorded nothing (``silent``), that rank's stuck waits of the
    launch: it never got as far as its delivery (or count), the hang explains it. Lookups in
    ``_cause_index`` only: a trace can have millions of mismatches."""
    stale = ix["stale"].get((receiver, launch - 1), [])
    out = [("MT202", key) for key in (ix["stale_counters"].get((receiver, launch - 1)) or stale)]
    out += [("MT105", key) for key in ix["wrong"].get((sender, receiver, launch), [])]
    # The sender's UDMA/RoCE atomics to the receiver, relied on before their quiet: the receiver
    # read its count before the add landed (MT404's hits of this run).
    out += [("MT404", key) for key, peers in ix["mt404"].get((sender, launch), []) if receiver in peers]
    # The sender stored its counts to the receiver raw where they are encoded (MT106's hits).
    out += [("MT106", key) for key in ix["raw"].get((sender, receiver, launch), [])[:4]]
    # The receiver's count words entered the launch holding an earlier count (MT205's hits).
    kept = ix["kept"].get((receiver, launch))
    if kept is not None:
        out.append(("MT205", kept))
    if silent is not None:
        out += ix["nodes"].get((silent, launch), [])
    return tuple(dict.fromkeys(out))


def _may_cite(ix: dict, launch: np.ndarray, sender: np.ndarray, receiver: np.ndarray, side: np.ndarray) -> np.ndarray:
    """Which (launch, sender, receiver, side) groups have a key in some list of ``_cause_index``
    (the others have no cause): one membership test per list, not a lookup per group (a trace
    can have 10^5 groups, few with causes)."""
    silent = np.where(side == SIDES.index("not-received"), receiver, sender)  # "both": asked in vain
    asked = {"stale": (receiver, launch - 1), "stale_counters": (receiver, launch - 1),
             "wrong": (sender, receiver, launch), "mt404": (sender, launch), "raw": (sender, receiver, launch),
             "kept": (receiver, launch), "nodes": (silent, launch)}
    out = np.zeros(len(launch), bool)
    for name, query in asked.items():
        if ix[name]:
            out |= _among(query, list(ix[name]))
    return out


def _among(query: tuple[np.ndarray, ...], keys: list[tuple]) -> np.ndarray:
    """Whether each tuple of the ``query`` columns is one of ``keys``."""
    n = len(query[0])
    table = np.array(keys, np.int64).reshape(len(keys), len(query)).T
    ids = group_columns([np.concatenate((q, k)) for q, k in zip(query, table)]).inverse
    return np.isin(ids[:n], ids[n:])


def _cause_index(trace, wf: WaitForGraph, words: WordTable, producers: Producers) -> dict:
    """What ``_count_causes`` looks up, by its (rank, launch) keys, each list in the order of its
    source: built once per check, not scanned per mismatch."""
    regions = trace.manifest.regions
    rank, core, seq, launch = trace["rank"], trace["core"], trace["seq"], trace["launch"]

    def key_of(r: int) -> tuple[int, int, int]:
        return int(rank[r]), int(core[r]), int(seq[r])

    ix: dict = {"stale": {}, "stale_counters": {}, "wrong": {}, "mt404": {}, "nodes": {}, "raw": {}, "kept": {}}
    for k, (key, _) in words.not_reset().items():
        ix["stale"].setdefault((k[0], k[2]), []).append(key)
        if regions[k[1]].role == Role.COUNTER:
            ix["stale_counters"].setdefault((k[0], k[2]), []).append(key)
    for key, entry in sorted(wf.wrong.items()):
        ix["wrong"].setdefault((key[0], entry.owner, entry.launch), []).append(key)
    for h in hits_of(trace, "MT404"):
        ix["mt404"].setdefault((h.key[0], int(launch[h.rows[0][1]])), []).append(
            (tuple(h.key), h.extra.get("peers", ())))
    for n in wf.nodes:
        ix["nodes"].setdefault((n.rank, n.launch), []).append(n.ref)
    for r in producers.raw_counts().rows.tolist():  # row order
        ix["raw"].setdefault((int(rank[r]), int(trace["peer"][r]), int(launch[r])), []).append(key_of(r))
    for row, k in sorted(producers.kept_counts().items()):  # the first of each (receiver, launch)
        ix["kept"].setdefault((int(rank[row]), k.launch), key_of(row))
    return ix
