"""MT407: a get's local destination used before a quiet of the get's engine completed it."""

from __future__ import annotations

import numpy as np

from . import _hits as H
from ._get_scan import Events, Gets, previous_same_destination, scan
from .analysis import CoreScan, HappensBefore, Stage
from .analysis import codes as C
from .analysis import regions as R
from .analysis.groups import group_columns
from .base import Family, Rule, Severity, hits_of

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
        _, first, inv, _ = group_columns(ident)
        # One stable sort split at the group boundaries (a mask per group costs groups x gets).
        order = np.argsort(inv, kind="stable")
        parts = np.split(gets[order], np.flatnonzero(np.diff(inv[order])) + 1)
        for gid in np.argsort(first, kind="stable"):
            yield self._hit(trace, parts[int(gid)], use, wrong)

    def _hit(self, trace, gs, use, wrong):
        g, u, q = int(gs[0]), int(use[gs[0]]), int(wrong[gs[0]])
        d, du = trace.describe(g), trace.describe(u)
        rows = [("unquieted get", g), ("use", u)]
        why = f"no {d['engine']} quiet in between"
        if q >= 0:
            rows.append(("quiet of another engine", q))
            dq = trace.describe(q)
            named = f"{dq.get('engine', 'all')} quiet" + (f" of peer {dq['peer']}" if "peer" in dq else "")
            why = f"the {named} at seq {dq['seq']} does not complete it"
        seq = trace["seq"]
        more = ""
        if len(gs) > 1:
            rows.append(("last get of the group", int(gs[-1])))
            more = f"; {len(gs)} gets from this site used the same way (seq {int(seq[gs[0]])}..{int(seq[gs[-1]])})"
        what = du["kind"] + (f" {du['region']}[{du['offset']}]" if "region" in du and du["kind"] != "get" else "")
        if du["kind"] == "get":
            what = "get refilling the same destination"
        msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: {d['engine']} get from rank {d['peer']} "
               f"{d['region']}[{d['offset']}] into {d['local_region']}[{d['local_offset']}] at seq {d['seq']} "
               f"is used by the {what} at seq {du['seq']} before it completed; {why}: the data may not have "
               f"landed{more}")
        pairs = [[int(seq[x]), int(seq[use[x]])] for x in gs[:_SHOW]]
        # A get into a destination it refills is legitimate in an atomic-add window: where the
        # launch's start is lost, the window's opening may be in the gap.
        gap = H.core_gap(trace, d["rank"], d["core"], d["launch"])
        weak = H.weakened(msg, gap) if gap else {"message": msg}
        return self.hit(rows=tuple(rows), key=(d["rank"], d["core"], d["seq"]), **weak,
                        rests_on=((d["rank"], d["core"]),),
                        caused_by=_bulk_atomic_cause(trace, g),
                        extra={"engine": d["engine"], "gets": int(len(gs)), "pairs": pairs})


def _bulk_atomic_cause(trace, g: int) -> tuple:
    """The MT702 hit of the get's call site (same rank, core, launch, site), if it has one."""
    def ident(r):
        return tuple(int(trace[c][r]) for c in ("rank", "core", "launch", "site"))
    me = ident(g)
    return tuple(("MT702", h.key) for h in hits_of(trace, "MT702") if ident(h.rows[0][1]) == me)
