"""The wait-for builder's questions about what a silent producer did instead (``_waitfor_build``).

Where a wait's producer wrote the slot to another rank or the slot beside it,
stored its count raw, or dropped the route that should have brought it there:
the queries the producer classification asks once a producer is found silent.
A mixin of ``Builder``: each reads the builder's tables and end states.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ingest.contract import REMOTE_WRITE_KINDS, Kind

from ._rings import ring_role
from ._waitfor_stale import aliased_routes

if TYPE_CHECKING:  # pragma: no cover - the builder imports these modules
    from ._waitfor_build import Builder

_REMOTE = np.array(sorted(int(k) for k in REMOTE_WRITE_KINDS), dtype=np.int8)


class AstrayQueries:
    def misdirected(self, w, p: int) -> list[int]:
        """Write-table indices of p's writes into w's region, in w's launch, that went astray.

        Astray: the region's index names another producer for that slot (wrong
        slot), or it is w's slot on another rank where nobody waits (wrong peer).
        """
        k = (p, w.region, w.launch)
        if k not in self._mis:
            tb = self.tables
            idx = tb.writes_by(p, w.region, w.launch)
            reset = self.trace.manifest.regions[w.region].reset
            if reset is not None:  # a consumer putting its own slot back is no producer write
                idx = idx[(tb.w_value[idx] != reset) | (tb.w_owner[idx] != p)]
            elif w.rank != p:  # nor, with no reset stated, one clearing its own words (a notify memset)
                idx = idx[self.trace["kind"][tb.w_row[idx]] != Kind.WRITE]
            prod = self.slot_producers(w.region, tb.w_owner[idx], tb.w_slot[idx], w.launch) if len(idx) else idx
            wrong_slot = (prod >= 0) & (prod != p)
            self._mis[k] = (idx, wrong_slot)
        idx, wrong_slot = self._mis[k]
        tb = self.tables
        same = idx[(tb.w_slot[idx] == w.slot) & ~wrong_slot]
        other = same[tb.w_owner[same] != w.rank]
        # A ring's head or tail is waited on only when the other side runs ahead (a sender with
        # free space never waits for the head): an index nobody waited on is no write astray.
        ring = ring_role(self.trace.manifest.regions[w.region]) is not None
        peer = [] if ring else [i for i in other.tolist() if not self.tables.waited(int(tb.w_skey[i]), w.launch)]
        # A producer with a core that died mid-launch never wrote what that core owed: its other
        # cores' copies to other ranks are their own share, not this one sent astray.
        if self.stopped_in(p, w.launch) or ring:  # a ring index is written again at every advance
            peer, surplus = [], []
        else:
            surplus = _surplus(self, same, w)
        out = sorted(set(idx[wrong_slot].tolist()) | set(peer) | set(surplus))
        self._astray(w, out)
        return out

    def _astray(self, w, writes: list[int]) -> None:
        """Record ``writes`` (write-table indices) as gone astray from wait ``w`` (``self.wrong``, by row key)."""
        tb = self.tables
        for i in writes:
            key = self.key_of_row(int(tb.w_row[i]))
            entry = self.wrong.setdefault(key, {"row": int(tb.w_row[i]), "write": i, "waits": []})
            entry["waits"].append(w.id)

    def stray_writes(self, w, p: int) -> list[int]:
        """p's write into the slot next to w's, on w's rank in w's launch, that nobody waited on
        there: where w waits for a slot p owed and p wrote the one beside it instead (an
        off-by-one that stays inside p's own slots), that write is the misdirected one."""
        tb = self.tables
        idx = tb.writes_by(p, w.region, w.launch)
        idx = idx[(tb.w_owner[idx] == w.rank) & (tb.w_slot[idx] != w.slot)]
        reset = self.trace.manifest.regions[w.region].reset
        if reset is not None:
            idx = idx[tb.w_value[idx] != reset]
        # Only the slot next to it: a write further off is another row's, not this one shifted.
        idx = [i for i in idx.tolist() if abs(int(tb.w_slot[i]) - w.slot) == 1
               and not tb.waited(int(tb.w_skey[i]), w.launch)]
        out = idx[:1]
        self._astray(w, out)
        return out

    def raw_count_candidates(self, w, p: int) -> list[tuple]:
        """MT106 hits on counts that w's rank stored raw into p's words in w's launch: p, the
        consumer w waits on, read such a count (0 rows, or a hang on it) and so never owed w's
        slot: ((MT106, key), text)."""
        from ._counts import raw_counts
        t = self.trace
        rows = raw_counts(t).rows
        if not len(rows):
            return []
        sel = rows[(t["rank"][rows] == w.rank) & (t["peer"][rows] == p) & (t["launch"][rows] == w.launch)]
        return [(("MT106", self.key_of_row(int(r))), f"rank {w.rank} stored its count to rank {p} raw "
                 f"({int(t['value'][r])}, not -n-1) at seq {int(t['seq'][r])}") for r in sel[:4]]

    def share_to(self, rank: int, core: int, owner: int) -> float:
        """Fraction of a core's remote writes (whole trace) that target ``owner``."""
        t = self.trace
        s = np.flatnonzero((self.seg_rank == rank) & (self.seg_core == core))
        if not len(s):
            return 0.0
        seg = t.segments
        lo, hi = int(seg[s[0]]), int(seg[s[0] + 1])
        peer = t["peer"][lo:hi]
        remote = np.isin(t["kind"][lo:hi], _REMOTE) & (peer != t.null("peer"))
        n = int(remote.sum())
        return float((peer[remote] == owner).sum()) / n if n else 0.0

    def dropped_routes(self, w, p: int) -> list[tuple]:
        """(code, key, text, row) of the dropped routes and clamped rows that explain p's silence."""
        t = self.trace
        out = []
        index = t.manifest.regions[w.region].index
        d = np.flatnonzero(t["kind"] == Kind.DELIVER) if not hasattr(self, "_deliv") else self._deliv
        self._deliv = d
        clamp = d[t["delivered"][d] < t["requested"][d]]
        rk, src, lw = t["rank"][clamp], t["src_rank"][clamp], t["launch"][clamp]
        pair = ((rk == p) & (src == w.rank)) | ((rk == w.rank) & (src == p))
        for r in clamp[pair & (lw == w.launch)].tolist():
            out.append(("MT301", self.key_of_row(r),
                        f"rank {int(t['rank'][r])} took {int(t['delivered'][r])} of {int(t['requested'][r])} "
                        f"rows from rank {int(t['src_rank'][r])} for local expert {int(t['local_expert'][r])}", r))
        out += aliased_routes(self, p, w.launch)
        if index != "token_topk":
            bad = self.invalid_routes()
            bad = bad[(t["rank"][bad] == p) & (t["launch"][bad] == w.launch)]
            toward = bad[self.dst_rank[bad].astype(np.int64) == w.rank]
            for r in (toward if len(toward) else bad).tolist()[:8]:
                out.append(("MT501", self.key_of_row(r),
                            f"its route token {int(t['token'][r])} topk {int(t['topk'][r])} has expert "
                            f"{int(self.expert[r])}, {self.outside}", r))
        return out

    def invalid_routes(self) -> np.ndarray:
        """Rows of routes whose expert is out of range and not the sentinel (MT501's predicate)."""
        if not hasattr(self, "_bad_routes"):
            rr = self.tables.r_rows
            e = self.expert[rr].astype(np.int64)
            bad = ~self.expert_valid(e)
            if self.sentinel is not None:
                bad &= e != self.sentinel
            self._bad_routes = rr[bad]
        return self._bad_routes


def _surplus(b: Builder, same: np.ndarray, w) -> list[int]:
    """p's writes of w's slot beyond what each peer should get: the copies meant for the waiter.

    An all-to-all writes the same slot once (or once per word) on every peer
    that waits on it; a wrong peer shows up as one rank getting it twice and
    the waiter never.  The share each owner is due comes from the waiters:
    the copies written, spread over the ranks that wait on the slot in this
    launch (the mode of the per-owner counts fails when one core serves two
    peers and sends both copies astray: as many owners get 2 as get none).
    Of the duplicates, the misdirected ones come from the cores that mostly
    write to other ranks (a core usually serves one peer).
    """
    tb = b.tables
    owner = w.rank
    if len(same) < 2:
        return []
    owners, counts = np.unique(tb.w_owner[same], return_counts=True)
    if owner in owners.tolist() or len(owners) < 2:
        return []
    waiting = sum(tb.waited(int(tb.skey(r, w.region, w.slot)), w.launch) for r in range(b.ranks))
    usual = max(1, int(counts.sum()) // max(int(waiting), len(owners) + 1))
    out = []
    for o, c in zip(owners.tolist(), counts.tolist()):
        if c > usual:
            dup = same[tb.w_owner[same] == o]
            share = [b.share_to(int(tb.w_rank[i]), int(tb.w_core[i]), o) for i in dup]
            out.extend(dup[np.argsort(share, kind="stable")][: c - usual].tolist())
    return out
