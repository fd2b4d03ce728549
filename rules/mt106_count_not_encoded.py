"""MT106: a count stored raw where the protocol encodes it so that 0 means "not written yet"."""

from __future__ import annotations

import numpy as np

from .analysis import Producers, Stage
from .base import Confidence, Family, Rule, Severity


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
        regions = trace.manifest.regions
        for row, never in zip(rc.rows.tolist(), rc.never.tolist()):
            d = trace.describe(row)
            reg = int(trace["region"][row])
            enc = rc.encoded_by.get(reg, np.zeros(0, np.int64))
            where = f"{regions[reg].name}[{d['offset']}] of rank {d['peer']}"
            if never:
                why = "a wait polls that word with != 0, so 0 reads as 'not written yet' and never releases it"
            else:
                why = f"it decodes as {-d['value'] - 1} rows"
            others = (f"; the other counts into {regions[reg].name} are encoded -n-1 "
                      f"({len(enc)} writes <= -1)") if len(enc) else ""
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: {d['kind']} stored the count "
                   f"{d['value']} raw into {where}: {why}{others}; store -n-1")
            rows = (("raw count", row),) + ((("an encoded count", int(enc[0])),) if len(enc) else ())
            conf = Confidence.CERTAIN if never else Confidence.INFERRED
            yield self.hit(msg, rows=rows, key=(d["rank"], d["core"], d["seq"]), confidence=conf,
                           rests_on=((d["rank"], d["core"]),),
                           defect="count-stored-raw", extra={"peer": d["peer"], "value": d["value"], "encoded_writes": int(len(enc))})
