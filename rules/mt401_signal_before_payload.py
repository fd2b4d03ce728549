"""MT401: a flag written to a peer while a payload put to it is still in flight."""

from __future__ import annotations

import numpy as np

from . import _hits as H
from .analysis import HappensBefore, Options, Stage
from .analysis import codes as C
from .base import Confidence, Family, Rule, Severity, hits_of

_SHOW = 8  # (flag, put) pairs named in a group's extra


class SignalBeforePayload(Rule):
    """A flag write to a peer that can overtake a payload put still in flight.

    What it does
        Per core, in program order, tracks the payload puts (puts into a
        region whose role is not flag or counter) not yet covered by a quiet
        or fence of their engine (`all` covers every engine; a quiet or fence
        naming a peer covers only that peer). A signal, an amo, or a put into
        a flag or counter region to a peer with such a put outstanding is a
        hit naming both. A quiet of another engine in between is named too.
        Fused put_signal is exempt. An amo on an engine listed in the
        `ordered_engines` option (default roce and ibgda: an RDMA atomic completes after
        the writes before it on its queue pair) is exempt after puts of that
        engine. One missing drain is one hit: the flag writes that overtake
        puts of one (rank, core, launch, put site) are grouped under the
        first (one quiet after that put fixes them all), with their count,
        their sites and the first (flag seq, put seq) pairs in `extra`.

    Why it matters
        The consumer waits on the flag and then reads the payload. A flag that
        lands first lets it read rows that are not there yet: silent data
        corruption, or a hang when the payload carries the next flag.
        `aclshmem_quiet` drains the MTE pipes only; SDMA, UDMA and RoCE each
        need their own quiet.

    Example
        put sdma peer=1 payload[0:4096]; quiet mte; signal peer=1 ready[3]=1
        -- the MTE quiet does not complete the SDMA put: use the SDMA quiet.

    Evidence
        The group's first flag write (first), its outstanding payload put, the
        quiet of the wrong engine if there was one, and the group's last flag
        write when there are several.
    """

    code = "MT401"
    name = "signal-before-payload"
    family = Family.MISSING_DRAIN
    severity = Severity.ERROR
    summary = "Flag written to a peer while a payload put to it is still outstanding"
    requires = (Stage.HAPPENS_BEFORE,)
    # An amo that overtakes a UDMA/RoCE put to its PE is first of all in flight together with it
    # (MT603): that is the root, which a quiet between them fixes as well.
    cites = ("MT603",)
    options = {"ordered_engines": list(Options().ordered_engines)}
    shared_options = ("ordered_engines",)  # the unfenced analysis MT202 reads too

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        u = ctx.stage(HappensBefore).unfenced(ctx.option("ordered_engines", self.options["ordered_engines"]))
        if not len(u.flags):
            return
        members = np.argsort(u.group, kind="stable")  # flag indices grouped, row order within
        bounds = np.searchsorted(u.group[members], np.arange(len(u.first) + 1))
        for gid in range(len(u.first)):
            fl = u.flags[members[bounds[gid]:bounds[gid + 1]]]
            yield self._hit(trace, u, fl)

    def _hit(self, trace, u, fl):
        f = int(fl[0])
        p, q = int(u.hit_put[f]), int(u.hit_q[f])
        d, dp = trace.describe(f), trace.describe(p)
        rows = [("flag write", f), ("outstanding put", p)]
        why = f"no quiet or fence of engine {dp['engine']} in between"
        if q >= 0:
            rows.append(("quiet of another engine", q))
            dq = trace.describe(q)
            named = f"{dq['kind']} {dq.get('engine', 'all')}" + (f" peer {dq['peer']}" if "peer" in dq else "")
            why = f"the {named} at seq {dq['seq']} does not cover it"
        seq = trace["seq"]
        site = trace["site"][fl].astype(np.int64)
        sites = sorted(set(site[site != C.NULL32].tolist()))
        more = ""
        if len(fl) > 1:
            rows.append(("last flag write of the group", int(fl[-1])))
            peers = sorted(set(trace["peer"][fl].tolist()))
            more = (f"; {len(fl)} flag writes from {len(sites)} site(s) overtake puts of this site after the "
                    f"same missing drain (to rank(s) {', '.join(map(str, peers))}, seq "
                    f"{int(seq[fl[0]])}..{int(seq[fl[-1]])})")
        msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: {d['kind']} to rank {d['peer']} "
               f"{d.get('region')}[{d.get('offset')}] at seq {d['seq']} while the {dp['engine']} put "
               f"{dp['region']}[{dp['offset']}] ({dp.get('nbytes')} B) at seq {dp['seq']} is outstanding; {why}"
               f"{more}")
        conf = H.confidence_for(trace, cores=[(d["rank"], d["core"])]) or Confidence.CERTAIN
        pairs = [[int(seq[x]), int(seq[u.hit_put[x]])] for x in fl[:_SHOW]]
        together = {f, p}
        causes = tuple(("MT603", h.key) for h in hits_of(trace, "MT603")
                       if together & {row for _, row in h.rows})
        return self.hit(msg, rows=tuple(rows), key=(d["rank"], d["core"], d["seq"]), confidence=conf,
                        caused_by=causes,
                        extra={"peer": d["peer"], "put_engine": dp["engine"], "flag_writes": int(len(fl)),
                               "flag_sites": sites, "pairs": pairs})
