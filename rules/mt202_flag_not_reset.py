"""MT202: a flag not back at its reset value when its launch ends."""

from __future__ import annotations

import numpy as np

from . import _hits as H
from ._flag_causes import behind_stale_counts, late_puts
from ._jit import kernel
from .analysis import CoreScan, HappensBefore, Stage, WordTable
from .analysis import codes as C
from .analysis import regions as R
from .analysis.groups import group_columns, split_groups
from .base import Confidence, Family, Rule, Severity

_SHOW = 16  # offsets named in a message
K_WRITE, OP_SET = C.K_WRITE, C.OP_SET


@kernel
def _unreset(wck, lspan, wkind, wop, wvalue, wafter, wlast, wregion, reset, has_reset, monotonic, out):
    # Per key run of the table: last entries of a launch off the reset value, unless excused by
    # clean-before-use (the next launch's first write to the word, or any launch's, is the reset).
    m = len(wck)

    def clean_first(i):  # a launch's first write to the word is the owner's reset
        return (i == 0 or wck[i] != wck[i - 1]) and wkind[i] == K_WRITE and wop[i] == OP_SET \
            and wvalue[i] == reset[wregion[i]]

    a = 0
    while a < m:
        b = a
        anyclean = False
        end = (wck[a] // lspan + 1) * lspan  # the key's entries: ck below the next key's
        while b < m and wck[b] < end:
            anyclean = anyclean or clean_first(b)
            b += 1
        for i in range(a, b):
            r = wregion[i]
            if not wlast[i] or not has_reset[r] or monotonic[r] or wafter[i] == reset[r]:
                continue  # unknown (a put without a value) is off reset: nothing reset it
            out[i] = not (clean_first(i + 1) if i + 1 < b else anyclean)
        a = b


@kernel
def _prev_own_reset(idx, wck, lspan, wkind, wrow, wvalue, wregion, rank, wpr, reset, out):
    # Per last entry: the latest earlier entry of its (key, launch) that is the owner's reset.
    # A backward walk per group: each group has one last entry, so the walks cover the table once.
    for t in range(len(idx)):
        i = idx[t]
        x = i - 1
        while x >= 0 and wck[x] == wck[i]:
            if wkind[x] == K_WRITE and rank[wrow[x]] == wck[x] // lspan // wpr and wvalue[x] == reset[wregion[x]]:
                out[t] = x
                break
            x -= 1


class FlagNotReset(Rule):
    """A flag word left off its region's `reset` value at the end of a launch.

    What it does
        For every word of a region with `reset` (and not `monotonic`), takes
        the value it holds at the end of each launch from the launch's writes
        in happens-before order (unknown after a put that carries no value;
        barrier phases; a write after a wait on the word on the same core
        follows the write that satisfied the wait) and
        reports words not at `reset`. Hits are grouped per (owner rank,
        region, launch) and located at the owner, who should have reset them.
        Skipped: launches of the owner that did not finish or never began
        (a core stuck or without kernel_end, or the owner still stuck in an
        earlier launch: the hang rules explain those), and words whose
        next launch begins by resetting them (clean-before-use, as DeepEP's
        low-latency `next_clean` does), or whose key showed that pattern.
        Where every reported word was last written by a payload put that a
        flag write of its producer overtook (an MT401 hit), the hit cites
        that MT401 as its cause: the put landed after the owner took and
        reset the slots it saw, so the missing drain is the root. A group
        whose words the owner never waited on, in a launch it began with a
        counter word not reset (this rule's hit on a counter region the
        launch before), cites that hit: rows the stale count made it skip.
        Where the owner's or a writer's launch is not whole in the trace
        (ring wrap, missing dump) the reset may be in the gap: the hit is
        then a partial-trace note naming it.

    Why it matters
        The next round's wait on that word is satisfied at once, by the old
        value: the consumer reads rows that are not there yet (MT201 catches
        it where the trace can order it), or a count is off by the old value.

    Example
        rank 1 signals ready[3]=1 to rank 0; rank 0 waits ready[3]==1 and
        copies the row, but never writes ready[3]=0.

    Evidence
        The owner's wait on the word (first, when it waited) and the last
        write of the launch to each reported word (up to 16).
    """

    code = "MT202"
    name = "flag-not-reset"
    family = Family.STALE_FLAG
    severity = Severity.ERROR
    summary = "Flag not back at its reset value at the end of a launch"
    requires = (Stage.CORE_SCAN, Stage.HAPPENS_BEFORE, Stage.WORD_TABLE)
    cites = ("MT401",)
    infers_from = ("reset", "slot_words")

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        words = ctx.stage(WordTable)
        w = words.table
        order, scan = ctx.stage(HappensBefore), ctx.stage(CoreScan)
        rt = R.region_table(trace)
        if not len(w.row):
            return
        kind = trace["kind"]
        bad = np.zeros(len(w.row), bool)
        _unreset(w.ck, np.int64(w.lspan), w.kind, w.op, w.value, w.after, w.last, w.region, rt["reset"],
                 rt["has_reset"], rt["monotonic"], bad)
        idx = np.flatnonzero(bad)
        if not len(idx):
            return
        wpr = trace.manifest.words_per_rank
        owner = w.key_of(idx) // wpr
        # Only launches the owner ran to the end: one it never reached (stuck in an earlier
        # launch, or stopped) has had no chance to consume and reset what peers sent it.
        ends = kind == C.K_END
        done = set(zip(trace["rank"][ends].tolist(), trace["launch"][ends].tolist())) \
            - scan.incomplete_launches()
        pairs = group_columns((owner, w.launch_of(idx)))  # one test per (owner, launch), not per word
        keep = np.array([(o, L) in done for o, L in pairs.values.T.tolist()], bool)[pairs.inverse]
        idx, owner = idx[keep], owner[keep]
        keep = ~_reset_after_sync(trace, order, scan, w, idx)
        idx, owner = idx[keep], owner[keep]
        if not len(idx):
            return
        ends = np.flatnonzero(kind == C.K_WEND)
        eck = w.ckey(trace.key[ends], trace["launch"][ends])
        eorder = np.argsort(eck, kind="stable")
        eck, ends = eck[eorder], ends[eorder]
        # Groups in order of their first member, members in table order: one stable sort, split
        # at the boundaries (a mask per group would cost groups x entries).
        hits = [self._hit(trace, order, w, members, eck, ends)
                for members in split_groups((owner, w.region[idx], w.launch_of(idx)), idx)]
        yield from behind_stale_counts(trace, hits)

    def _hit(self, trace, order, w, members, eck, ends):
        m0 = int(members[0])
        own, region, off0 = trace.decode_key(int(w.key_of(m0)))
        launch = int(w.launch_of(m0))
        reset = trace.manifest.regions[region].reset
        rows = []
        # The owner's last wait on the first word, if it waited: it consumed and then did not reset.
        hi = np.searchsorted(eck, w.ck[m0], "right")
        if hi > 0 and eck[hi - 1] == w.ck[m0]:
            rows.append(("owner's wait", int(ends[hi - 1])))
        # A hit can name thousands of words: only the first _SHOW rows and offsets become Python values.
        last_rows = w.row[members]
        _, first_at = np.unique(last_rows, return_index=True)
        rows += [("last write", int(r)) for r in last_rows[np.sort(first_at)[:_SHOW]].tolist()]
        nwords = len(members)
        # trace.decode_key's offset of the members shown.
        rest = w.key_of(members[:_SHOW]) % trace.manifest.words_per_rank
        base = trace.region_base
        offs = (rest - base[np.searchsorted(base, rest, "right") - 1]).tolist()
        after = w.after[members]
        vals = sorted(set(np.unique(after[after != C.NULL64]).tolist())
                      | ({"unknown"} if (after == C.NULL64).any() else set()), key=str)
        dl = trace.describe(int(w.row[m0]))
        shown = ", ".join(map(str, offs)) + (" ..." if nwords > _SHOW else "")
        msg = (f"rank {own} launch {launch}: {nwords} word(s) of {H.region_name(trace, region)} not back at "
               f"reset {reset} at the end of the launch (offsets {shown}; value(s) {', '.join(map(str, vals))}); "
               f"last written by rank {dl['rank']} core {dl['core']} seq {dl['seq']} ({dl['kind']}); ")
        causes = late_puts(trace, order, last_rows)
        if causes:  # the producer's missing drain, not the owner's reset, left them set
            msg += (f"each was last written by a put still in flight at the producer's flag write (MT401): it "
                    f"landed after rank {own} took the slots it saw and reset those")
        else:
            msg += f"rank {own} should have reset them"
        conf = H.confidence_for(trace, ranks=sorted({own, dl["rank"]})) or Confidence.INFERRED
        weak = {"message": msg, "confidence": conf}
        # The reset is an absence: where the owner's (or a writer's) launch is not whole, the
        # reset, or the write order that made it unneeded, may be in the lost part of a ring.
        gap = H.launch_gap(trace, {own} | set(np.unique(trace["rank"][last_rows]).tolist()), launch)
        if gap:
            weak = H.weakened(msg, gap)
        first = rows[0][1]
        return self.hit(rows=tuple(rows), caused_by=causes, **weak,
                        key=(int(trace["rank"][first]), int(trace["core"][first]), int(trace["seq"][first])),
                        location={"rank": own, "launch": launch, "region": H.region_name(trace, region),
                                  "offset": off0},
                        extra={"owner": own, "words": nwords, "offsets": offs, "values": vals})


def _reset_after_sync(trace, order, scan, w, idx) -> np.ndarray:
    """Per last entry ``idx``: an owner reset sorted before it is ordered after it through one flag sync.

    The word table orders writes of different ranks by barrier phase and then
    by row; a protocol that synchronises through flags (signal, then wait)
    instead of barriers leaves the owner's reset and a peer's put in one phase,
    so the row order may put the reset first. The reset follows the put when
    the peer's core completed the put (a quiet of its engine), then wrote a
    word the owner's core waited on, with the value the wait wanted, in the same
    launch, and the owner reset the word after that wait ended.
    """
    out = np.zeros(len(idx), bool)
    if not len(idx):
        return out
    kind, rank, launch = trace["kind"], trace["rank"], trace["launch"]
    rt = R.region_table(trace)
    n_e = len(w.row)
    prev = np.full(len(idx), -1, np.int64)
    _prev_own_reset(idx, w.ck, np.int64(w.lspan), w.kind, w.row, w.value, w.region, rank,
                    np.int64(trace.manifest.words_per_rank), rt["reset"], prev)
    rl = w.row[idx]
    ok = prev >= 0
    rr = w.row[np.maximum(prev, 0)]
    # Another core's write: of a peer rank, or of a sibling core of the owner's (an atomic add
    # to its own rank that core 0 resets after waiting on the sibling's done flag).
    core = trace["core"]
    ok &= (w.phase[np.maximum(prev, 0)] == w.phase[idx]) & ((rank[rl] != rank[rr]) | (core[rl] != core[rr]))
    cov = order.cover(False)[rl]
    ok &= cov >= 0
    if not ok.any():
        return out
    # Sync edges: a word write (any entry of the table) and a completed wait on that word in the
    # same launch whose target is the value written.
    _, e2b = scan.wait_pairs()
    we = np.flatnonzero((kind == C.K_WEND) & (trace.key >= 0) & (e2b >= 0))
    if not len(we):
        return out
    wck = w.ckey(trace.key[we], launch[we])
    wval = np.asarray(trace["value"], np.int64)[e2b[we]]
    both_ck = np.concatenate((w.ck, wck))
    both_v = np.concatenate((w.value, wval))
    gid = group_columns((both_ck, both_v)).inverse
    gs_, gw = gid[:n_e], gid[n_e:]
    so = np.argsort(gs_, kind="stable")
    lo = np.searchsorted(gs_[so], gw, "left")
    hi = np.searchsorted(gs_[so], gw, "right")
    cnt = hi - lo
    e_row, src = WordTable.expand(lo, cnt)
    s_row = w.row[so[e_row]]
    e_row = we[src]
    if not len(s_row):
        return out
    seg = trace.segments
    nseg = len(seg)
    sseg = np.searchsorted(seg, s_row, "right") - 1
    eseg = np.searchsorted(seg, e_row, "right") - 1
    n = np.int64(trace.n)
    pk = sseg.astype(np.int64) * nseg + eseg
    comp = pk * n + s_row
    order = np.argsort(comp, kind="stable")
    comp, pk, e_sorted = comp[order], pk[order], e_row[order]
    # Per (producer core, owner core): the earliest wait end among edges from s onwards.
    earliest_end = np.minimum.accumulate((e_sorted + pk * n)[::-1])[::-1] - pk * n
    c = np.flatnonzero(ok)
    core_pair = (np.searchsorted(seg, rl[c], "right") - 1).astype(np.int64) * nseg + \
        (np.searchsorted(seg, rr[c], "right") - 1)
    p = np.searchsorted(comp, core_pair * n + cov[c] + 1, "left")
    pv = np.minimum(p, len(comp) - 1)
    # An edge shares its launch with its wait; s after the put and e before the reset, both on
    # their cores, put it in the launch of both.
    out[c] = (p < len(comp)) & (pk[pv] == core_pair) & (earliest_end[pv] < rr[c])
    return out
