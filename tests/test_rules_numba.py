"""The compiled kernels of the MT2xx-MT5xx rules agree with their pure-Python originals."""

from __future__ import annotations

import numpy as np
import pytest

from ingest.contract import Engine, Kind, Op, PipeEvent, PipeOp, Scope
from rules import mt402_atomic_none_undrained as m402
from rules import mt404_amo_used_before_quiet as m404
from rules import _get_scan as get_scan
from rules import mt603_concurrent_rma_amo as m603
from rules import mt604_overlapping_output_writes as m604
from rules.analysis import _passes as P
from rules.analysis import _phases as PH
from rules.analysis import _unfenced as U
from rules.analysis import _words as W
from rules.analysis import codes as C

NRANKS = 4


def _trace(seed, n=400):
    rng = np.random.default_rng(seed)
    kinds = np.array([int(k) for k in Kind], np.int8)
    a = {
        "kind": rng.choice(kinds, n).astype(np.int8),
        "engine": rng.choice(np.array([int(e) for e in Engine] + [C.NULL8], np.int8), n),
        "peer": rng.choice(np.array(list(range(NRANKS)) + [C.NULL16], np.int16), n),
        "op": rng.choice(np.array([int(o) for o in Op], np.int8), n),
        "scope": rng.choice(np.array([int(s) for s in Scope], np.int8), n),
        "pipe_op": rng.choice(np.array([int(p) for p in PipeOp], np.int8), n),
        "event": rng.choice(np.array([int(e) for e in PipeEvent], np.int8), n),
        "launch": np.sort(rng.integers(0, 3, n)).astype(np.int32),
        "key": rng.integers(-1, 20, n).astype(np.int64),
        "flag": rng.random(n) < 0.3,
    }
    cuts = np.sort(rng.choice(np.arange(1, n), 5, replace=False))
    a["seg"] = np.concatenate(([0], cuts, [n])).astype(np.int64)
    return a


def _both(fn, make_outs, *args):
    outs_c, outs_p = make_outs(), make_outs()
    fn(*args, *outs_c)
    fn.py_func(*args, *outs_p)
    for c, p in zip(outs_c, outs_p):
        np.testing.assert_array_equal(c, p)


def _full(n, k=1, fill=-1, dtype=np.int64):
    return lambda: tuple(np.full(n, fill, dtype) for _ in range(k))


def _returned(fn, *args):
    """A kernel that returns its arrays: compiled and pure Python agree."""
    c, p = fn(*args), fn.py_func(*args)
    for x, y in zip(c if isinstance(c, tuple) else (c,), p if isinstance(p, tuple) else (p,)):
        np.testing.assert_array_equal(x, y)


def _completion(a, fences=False, ends=True, peers=True):
    """The happens-before stage's completion pass over a synthetic trace (what the scans read)."""
    out = np.full(len(a["kind"]), -1, np.int64)
    peer = a["peer"] if peers else np.where(a["kind"] == C.K_QUIET, np.int16(C.NULL16), a["peer"])
    P._completion_kernel(a["seg"], a["kind"], a["engine"], peer, fences, ends, NRANKS, out)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_kernels_match_py_func(seed):
    a = _trace(seed)
    n = len(a["kind"])
    _both(PH._phase_kernel, lambda: (np.zeros(n, np.int32), np.zeros(n, np.int32)),
          a["seg"], a["kind"], a["scope"], a["pipe_op"], a["launch"])
    for fences in (False, True):
        for ends in (False, True):
            _both(P._completion_kernel, _full(n), a["seg"], a["kind"], a["engine"], a["peer"], fences, ends, NRANKS)
    _both(P._atomic_kernel, _full(n), a["seg"], a["kind"], a["op"])
    _both(P._wait_kernel, _full(n, 2), a["seg"], a["kind"])
    ordered = np.zeros(C.N_ENGINES, bool)
    ordered[int(Engine.ROCE)] = True
    done = _completion(a, fences=True, ends=False)
    _returned(U._scan, a["seg"], a["kind"], a["engine"], a["peer"], a["flag"], ordered, NRANKS, done)
    _returned(U._put_flag, a["seg"], a["kind"], a["engine"], a["peer"], a["flag"], ordered, NRANKS, done)
    rng = np.random.default_rng(seed)
    prev = np.where(rng.random(n) < 0.3, rng.integers(0, n, n), -1).astype(np.int64)
    dext = rng.integers(1, 4, n).astype(np.int64)
    tracked = (a["kind"] == C.K_GET) & (rng.random(n) < 0.8)
    done = _completion(a)
    events = get_scan.Events(a["kind"], a["engine"], a["pipe_op"], a["event"].astype(np.int64), a["key"])
    _returned(get_scan.scan, a["seg"], events, get_scan.Gets(dext, tracked, prev), a["flag"], done)
    _returned(m402._scan, a["seg"], a["kind"], a["engine"], a["op"], a["pipe_op"], a["event"],
              _completion(a, ends=False, peers=False))
    _both(m404._scan, _full(n), a["seg"], a["kind"], a["engine"], a["peer"], a["key"], NRANKS, done)
    _both(m603._scan, _full(n), a["seg"], a["kind"], a["engine"], a["peer"], NRANKS, done)


@pytest.mark.parametrize("seed", range(4))
def test_sweep_and_simulate_match_py_func(seed):
    rng = np.random.default_rng(100 + seed)
    m = 300
    group = np.sort(rng.integers(0, 5, m)).astype(np.int64)
    start = rng.integers(0, 50, m).astype(np.int64)
    order = np.lexsort((start, group))
    group, start = group[order], start[order]
    end = start + rng.integers(1, 8, m)
    core = rng.integers(0, 3, m).astype(np.int64)
    _both(m604._sweep, _full(m), group, start, end, core)
    key = np.sort(rng.integers(0, 10, m)).astype(np.int64)
    launch = rng.integers(0, 3, m).astype(np.int64)
    order = np.lexsort((launch, key))
    key, launch = key[order], launch[order]
    op = rng.choice(np.array([C.OP_SET, C.OP_ADD], np.int64), m)
    value = np.where(rng.random(m) < 0.1, C.NULL64, rng.integers(-3, 9, m)).astype(np.int64)
    init = rng.integers(-1, 2, m).astype(np.int64)
    known = rng.random(m) < 0.5
    _both(W._simulate, lambda: (np.zeros(m, np.int64), np.zeros(m, bool)), key, launch, op, value, init, known)


def test_sweep_finds_overlap_with_other_core_only():
    group = np.zeros(3, np.int64)
    start = np.array([0, 5, 6], np.int64)
    end = np.array([10, 8, 7], np.int64)
    core = np.array([0, 0, 1], np.int64)
    hit = np.full(3, -1, np.int64)
    m604._sweep(group, start, end, core, hit)
    assert hit.tolist() == [-1, -1, 0]


@pytest.mark.parametrize("seed", range(4))
def test_put_flag_agrees_with_flag_hits(seed):
    """A put maps to a flag write exactly when that flag write is an MT401 hit (MT202 cites its key)."""
    a = _trace(seed, 2000)
    ordered = np.zeros(C.N_ENGINES, bool)
    done = _completion(a, fences=True, ends=False)
    hit_put, hit_q = U._scan(a["seg"], a["kind"], a["engine"], a["peer"], a["flag"], ordered, NRANKS, done)
    pf = U._put_flag(a["seg"], a["kind"], a["engine"], a["peer"], a["flag"], ordered, NRANKS, done)
    assert (pf >= 0).any() and (hit_put >= 0).any()
    assert (hit_put[pf[pf >= 0]] >= 0).all()
    # ... and every reported outstanding put maps to the flag write that reported it, or an earlier one.
    f = np.flatnonzero(hit_put >= 0)
    assert (pf[hit_put[f]] >= 0).all() and (pf[hit_put[f]] <= f).all()


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("lspan, words_per_rank", [(5, 12), (2**20 + 5, 12), (5, 2**59)],
                         ids=["counted", "far-apart-launches", "owner-bound-overflows"])
def test_unreset_entries_grouped_per_owner_region_and_launch_in_order_of_first_entry(seed, lspan, words_per_rank):
    """``_unreset._group_runs`` against its contract, written the slow way: the entries (table order:
    key, then launch) per (owner, region, launch), groups in order of their first entry, each group's
    entries in table order; compiled and pure Python alike. A launch span too wide to count launches
    in (launch numbers far apart, as the fuzzer writes them) takes the sorting path, in bounded memory;
    an owner whose next owner's first composite key overflows int64 is told by division."""
    from rules.analysis import _unreset as S

    rng = np.random.default_rng(seed)
    region_base = np.array([0, 4, 9])  # three regions per owner
    keys = np.sort(rng.integers(0, 3, 300) * words_per_rank + rng.integers(0, 12, 300))
    launch = rng.integers(0, 5, 300) * (lspan // 5)  # five launches, spread over the span
    ck = np.sort(keys * lspan + launch).astype(np.int64)
    region = (np.searchsorted(region_base, (ck // lspan) % words_per_rank, "right") - 1).astype(np.int16)
    idx = np.flatnonzero(rng.random(300) < 0.6).astype(np.int64)
    groups: dict[tuple, list[int]] = {}
    for i in idx.tolist():
        groups.setdefault((ck[i] // lspan // words_per_rank, region[i], ck[i] % lspan), []).append(i)
    want = list(groups.values())  # dicts keep first-insertion order: groups by their first entry
    for fn in (S._group_runs, S._group_runs.py_func):
        out, starts = np.empty_like(idx), np.empty(len(idx) + 1, np.int64)
        count = fn(idx, ck, np.int64(lspan), np.int64(words_per_rank), region, out, starts)
        starts[count] = len(idx)
        assert [g.tolist() for g in np.split(out, starts[1:count])] == want


@pytest.mark.parametrize("seed", range(4))
def test_distinct_values_per_group_the_slow_way(seed):
    """``distinct_per_group`` (MT202's and MT401's): each group's sorted distinct values, runs of equal values and
    empty groups included, equal to numpy's per-group np.unique."""
    from rules.analysis.groups import distinct_per_group

    rng = np.random.default_rng(seed)
    values = np.repeat(rng.integers(-3, 4, 200), rng.integers(1, 5, 200)).astype(np.int64)
    members = np.sort(rng.choice(len(values), size=len(values) // 2, replace=False))
    bounds = np.unique(np.concatenate(([0, len(members)], rng.integers(0, len(members), 12))))
    bounds = np.insert(bounds, 3, bounds[2])  # an empty group
    distinct, edges = distinct_per_group(values, members, bounds)
    for g in range(len(bounds) - 1):
        want = np.unique(values[members[bounds[g]:bounds[g + 1]]])
        assert distinct[edges[g]:edges[g + 1]].tolist() == want.tolist()
