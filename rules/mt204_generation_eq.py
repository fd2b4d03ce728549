"""MT204: a generation counter compared with == where a peer can be ahead."""

from __future__ import annotations

import numpy as np

from ingest.contract import Cmp, Outcome

from ._jit import kernel
from .analysis import CoreScan, Stage, WordTable
from .analysis import codes as C
from .analysis import regions as R
from .analysis.groups import group_columns
from .base import Confidence, Family, Rule, Severity

NULL64 = C.NULL64


@kernel
def _final_max(ck, lspan, after, out):
    # Per word, the largest value it was seen to hold (a generation only grows).
    cur = NULL64
    end = 0
    for i in range(len(ck)):
        if i == 0 or ck[i] >= end:  # a new key: its entries have ck below the next key's
            end = (ck[i] // lspan + 1) * lspan
            cur = NULL64
        if after[i] != NULL64 and after[i] > cur:
            cur = after[i]
        out[i] = cur


class GenerationEq(Rule):
    """An `eq` wait on a monotonic (generation) region.

    What it does
        Looks at every wait_begin with `cmp eq` on a region marked
        `monotonic`. Error: the wait is stuck (no wait_end) or timed out,
        and its word already holds a value beyond the target (the timeout's
        observed value, or the largest value the trace wrote to the word).
        Warning: every other eq compare on a monotonic counter, one hit per
        (region, site) with the number of waits in `extra`, unless an error
        hit already names that (region, site): one defect, one root.

    Why it matters
        A generation only grows. A peer that has already entered the next
        round writes target+1, and an `==` wait spins forever on a value it
        has passed. SHMEM's barrier accepts `count` or `count+1` for exactly
        this reason; `>=` (modulo wrap) is the safe compare.

    Example
        rank 1 signals gen[0]=8 (its next barrier); rank 0 waits gen[0] eq 7
        and never returns -- wait with ge 7.

    Evidence
        The wait_begin (first), its wait_end if it has one, and the write
        that took the word beyond the target.
    """

    code = "MT204"
    name = "generation-eq"
    family = Family.STALE_FLAG
    severity = Severity.WARNING
    summary = "Generation (monotonic) compared with == where a peer can already be ahead"
    requires = (Stage.CORE_SCAN, Stage.WORD_TABLE)
    infers_from = ("monotonic",)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        kind = trace["kind"]
        rt = R.region_table(trace)
        reg = trace["region"]
        mono = (reg >= 0) & rt["monotonic"][np.where(reg >= 0, reg, 0)]
        begins = np.flatnonzero((kind == C.K_WBEGIN) & (trace["cmp"] == int(Cmp.EQ)) & mono)
        if not len(begins):
            return
        b2e, _ = ctx.stage(CoreScan).wait_pairs()
        end = b2e[begins]
        target = trace["value"][begins].astype(np.int64)
        w = ctx.stage(WordTable).table
        vmax = np.full(len(w.row), NULL64, np.int64)
        if len(w.row):
            _final_max(w.ck, np.int64(w.lspan), w.after, vmax)
        bkey = trace.key[begins]
        # The word's largest value: the last entry of its key in the sorted words.
        at = w.key_bounds(bkey)[1] - 1 if len(w.row) else np.full(len(begins), -1)
        has = (at >= 0) & (w.key_of(np.maximum(at, 0)) == bkey) if len(w.row) else np.zeros(len(begins), bool)
        held = np.where(has, vmax[np.maximum(at, 0)] if len(w.row) else NULL64, NULL64)
        timed = (end >= 0) & (trace["outcome"][np.maximum(end, 0)] == int(Outcome.TIMEOUT))
        held = np.where(timed, trace["observed"][np.maximum(end, 0)], held)
        stuck = (end < 0) | timed
        beyond = stuck & (held != NULL64) & (held > target)
        for i in np.flatnonzero(beyond):
            yield self._error(trace, w, int(begins[i]), int(end[i]), int(held[i]), bool(timed[i]))
        rest = np.flatnonzero(~beyond)
        if not len(rest):
            return
        site = trace["site"][begins[rest]].astype(np.int64)
        # The == at a (region, site) is one defect: where one of its waits is proven stuck
        # beyond its target, that error is the defect's root, and its other waits no second one.
        proven = set(zip(reg[begins[beyond]].tolist(), trace["site"][begins[beyond]].astype(np.int64).tolist()))
        _, first, _, counts = group_columns((reg[begins[rest]], site))
        for f, c in sorted(zip(first.tolist(), counts.tolist())):
            if (int(reg[begins[rest[f]]]), int(site[f])) in proven:
                continue
            b = int(begins[rest[f]])
            d = trace.describe(b)
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: wait {d['region']}[{d['offset']}] eq "
                   f"{d['value']} on a generation counter ({c} such wait(s) at this site); a peer already in "
                   f"the next round writes a larger value and the == never holds again: compare with ge")
            yield self.hit(msg, rows=(("eq wait", b),), key=(d["rank"], d["core"], d["seq"]),
                           confidence=Confidence.INFERRED, extra={"waits": int(c), "site": d.get("site")})

    def _error(self, trace, w, b, e, held, timed):
        d = trace.describe(b)
        rows = [("eq wait", b)] + ([("wait_end", e)] if e >= 0 else [])
        key = int(trace.key[b])
        lo, hi = w.key_bounds(key)
        cand = np.flatnonzero(w.after[lo:hi] == held)
        if len(cand):
            rows.append(("write beyond target", int(w.row[lo + cand[0]])))
        state = "timed out" if timed else "is stuck"
        msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: wait {d['region']}[{d['offset']}] eq "
               f"{d['value']} {state} while the word already holds {held}, beyond the target: a peer is "
               f"ahead and == never holds again; compare with ge")
        return self.hit(msg, rows=tuple(rows), key=(d["rank"], d["core"], d["seq"]), confidence=Confidence.CERTAIN,
                        rests_on=tuple((r, None) for r in range(trace.manifest.ranks)),
                        severity=Severity.ERROR, blocks=((d["rank"], d["core"]),),
                        extra={"target": d["value"], "held": held})
