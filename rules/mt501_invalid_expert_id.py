"""MT501: a route to an expert id outside [0, num_experts) that is not the sentinel."""

from __future__ import annotations

import numpy as np

from ingest.contract import Kind

from .analysis import codes as C
from .base import Confidence, Family, Rule, Severity


class InvalidExpertId(Rule):
    """A route whose expert id is out of range and not the manifest's sentinel.

    What it does
        Checks every route event's `expert` against [0, num_experts) from
        the manifest (`params.num_experts`, or `local_experts` times ranks).
        The value `params.expert_sentinel` (a dropped-token marker such as
        -1) is allowed; with no sentinel in the manifest, none is. Traces
        whose manifest gives no expert count are not checked.

    Why it matters
        Dispatch kernels rarely validate ids. An id >= num_experts maps to a
        destination rank that no core serves, so the pair is silently
        dropped; -1 with several local experts truncates to rank 0 and
        local expert -1, writing a neighbour's segment. Either way the
        combine still waits on that pair's status slot: a hang with no
        producer, whose root cause is this route.

    Example
        route token=5 topk=1 expert=256 with num_experts=256
        -- a shared-expert id leaked into the routed ids.

    Evidence
        The route event: token, top-k slot, expert id, destination if known.
    """

    code = "MT501"
    name = "invalid-expert-id"
    family = Family.INVALID_EXPERT_ID
    severity = Severity.ERROR
    summary = "Route to an expert outside [0, num_experts) that is not the sentinel"
    infers_from = ("params",)

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        # Without num_experts (stated or inferred) a negative id that is not the sentinel is still
        # invalid: no expert numbering has one.
        ne = trace.manifest.num_experts
        sentinel = trace.manifest.param("expert_sentinel")
        routes = np.flatnonzero(trace["kind"] == int(Kind.ROUTE))  # then their experts: no whole-trace copy
        expert = trace["expert"][routes].astype(np.int64)
        bad = ((expert < 0) | (expert >= (2**62 if ne is None else int(ne)))) & (expert != C.NULL32)
        if sentinel is not None:
            bad &= expert != int(sentinel)
        allowed = "no sentinel" if sentinel is None else f"sentinel {sentinel}"
        valid = f"outside [0, {ne})" if ne is not None else "negative (num_experts unknown)"
        ranks = trace.manifest.ranks
        for r in routes[bad]:
            d = trace.describe(int(r))
            dst = d.get("dst_rank")
            if dst is None:
                sent = ", no dst_rank recorded"
            elif 0 <= dst < ranks:
                sent = f", sent to rank {dst}"
            else:
                sent = f", sent to rank {dst}, which is not a rank (ranks 0..{ranks - 1}): dropped"
            msg = (f"rank {d['rank']} core {d['core']} launch {d['launch']}: token {d['token']} top-k {d['topk']} "
                   f"routed to expert {d['expert']}, {valid} ({allowed}){sent}")
            yield self.hit(msg, rows=(("route", int(r)),), key=(d["rank"], d["core"], d["seq"]),
                           confidence=Confidence.CERTAIN,
                           extra={"token": d["token"], "topk": d["topk"], "expert": d["expert"],
                                  "num_experts": None if ne is None else int(ne)})
