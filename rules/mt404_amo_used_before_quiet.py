"""MT404: a UDMA/RoCE atomic whose effect is relied on before its engine's quiet."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from ._jit import kernel
from .analysis import HappensBefore, Stage
from .analysis import codes as C
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns

K_BEGIN, K_END, K_AMO = C.K_BEGIN, C.K_END, C.K_AMO
K_SIGNAL, K_PUTSIG, K_WBEGIN, K_BBEGIN = C.K_SIGNAL, C.K_PUTSIG, C.K_WBEGIN, C.K_BBEGIN
E_UDMA, E_ROCE, NE = C.E_UDMA, C.E_ROCE, C.N_ENGINES


@kernel
def _scan(seg, kind, engine, peer, key, nranks, done, use):
    # done: the completion pass (quiets alone: a fence orders, it completes nothing). An amo is
    # outstanding from its issue until the row that completes it; entries whose completion has
    # passed are dropped where they are next looked at.
    for s in range(len(seg) - 1):
        outst = np.full((NE, nranks), -1, np.int64)  # first unquieted UDMA/RoCE amo per (engine, peer)
        nout = 0  # entries of outst set: most events find none and skip the (engine, peer) sweep
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == K_BEGIN:
                outst[:, :] = -1
                nout = 0
            elif k == K_AMO:
                e = engine[i]
                p = peer[i]
                if (e == E_UDMA or e == E_ROCE) and 0 <= p < nranks:
                    a = outst[e, p]
                    if a >= 0 and 0 <= done[a] < i:
                        outst[e, p] = -1
                        nout -= 1
                    if outst[e, p] < 0:
                        outst[e, p] = i
                        nout += 1
            elif k == K_BBEGIN or k == K_END or k == K_SIGNAL or k == K_PUTSIG or k == K_WBEGIN:
                if nout == 0:
                    continue
                p = peer[i]
                for x in range(NE):
                    for q in range(nranks):
                        a = outst[x, q]
                        if a < 0:
                            continue
                        if 0 <= done[a] < i:
                            outst[x, q] = -1
                            nout -= 1
                            continue
                        # A barrier or the kernel's end relies on every earlier op;
                        # a signal on those to its peer; a wait on the word itself.
                        if k == K_BBEGIN or k == K_END or ((k == K_SIGNAL or k == K_PUTSIG) and p == q) \
                                or (k == K_WBEGIN and key[a] == key[i]):
                            use[a] = i
                            outst[x, q] = -1
                            nout -= 1


class AmoUsedBeforeQuiet(Rule):
    """A UDMA or RoCE atomic relied on before the quiet of its engine.

    What it does
        Per core, tracks each amo issued on the UDMA or RoCE engine until a
        quiet of that engine (or all; one naming a peer covers that peer
        only). A barrier, the kernel's end, a signal or put_signal to the
        same peer, or a wait on the amo's own word reached first is a hit.
        A fence does not count: it orders, it does not complete. One hit
        per (rank, core, launch, amo site), with the count and the peers.

    Why it matters
        The `void` atomics of UDMA and RoCE are asynchronous: the call returns
        before the add reaches the remote word. Announcing it (barrier,
        signal) or reading it before `aclshmemx_udma_quiet(pe)` /
        `aclshmemx_roce_quiet` lets the peer read the value before the add:
        a lost count, or a barrier counter one short, which hangs.

    Example
        amo udma add peer=1 count[2] += 5; barrier_begin
        -- call the UDMA quiet for peer 1 before the barrier.

    Evidence
        The amo (first) and the event that relied on it.
    """

    code = "MT404"
    name = "amo-used-before-quiet"
    family = Family.MISSING_DRAIN
    severity = Severity.ERROR
    summary = "UDMA/RoCE atomic result used (barrier, signal, wait, kernel end) before its engine's quiet"
    requires = (Stage.HAPPENS_BEFORE,)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        use = C.rows_full(trace.n)
        _scan(trace.segments, trace["kind"], trace["engine"], trace["peer"], trace.key,
              int(trace.manifest.ranks), ctx.stage(HappensBefore).completed_at(), use)
        amos = np.flatnonzero(use >= 0)
        # One hit per (rank, core, launch, amo site): a loop of amos missing one quiet is one root.
        groups = H.by_site(trace, amos)
        if not groups:
            return
        first = np.array([int(g[0]) for g in groups], np.int64)
        last = np.array([int(g[-1]) if len(g) > 1 else -1 for g in groups], np.int64)
        used = use[first].astype(np.int64)
        d = H.described(trace, first, ("rank", "core", "launch", "engine", "op", "value", "peer", "region",
                                       "offset", "seq"))
        du = H.described(trace, used, ("kind", "seq"))
        peer = trace["peer"]
        columns, tables = coded_columns((*d.items(), ("use_kind", du["kind"]), ("use_seq", du["seq"]),
                                         ("amos", [len(g) for g in groups]),
                                         ("peers", [tuple(sorted(set(peer[g].tolist()))) for g in groups]),
                                         ("rests_on", [((r, c),) for r, c in zip(d["rank"], d["core"])])))
        yield HitColumns(code=self.code, fields=Unquieted, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=("unquieted amo", "use", "last amo of the group"),
                         rows=np.stack((first, used, last), axis=1),
                         key=H.row_keys(trace, first))


class Unquieted(NamedTuple):
    """A site's first amo relied on before a quiet of its engine."""

    rank: int
    core: int
    launch: int
    engine: str
    op: str
    value: int | None
    peer: int
    region: str
    offset: int
    seq: int
    use_kind: str  # what relied on it
    use_seq: int
    amos: int  # amos from the site relied on the same way
    peers: tuple  # the ranks they went to


def _message(f: Unquieted) -> str:
    more = f"; {f.amos} amos from this site relied on the same way" if f.amos > 1 else ""
    return (f"rank {f.rank} core {f.core} launch {f.launch}: {f.engine} amo {f.op} {f.value} to rank {f.peer} "
            f"{f.region}[{f.offset}] at seq {f.seq} is relied on by the {f.use_kind} at seq {f.use_seq} before any "
            f"{f.engine} quiet: the atomic may not have reached the peer yet{more}")


def _extra(f: Unquieted) -> dict:
    return {"amos": f.amos, "peers": list(f.peers)}
