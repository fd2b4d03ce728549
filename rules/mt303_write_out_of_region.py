"""MT303: a write that runs past the end of its region."""

from __future__ import annotations

import numpy as np

from . import _passes as P
from .base import Confidence, Family, Rule, Severity


class WriteOutOfRegion(Rule):
    """A write whose target range leaves its region: offset < 0 or offset + extent > length.

    What it does
        For put, put_signal (payload and signal word), signal, amo, write and
        a get's local destination, computes the elements written (nbytes
        over the region's element size, rounded up; one for signal and amo)
        and flags targets outside [0, length) of their region.

    Why it matters
        Regions sit back to back in the symmetric heap: a row written past
        the end of one lands in the next (a neighbour segment's payload, or
        the flags after it), on another rank for a remote write. Nothing
        traps; the damage shows up later as a corrupted row or a flag set
        by nobody.

    Example
        put peer=1 payload[60] nbytes=64 with payload of length 64 (4 B elements)
        -- 16 elements from 60 end at 76: 12 past the end.

    Evidence
        The write.
    """

    code = "MT303"
    name = "write-out-of-region"
    family = Family.CAPACITY_TRUNCATION
    severity = Severity.ERROR
    summary = "Write beyond its region's length (offset + extent > length)"

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        kind = trace["kind"]
        rt = P.region_table(trace)
        reg = P.target_region(trace)
        writes = np.isin(kind, (P.K_PUT, P.K_PUTSIG, P.K_SIGNAL, P.K_AMO, P.K_WRITE, P.K_GET)) & (reg >= 0)
        off = np.where(kind == P.K_GET, trace["local_offset"], trace["offset"])
        length = rt["length"][np.where(reg >= 0, reg, 0)]
        ext = P.extent(trace)
        bad = writes & ((off < 0) | (off + ext > length))
        sreg = trace["sig_region"].astype(np.int64)
        soff = trace["sig_offset"]
        sig_bad = (kind == P.K_PUTSIG) & (sreg >= 0) & \
            ((soff < 0) | (soff >= rt["length"][np.where(sreg >= 0, sreg, 0)]))
        for r in np.flatnonzero(bad | sig_bad):
            r = int(r)
            d = trace.describe(r)
            if bad[r]:
                where, o, e, ln = P.region_name(trace, int(reg[r])), int(off[r]), int(ext[r]), int(length[r])
            else:
                where, o, e = P.region_name(trace, int(sreg[r])), int(soff[r]), 1
                ln = int(rt["length"][sreg[r]])
            owner = int(trace.owner[r])
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: {d['kind']} writes {where}[{o}:{o + e}] "
                   f"of rank {owner}, but {where} has {ln} elements ({max(o + e - ln, -o)} outside)")
            yield self.hit(msg, rows=(("write", r),), key=(d["rank"], d["core"], d["seq"]),
                           confidence=Confidence.CERTAIN,
                           extra={"region": where, "offset": o, "extent": e, "length": ln, "owner": owner})
