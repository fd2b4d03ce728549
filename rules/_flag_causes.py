"""MT202's causes: what else left a flag off its reset value (a put a flag overtook, a stale count).

Kept beside the rule so it stays readable: each names the hit a group of unreset words is the
symptom of, so one defect is one root.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ingest.contract import Role

from .analysis import HappensBefore
from .analysis import codes as C


def behind_stale_counts(trace, hits: list) -> list:
    """Each hit, those left behind by a stale count citing it.

    An owner that read last launch's count (a counter word it did not reset, another hit of this
    rule in the launch before) takes the wrong number of rows: the flags of rows it never took
    stay set. Such a group, whose words the owner never waited on, is that count's symptom: one
    defect, the counter's reset, not a second one at every flag it left behind.
    """
    regions = trace.manifest.regions
    by_name = {r.name: r for r in regions}
    counters = {(h.location["rank"], h.location["launch"]): h for h in hits
                if by_name[h.location["region"]].role == Role.COUNTER}
    out = []
    for h in hits:
        stale = counters.get((h.location["rank"], h.location["launch"] - 1))
        waited = h.rows and h.rows[0][0] == "owner's wait"
        if stale is None or stale is h or waited or h.caused_by or by_name[h.location["region"]].role == Role.COUNTER:
            out.append(h)
            continue
        own = h.location["rank"]
        head = h.message.removesuffix(f"rank {own} should have reset them")
        msg = (f"{head}rank {own} never waited on them: rows it did not take, its count being last launch's "
               f"({stale.location['region']} not reset in launch {stale.location['launch']})")
        out.append(replace(h, message=msg, caused_by=(("MT202", stale.key),)))
    return out


def late_puts(trace, order: HappensBefore, last_rows) -> tuple:
    """(MT401, key) causes when every word's last write is a put a flag write overtook, else ().

    Such a put can land after the owner consumed the slots and reset those it
    saw: the word is left set by the producer's missing drain, not by a
    missing reset. One word written by anything else keeps the hit a root.
    """
    rows = np.unique(np.asarray(last_rows, np.int64))
    if (trace["kind"][rows] != C.K_PUT).any():
        return ()
    flags = order.put_flag()[rows]
    if (flags < 0).any():
        return ()
    u = order.unfenced()
    keys = [u.key_of_flag(trace, int(f)) for f in np.unique(flags)]
    if any(k is None for k in keys):
        return ()
    return tuple(("MT401", k) for k in dict.fromkeys(keys))
