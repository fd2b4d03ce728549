"""MT407: a get's local destination used before a quiet of the get's engine completed it."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from ._get_scan import Events, Gets, previous_same_destination, scan
from .analysis import CoreScan, HappensBefore, Stage
from .analysis import codes as C
from .analysis import regions as R
from .analysis.groups import group_columns
from .base import Family, Rule, Severity, hits_of
from .hit_columns import HitColumns, coded_columns

K_GET, E_MTE, E_SDMA, E_UDMA, E_ROCE = C.K_GET, C.E_MTE, C.E_SDMA, C.E_UDMA, C.E_ROCE
_SHOW = 8  # (get, use) pairs named in a group's extra


class GetUsedBeforeQuiet(Rule):
    """A get's local destination used before a quiet of the get's engine completed it.

    What it does
        Per core, in program order, tracks each `get` on the MTE, SDMA, UDMA
        or RoCE engine (MTE gets inside an atomic-add window are MT402's)
        until a quiet that covers it: of its engine or `all`, of its peer or
        of every peer (an MTE quiet does not complete SDMA; a UDMA quiet
        naming a peer covers only that peer); for MTE also a `wait_flag` on
        an MTE event or a `pipe_barrier` of all / mte3. Reached first, any of
        these uses the destination and is a hit: a local `write` outside
        flag-like regions (the add in UB and the write back are computed
        from it), another get into the same destination, a signal,
        put_signal or barrier (they publish it), a wait on a word the get
        fills, or the kernel's end (not for MTE, whose pipes drain there).
        One hit per (rank, core, launch, get site, use site), with the count
        and the first (get, use) pairs in `extra`; a quiet of another engine
        in between is named.

    Why it matters
        A get_nbi returns before its data has landed. The SDMA fallback of an
        atomic reduce gets a peer's chunk into UB, adds it to the output and
        writes it back; if the quiet before the add is `aclshmem_quiet`
        (MTE only), the add reads UB before the SDMA data arrived and a
        peer's contribution is lost, with no hang and no flag to show it.

    Example
        get sdma peer=1 -> ub[0:64]; quiet mte; write d_out[0:64]
        -- wait for the SDMA get with the SDMA quiet before the add.

    Evidence
        The group's first get (first), the event that used its destination,
        the quiet of another engine if there was one, and the group's last
        get when there are several.
    """

    code = "MT407"
    name = "get-used-before-quiet"
    family = Family.MISSING_DRAIN
    severity = Severity.ERROR
    summary = "A get's destination used (write, refill, signal, barrier, kernel end) before its engine's quiet"
    requires = (Stage.CORE_SCAN, Stage.HAPPENS_BEFORE)
    # A non-MTE get inside an atomic-add window (MT702) refills its destination because the
    # kernel meant an inline reduce the engine does not have: that is the root.
    cites = ("MT702",)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        kind, engine = trace["kind"], trace["engine"]
        is_get = kind == K_GET
        if not is_get.any():
            return
        dma = np.isin(engine, (E_MTE, E_SDMA, E_UDMA, E_ROCE))
        tracked = is_get & dma & ~((engine == E_MTE) & (ctx.stage(CoreScan).atomic_window() >= 0))
        reg = R.target_region(trace)
        flaglike = R.region_table(trace)["flaglike"][np.where(reg >= 0, reg, 0)] & (reg >= 0)
        prev = previous_same_destination(trace, np.flatnonzero(tracked))
        # The quiet that completes each get (for MTE also kernel_end) is the happens-before stage's.
        events = Events(kind, trace["engine"], trace["pipe_op"], trace["event"], trace.key)
        use, wrong = scan(trace.segments, events, Gets(R.extent(trace), tracked, prev), ~flaglike,
                          ctx.stage(HappensBefore).completed_at())
        gets = np.flatnonzero(use >= 0)
        if not len(gets):
            return
        site = trace["site"]
        ident = np.stack([a.astype(np.int64) for a in (trace["rank"][gets], trace["core"][gets],
                                                         trace["launch"][gets], site[gets], site[use[gets]])])
        _, first, inv, counts = group_columns(ident)
        # The groups' members in row order, one stable sort cut at the group boundaries; the groups
        # in order of their first member.
        members = gets[np.argsort(inv, kind="stable")]
        start = np.cumsum(counts) - counts
        groups = np.argsort(first, kind="stable")
        yield _batch(self, trace, members, start[groups], counts[groups], use, wrong)


def _batch(rule, trace, members: np.ndarray, start: np.ndarray, size: np.ndarray, use, wrong) -> HitColumns:
    """One typed member per group of gets (``members[start:start + size]``): its first get, the use,
    the quiet of another engine before it (if any) and its last get."""
    get = members[start].astype(np.int64)
    last = np.where(size > 1, members[start + size - 1], -1).astype(np.int64)
    used, quiet = use[get].astype(np.int64), wrong[get].astype(np.int64)
    d = H.described(trace, get, ("rank", "core", "launch", "engine", "peer", "region", "offset", "local_region",
                                 "local_offset", "seq"))
    du = H.described(trace, used, ("kind", "region", "offset", "seq"))
    dq = H.described(trace, np.maximum(quiet, 0), ("engine", "peer", "seq"))
    had = (quiet >= 0).tolist()
    seq = trace["seq"]
    shown = [members[s:s + min(n, _SHOW)] for s, n in zip(start.tolist(), size.tolist())]
    places = list(zip(d["rank"], d["core"], d["launch"]))
    # A get into a destination it refills is legitimate in an atomic-add window: where the
    # launch's start is lost, the window's opening may be in the gap.
    gaps = [H.core_gap(trace, *at) for at in places]
    causes = _bulk_atomic_causes(trace, get)
    columns, tables = coded_columns((
        *d.items(), *((f"use_{name}", values) for name, values in du.items()),
        *((f"quiet_{name}", [v if h else None for v, h in zip(values, had)]) for name, values in dq.items()),
        ("gets", size.tolist()), ("last_seq", seq[np.maximum(last, get)].tolist()),
        ("pairs", [tuple(zip(seq[x].tolist(), seq[use[x]].tolist())) for x in shown]),
        ("gap", gaps), ("caused_by", causes), ("rests_on", [((r, c),) for r, c, _ in places])))
    return HitColumns(code=rule.code, fields=GetUnquieted, render=_message, extra=_extra, columns=columns,
                      tables=tables, roles=("unquieted get", "use", "quiet of another engine", "last get of the group"),
                      rows=np.stack((get, used, quiet, last), axis=1), key=H.row_keys(trace, get))


class GetUnquieted(NamedTuple):
    """A group's first get whose destination was used before a quiet of its engine completed it."""

    rank: int
    core: int
    launch: int
    engine: str
    peer: int
    region: str  # what it reads on the peer
    offset: int
    local_region: str  # where it lands
    local_offset: int
    seq: int
    use_kind: str  # what used the destination
    use_region: str | None
    use_offset: int | None
    use_seq: int
    quiet_engine: str | None  # the quiet of another engine in between (seq None: none)
    quiet_peer: int | None
    quiet_seq: int | None
    gets: int  # gets of the group
    last_seq: int
    pairs: tuple  # the first (get seq, use seq) pairs of the group


def _message(f: GetUnquieted) -> str:
    if f.quiet_seq is None:
        why = f"no {f.engine} quiet in between"
    else:  # a quiet that names no engine quiets all of them
        named = f"{f.quiet_engine or 'all'} quiet" + (f" of peer {f.quiet_peer}" if f.quiet_peer is not None else "")
        why = f"the {named} at seq {f.quiet_seq} does not complete it"
    if f.use_kind == "get":
        what = "get refilling the same destination"
    else:
        what = f.use_kind + (f" {f.use_region}[{f.use_offset}]" if f.use_region is not None else "")
    more = f"; {f.gets} gets from this site used the same way (seq {f.seq}..{f.last_seq})" if f.gets > 1 else ""
    return (f"rank {f.rank} core {f.core} launch {f.launch}: {f.engine} get from rank {f.peer} "
            f"{f.region}[{f.offset}] into {f.local_region}[{f.local_offset}] at seq {f.seq} "
            f"is used by the {what} at seq {f.use_seq} before it completed; {why}: the data may not have "
            f"landed{more}")


def _extra(f: GetUnquieted) -> dict:
    return {"engine": f.engine, "gets": f.gets, "pairs": [list(p) for p in f.pairs]}


def _bulk_atomic_causes(trace, gets: np.ndarray) -> list[tuple]:
    """Per get, the MT702 hits of its call site (same rank, core, launch, site): a non-MTE get in an
    atomic-add window refills its destination because the kernel meant an inline reduce."""
    hits = hits_of(trace, "MT702")
    if not hits:
        return [()] * len(gets)

    def sites(rows) -> list[tuple]:
        return list(zip(*(trace[c][rows].tolist() for c in ("rank", "core", "launch", "site"))))

    by_site: dict = {}
    for h, site in zip(hits, sites(np.array([h.rows[0][1] for h in hits], np.int64))):
        by_site.setdefault(site, []).append(("MT702", h.key))
    return [tuple(by_site.get(site, ())) for site in sites(gets)]
