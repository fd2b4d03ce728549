"""MT105: the producer a stuck wait expects wrote another slot or another rank instead."""

from __future__ import annotations

from . import _hits as H
from .analysis import Stage, WaitForGraph
from .base import Confidence, Family, Rule, Severity


class WrongTarget(Rule):
    """A write into the waited-on region that went to the wrong slot or the wrong rank.

    What it does
        For each producer a stuck wait expects that never wrote the waited
        slot in that launch, looks at what it wrote into the same region in
        the same launch. A write is misdirected when the region's index says
        another rank produces that slot (wrong slot), or when it is the same
        slot on another rank where nobody waits in that launch (wrong peer).
        One hit per misdirected write, naming the wait it leaves stuck.

    Why it matters
        An off-by-one in a slot formula, or a peer computed from the wrong
        rank variable, releases nobody and hangs the rank that should have
        been released, while the trace shows the producer "did signal".

    Example
        Rank 1 should signal flag[1] of rank 0 (index rank: slot = writer);
        it signals flag[0] of rank 0 instead. Rank 0's wait on flag[1] is
        stuck; MT105 names the signal, and the MT101 hit is caused by it.

    Evidence
        The misdirected write, and the stuck wait it should have released.
    """

    code = "MT105"
    name = "wrong-target"
    family = Family.HANG
    severity = Severity.ERROR
    summary = "A producer wrote another slot or rank than the one a stuck wait expects"
    requires = (Stage.WAIT_FOR,)
    cites = ("MT501",)
    infers_from = ("index", "slot_words", "params")

    def check(self, trace, ctx):
        wf = ctx.stage(WaitForGraph)
        for key, entry in sorted(wf.wrong.items()):
            waits = [wf.nodes[i] for i in entry.waits]
            expects = "; ".join(f"rank {n.rank} {wf.node_text(n)} (expects it from rank {key[0]})"
                                for n in waits[:4])
            gap = wf.rank_gaps.get(key[0])
            launch = entry.launch
            msg = (f"rank {key[0]} core {key[1]} launch {launch} wrote {entry.target}, "
                   f"instead of the slot a stuck wait needs: {expects}")
            # A writer handed a row with an invalid expert writes its slots shifted: the route
            # is the cause, the stray write its symptom.
            aliased = entry.aliased
            if aliased:
                msg += f"; {aliased[0][2]}"
            # "Never wrote the slot it owed" is an absence: in a launch the writer does not hold
            # whole, that write may be in the lost part of its ring.
            whole_gap = H.launch_gap(trace, [key[0]], launch)
            weak = H.weakened(msg, whole_gap) if whole_gap else {}
            if gap and not whole_gap:
                msg += f" [gap: {gap}]"
            yield self.hit(weak.pop("message", msg), caused_by=tuple((a[0], a[1]) for a in aliased), **weak,
                           rows=(("misdirected write", entry.row),)
                           + tuple(("left stuck", n.row) for n in waits[:4]), key=key,
                           **({} if weak else {"confidence": Confidence.PARTIAL_TRACE if gap else Confidence.INFERRED}),
                           extra={"write": entry.target,
                                  "waits": [list(n.key) for n in waits]})
