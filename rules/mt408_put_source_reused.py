"""MT408: a put's local source overwritten before the quiet that completes the put."""

from __future__ import annotations

import numpy as np

from . import _passes as P
from ._jit import kernel
from .base import Confidence, Family, Rule, Severity

K_BEGIN, K_PUT, K_PUTSIG, K_GET, K_WRITE = P.K_BEGIN, P.K_PUT, P.K_PUTSIG, P.K_GET, P.K_WRITE
NULL16, NULL64 = P.NULL16, P.NULL64
_CAP = 256  # outstanding sourced puts tracked per core (the oldest make way: they are the likeliest quieted)


@kernel
def _scan(seg, kind, region, offset, lreg, loff, extent_src, cover, out):
    for s in range(len(seg) - 1):
        rows = np.full(_CAP, -1, np.int64)
        n = 0
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == K_BEGIN:
                n = 0
                continue
            if k == K_WRITE or k == K_GET:
                treg = region[i] if k == K_WRITE else lreg[i]
                tlo = offset[i] if k == K_WRITE else loff[i]
                thi = tlo + extent_src[i]
                keep = 0
                for j in range(n):
                    p = rows[j]
                    if cover[p] >= 0 and cover[p] < i:
                        continue  # completed: its source is free again
                    rows[keep] = p
                    keep += 1
                    if out[i] < 0 and lreg[p] == treg and loff[p] < thi and tlo < loff[p] + extent_src[p]:
                        out[i] = p
                n = keep
            if (k == K_PUT or k == K_PUTSIG) and lreg[i] != NULL16 and loff[i] != NULL64:
                if n == _CAP:
                    rows[:n - 1] = rows[1:n]
                    n -= 1
                rows[n] = i
                n += 1


class PutSourceReused(Rule):
    """The local buffer a put reads from is written again before the put's quiet.

    What it does
        For every `put` that names its source (`local_region`,
        `local_offset`), a later `write` or `get` of its core into the
        source's words, in the same launch, before the first quiet that
        completes the put (its engine, its peer or all; the kernel's end
        for MTE), is a hit. Puts that do not name their source are not
        checked. One hit per (rank, core, launch, site) of the overwrite.

    Why it matters
        A non-blocking put returns before its engine has read the source:
        the UDMA contract is a quiet before reusing it. Refilling the
        buffer early (the next tile into the same UB slot, the next token
        into the same staging row) sends the new data, or a mix, to the peer,
        and nothing reports it.

    Example
        put udma peer=1 payload[0] from stage[0] (32 B); write stage[0] = next tile; quiet udma
        -- quiet udma (peer 1) before refilling stage[0].

    Evidence
        The overwrite (first) and the put whose source it reuses.
    """

    code = "MT408"
    name = "put-source-reused"
    family = Family.MISSING_DRAIN
    severity = Severity.ERROR
    summary = "A put's local source overwritten before the quiet that completes the put"

    def check(self, trace, ctx):
        if trace.n == 0 or not ((trace["kind"] == K_PUT) & (trace["local_region"] != NULL16)).any():
            return
        kind = trace["kind"]
        rt = P.region_table(trace)
        # Elements at the source / destination: bytes over the local region's element size.
        treg = np.where(kind == K_WRITE, trace["region"], trace["local_region"]).astype(np.int64)
        ok = (treg >= 0) & (treg < len(rt["elem_bytes"]))
        eb = np.ones(trace.n, np.int64)
        eb[ok] = rt["elem_bytes"][treg[ok]]
        nb = trace["nbytes"].astype(np.int64)
        ext = np.where(nb == NULL64, 1, np.maximum((np.maximum(nb, 0) + eb - 1) // eb, 1))
        out = P.rows_full(trace.n)
        _scan(trace.segments, kind, trace["region"], trace["offset"], trace["local_region"], trace["local_offset"],
              ext, P.cover(trace, False), out)
        rows = np.flatnonzero(out >= 0)
        for g in P.groups(rows, trace["rank"][rows], trace["core"][rows], trace["launch"][rows], trace["site"][rows]):
            r, p = int(g[0]), int(out[g[0]])
            d, dp = trace.describe(r), trace.describe(p)
            where = d.get("region") if d["kind"] == "write" else d.get("local_region")
            at = d.get("offset") if d["kind"] == "write" else d.get("local_offset")
            more = f"; {len(g)} such overwrites from this site" if len(g) > 1 else ""
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: {d['kind']} into {where}[{at}] at seq "
                   f"{d['seq']} overwrites the source of the {dp['engine']} put to rank {dp['peer']} "
                   f"{dp['region']}[{dp['offset']}] at seq {dp['seq']} before any quiet completes it: the peer may "
                   f"receive the new contents{more}")
            conf = P.confidence_for(trace, cores=[(d["rank"], d["core"])]) or Confidence.CERTAIN
            yield self.hit(msg, rows=(("overwrite", r), ("put", p)), key=(d["rank"], d["core"], d["seq"]),
                           confidence=conf, extra={"overwrites": int(len(g))})
