"""MT204: a generation counter compared with == where a peer can be ahead."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Cmp, Outcome

from . import _hits as H
from ._jit import kernel
from .analysis import CoreScan, Stage, WordTable
from .analysis import codes as C
from .analysis import regions as R
from .analysis.groups import group_columns
from .base import Confidence, Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns

NULL64 = C.NULL64


@kernel
def _final_max(key_launch, launch_span, after, out):
    # Per word, the largest value it was seen to hold (a generation only grows).
    cur = NULL64
    end = 0
    for i in range(len(key_launch)):
        if i == 0 or key_launch[i] >= end:  # a new key: its entries have key_launch below the next key's
            end = (key_launch[i] // launch_span + 1) * launch_span
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
            _final_max(w.key_launch, np.int64(w.launch_span), w.after, vmax)
        bkey = trace.key[begins]
        # The word's largest value: the last entry of its key in the sorted words.
        at = w.key_bounds(bkey)[1] - 1 if len(w.row) else np.full(len(begins), -1)
        has = (at >= 0) & (w.key_of(np.maximum(at, 0)) == bkey) if len(w.row) else np.zeros(len(begins), bool)
        held = np.where(has, vmax[np.maximum(at, 0)] if len(w.row) else NULL64, NULL64)
        timed = (end >= 0) & (trace["outcome"][np.maximum(end, 0)] == int(Outcome.TIMEOUT))
        held = np.where(timed, trace["observed"][np.maximum(end, 0)], held)
        stuck = (end < 0) | timed
        beyond = stuck & (held != NULL64) & (held > target)
        proven = np.flatnonzero(beyond)
        warned, waits = _warnings(trace, begins, beyond)
        if not len(proven) and not len(warned):
            return
        # Errors first, in wait order, then the warnings: one batch, the order the hits always had.
        wait = np.concatenate((begins[proven], warned))
        error = np.arange(len(wait)) < len(proven)

        def then_warnings(of_errors, of_warnings) -> np.ndarray:  # a column of errors and warnings
            return np.concatenate((np.asarray(of_errors, np.int64), np.broadcast_to(of_warnings, len(warned))))

        rows = np.stack((wait, then_warnings(end[proven], -1),
                         then_warnings(_writes_beyond(w, trace.key[begins[proven]], held[proven]), -1)), axis=1)
        d = H.described(trace, wait, ("rank", "core", "launch", "region", "offset", "value", "site"))
        everyone = tuple((r, None) for r in range(trace.manifest.ranks))
        columns, tables = coded_columns((
            ("confidence", [Confidence.CERTAIN if e else Confidence.INFERRED for e in error.tolist()]),
            ("severity", [Severity.ERROR if e else None for e in error.tolist()]),
            ("rests_on", [everyone if e else () for e in error.tolist()]),
            ("blocks", [((r, c),) if e else () for e, r, c in zip(error.tolist(), d["rank"], d["core"])]),
            ("region", d["region"]), ("site", d["site"])))
        columns.update({name: np.array(d[name], np.int64) for name in ("rank", "core", "launch", "offset", "value")})
        columns.update(error=error, timed_out=then_warnings(timed[proven], 0).astype(bool),
                       held=then_warnings(held[proven], -1), waits=then_warnings(np.zeros(len(proven), np.int64), waits))
        yield HitColumns(code=self.code, fields=EqWait, render=_message, extra=_extra, columns=columns, tables=tables,
                         roles=("eq wait", "wait_end", "write beyond target"), rows=rows,
                         key=H.row_keys(trace, wait))


def _warnings(trace, begins: np.ndarray, beyond: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per (region, site) none of whose eq waits is proven beyond its target, in row order: its
    first eq wait, and how many it has."""
    reg = trace["region"]
    rest = np.flatnonzero(~beyond)
    if not len(rest):
        return rest, rest
    site = trace["site"][begins[rest]].astype(np.int64)
    # The == at a (region, site) is one defect: where one of its waits is proven stuck
    # beyond its target, that error is the defect's root, and its other waits no second one.
    proven = set(zip(reg[begins[beyond]].tolist(), trace["site"][begins[beyond]].astype(np.int64).tolist()))
    _, first, _, counts = group_columns((reg[begins[rest]], site))
    heads = sorted((f, c) for f, c in zip(first.tolist(), counts.tolist())
                   if (int(reg[begins[rest[f]]]), int(site[f])) not in proven)
    return (np.array([begins[rest[f]] for f, _ in heads], np.int64), np.array([c for _, c in heads], np.int64))


def _writes_beyond(w, keys: np.ndarray, held: np.ndarray) -> list[int]:
    """Per proven wait, the first write the word table holds of its word that left it at ``held`` (-1: none)."""
    out = []
    for key, value in zip(keys.tolist(), held.tolist()):
        lo, hi = w.key_bounds(key)
        cand = np.flatnonzero(w.after[lo:hi] == value)
        out.append(int(w.row[lo + cand[0]]) if len(cand) else -1)
    return out


class EqWait(NamedTuple):
    """An eq wait on a generation counter: proven stuck beyond its target (error), else a warning
    for its (region, site)."""

    rank: int
    core: int
    launch: int
    region: str
    offset: int
    value: int  # the target
    site: int | None
    error: bool  # stuck or timed out while the word already held more
    timed_out: bool
    held: int  # what the word held (errors)
    waits: int  # eq waits at the site (warnings)


def _message(f: EqWait) -> str:
    where = f"rank {f.rank} core {f.core} launch {f.launch}: wait {f.region}[{f.offset}] eq {f.value}"
    if f.error:
        state = "timed out" if f.timed_out else "is stuck"
        return (f"{where} {state} while the word already holds {f.held}, beyond the target: a peer is "
                f"ahead and == never holds again; compare with ge")
    return (f"{where} on a generation counter ({f.waits} such wait(s) at this site); a peer already in "
            f"the next round writes a larger value and the == never holds again: compare with ge")


def _extra(f: EqWait) -> dict:
    return {"target": f.value, "held": f.held} if f.error else {"waits": f.waits, "site": f.site}
