"""MT106: a count stored raw where the protocol encodes it so that 0 means "not written yet"."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _hits as H
from .analysis import Producers, Stage
from .base import Confidence, Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns


class CountNotEncoded(Rule):
    """A token count written as n into a word its receiver polls with `!= 0`, where counts are -n-1.

    What it does
        Finds the counter regions some wait polls with `!= 0` (the word reads
        0 until the sender wrote it). A signal set or amo add of 0 into a word
        so polled is a hit (certain: that wait can never accept it). Where the
        region's other writes are all -1 or below (the sender-side encoding
        `-n-1` DeepEP uses, so that a real 0 is -1), every write of n >= 0 into
        it is a hit too (inferred: the encoding is read off the other writers).
        One hit per raw write.

    Why it matters
        A count stored raw reads as "not yet" when it is 0: the receiver spins
        until its timeout (a hang with the sender done); a raw n > 0 decodes to
        -n-1, so the receiver takes no rows, and the ranks that wait for those
        rows' results hang or lose them. The stuck waits are its symptoms.

    Example
        signal rank 1 channel_count[2] = 0 ... rank 1 waits channel_count[2] != 0
        -- store -n-1 (here -1): the receiver decodes n = -v-1.

    Evidence
        The raw write, and one of the region's encoded writes where there is one.
    """

    code = "MT106"
    name = "count-not-encoded"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A count stored raw (n) where its receiver polls != 0 and the counts are encoded -n-1"

    requires = (Stage.PRODUCERS,)

    def check(self, trace, ctx):
        rc = ctx.stage(Producers).raw_counts()
        rows = rc.rows.astype(np.int64)
        if not len(rows):
            return
        region = trace["region"][rows].astype(np.int64)
        encoded = [rc.encoded_by.get(r, np.zeros(0, np.int64)) for r in region.tolist()]
        d = H.described(trace, rows, ("rank", "core", "launch", "kind", "value", "peer", "offset"))
        columns, tables = coded_columns((
            *d.items(), ("region", [trace.manifest.regions[r].name for r in region.tolist()]),
            ("never", rc.never.tolist()), ("encoded", [len(e) for e in encoded]),
            ("confidence", [Confidence.CERTAIN if n else Confidence.INFERRED for n in rc.never.tolist()]),
            ("rests_on", [((r, c),) for r, c in zip(d["rank"], d["core"])])))
        first_encoded = np.array([int(e[0]) if len(e) else -1 for e in encoded], np.int64)
        yield HitColumns(code=self.code, fields=RawCount, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=("raw count", "an encoded count"),
                         rows=np.stack((rows, first_encoded), axis=1), key=H.row_keys(trace, rows),
                         constant={"defect": "count-stored-raw"})


class RawCount(NamedTuple):
    """A count stored raw (n) where its readers decode -n-1."""

    rank: int
    core: int
    launch: int
    kind: str
    value: int
    peer: int
    offset: int
    region: str
    never: bool  # the written 0 is polled with != 0: it can never release the poll
    encoded: int  # the region's other counts written encoded (<= -1)


def _message(f: RawCount) -> str:
    if f.never:
        why = "a wait polls that word with != 0, so 0 reads as 'not written yet' and never releases it"
    else:
        why = f"it decodes as {-f.value - 1} rows"
    others = (f"; the other counts into {f.region} are encoded -n-1 ({f.encoded} writes <= -1)"
              if f.encoded else "")
    return (f"rank {f.rank} core {f.core} launch {f.launch}: {f.kind} stored the count {f.value} raw into "
            f"{f.region}[{f.offset}] of rank {f.peer}: {why}{others}; store -n-1")


def _extra(f: RawCount) -> dict:
    return {"peer": f.peer, "value": f.value, "encoded_writes": f.encoded}
