"""The per-core passes that complete and pair events: quiet completion, waits, atomic windows.

Every pass here is per (rank, core) segment in dataset order, so none of them
sorts: one numba scan each (the barrier phases are ``_phases``'):

- ``completed_at``: per one-sided op, the first later row of its core that
  completes it (a quiet of its engine, of that peer or of all; kernel_end for
  MTE and local work, whose pipes drain when the kernel exits) or, with
  fences, also orders it (a fence). Every rule and analysis that asks whether
  a quiet completed an op reads it; none scans for quiets itself.
- ``atomic_window``: per row, the atomic_mode add row whose window it is in.
- ``wait_pairs``: each wait_begin's wait_end (or -1: still waiting).

The first belongs to the happens-before stage, the others (and
``incomplete_launches``) to the core scan: ``cached`` names the stage, so a
rule that did not declare it cannot reach them.
"""

from __future__ import annotations

import numpy as np

from .._jit import kernel
from ._cache import cached
from .codes import (
    E_ALL,
    E_LOCAL,
    E_MTE,
    K_AMO,
    K_AMODE,
    K_BEGIN,
    K_END,
    K_FENCE,
    K_GET,
    K_PUT,
    K_PUTSIG,
    K_QUIET,
    K_SIGNAL,
    K_WBEGIN,
    K_WEND,
    N_ENGINES,
    NULL8,
    NULL16,
    OP_ADD,
    rows_full,
)
from .regions import amo_transport
from .stages import Stage


# ---- per-core scans ---------------------------------------------------------
@kernel
def _completion_kernel(seg, kind, engine, peer, fences, ends, nranks, out):
    # Backward: the nearest later completing row per engine (any peer) and per
    # (engine, peer); an op's completion is the nearer of its two. Not reset at
    # kernel_begin: a row past its launch is what callers that track a launch see as "not yet".
    for s in range(len(seg) - 1):
        any_ = np.full(N_ENGINES, -1, np.int64)
        per = np.full((N_ENGINES, nranks), -1, np.int64)
        for i in range(seg[s + 1] - 1, seg[s] - 1, -1):
            k = kind[i]
            if k == K_QUIET or (fences and k == K_FENCE):
                e = engine[i]
                p = peer[i]
                for x in range(N_ENGINES):
                    if e == NULL8 or e == E_ALL or e == x:
                        if p == NULL16 or p < 0 or p >= nranks:
                            any_[x] = i
                        else:
                            per[x, p] = i
            elif k == K_END:
                if ends:
                    any_[E_MTE] = i
                    any_[E_LOCAL] = i
            elif k == K_PUT or k == K_GET or k == K_PUTSIG or k == K_SIGNAL or k == K_AMO:
                e = engine[i]
                if e < 0 or e >= N_ENGINES:
                    continue
                a = any_[e]
                p = peer[i]
                b = per[e, p] if (p >= 0 and p < nranks) else -1
                if a < 0:
                    out[i] = b
                elif b < 0:
                    out[i] = a
                else:
                    out[i] = min(a, b)


def completed_at(trace, fences: bool = False, ends: bool = True, transport: bool = False,
                 peers: bool = True) -> np.ndarray:
    """Per one-sided op row, the first later row of its core that completes it; -1 if none in the trace.

    The one answer to "does this quiet complete that op": a quiet of the op's
    engine (or all, or none named) and of its peer (or of every peer). The
    places that ask differ on purpose only in what else counts, so those are
    the parameters (each combination is one cached pass):

    - ``fences``: a fence counts too. MT401 asks whether a flag can overtake a
      payload, which a fence prevents (it orders delivery); whoever asks
      whether the op's effect is done (the race and drain rules) counts quiets
      alone, since a fence completes nothing.
    - ``ends``: kernel_end completes MTE and local work (their pipes drain when
      the kernel exits). MT401 leaves it out: it scans a launch and never asks
      past its end, and its findings were written without it.
    - ``transport``: an amo's engine is its transport (the manifest's map,
      ``regions.amo_transport``) rather than the event's. MT603 asks about the
      queue the amo really took; the others key amos by the engine the event names.
    - ``peers``: a quiet naming a peer completes that peer's ops only. MT402 asks
      whether the MTE3 pipe drained, and ``aclshmem_quiet`` is
      ``PipeBarrier<PIPE_ALL>``: it drains the engine whatever peer it names, so
      there the quiets' peers are forgotten (``peers=False``).

    The result is not reset at kernel_begin: a caller that tracks one launch
    reads a completion past its launch's end as "not completed in the launch".
    """
    transport = bool(transport) and trace.manifest.transport is not None  # no map: the events' engines

    def build():
        out = rows_full(trace.n)
        if trace.n:
            engine = trace["engine"]
            if transport:
                engine = amo_transport(trace)[0]  # the engine column's type
            peer = trace["peer"]
            if not peers:
                peer = np.where(trace["kind"] == K_QUIET, peer.dtype.type(NULL16), peer)
            _completion_kernel(trace.segments, trace["kind"], engine, peer,
                               bool(fences), bool(ends), int(trace.manifest.ranks), out)
        return out
    key = f"completed_at:{bool(fences)}:{bool(ends)}:{transport}:{bool(peers)}"
    return cached(trace, key, build, Stage.HAPPENS_BEFORE)


@kernel
def _atomic_kernel(seg, kind, op, out):
    for s in range(len(seg) - 1):
        cur = -1
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == K_BEGIN:
                cur = -1
            out[i] = cur  # an atomic_mode row sees the mode before it
            if k == K_AMODE:
                cur = i if op[i] == OP_ADD else -1


def atomic_window(trace) -> np.ndarray:
    """Per row, the atomic_mode add row whose window it lies in; -1 outside any add window."""
    def build():
        out = rows_full(trace.n)
        if trace.n:
            _atomic_kernel(trace.segments, trace["kind"], trace["op"], out)
        return out
    return cached(trace, "atomic_window", build, Stage.CORE_SCAN)


@kernel
def _wait_kernel(seg, kind, b2e, e2b):
    for s in range(len(seg) - 1):
        open_ = -1
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == K_WBEGIN:
                open_ = i
            elif k == K_WEND and open_ >= 0:
                b2e[open_] = i
                e2b[i] = open_
                open_ = -1
            elif k == K_BEGIN:
                open_ = -1


def wait_pairs(trace) -> tuple[np.ndarray, np.ndarray]:
    """(begin_to_end, end_to_begin) row maps; -1 where unpaired (a begin with -1 never ended)."""
    def build():
        b2e, e2b = rows_full(trace.n), rows_full(trace.n)
        if trace.n:
            _wait_kernel(trace.segments, trace["kind"], b2e, e2b)
        return b2e, e2b
    return cached(trace, "wait_pairs", build, Stage.CORE_SCAN)


def incomplete_launches(trace) -> set[tuple[int, int]]:
    """(rank, launch) pairs where some core did not reach kernel_end or sits in a wait.

    Their flags and counters are not at rest, so end-of-round checks skip them:
    the hang rules explain those.
    """
    def build():
        n = trace.n
        if n == 0:
            return set()
        kind, launch, rank = trace["kind"], trace["launch"], trace["rank"]
        last = np.zeros(n, bool)
        last[-1] = True
        seg_end = trace.segments[1:-1] - 1
        last[seg_end] = True
        last[:-1] |= launch[1:] != launch[:-1]
        bad = last & (kind != K_END)
        b2e, _ = wait_pairs(trace)
        bad |= (kind == K_WBEGIN) & (b2e < 0)
        return set(zip(rank[bad].tolist(), launch[bad].tolist()))
    return cached(trace, "incomplete_launches", build, Stage.CORE_SCAN)
