"""MT501: a route to an expert id outside [0, num_experts) that is not the sentinel."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Kind

from . import _hits as H
from .analysis import codes as C
from .base import Confidence, Family, Rule, Severity
from .hit_columns import HitColumns


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
        rows = routes[bad]
        if not len(rows):
            return
        # A router off by one sends every token astray: its hits are columns, one per bad route.
        columns = {name: trace[name][rows].astype(np.int64) for name in BadRoute._fields if name in _COLUMNS}
        yield HitColumns(code=self.code, fields=BadRoute, render=_message, extra=_extra, columns=columns,
                         nulls={name: trace.null(name) for name in _COLUMNS}, roles=("route",),
                         rows=rows.astype(np.int64)[:, None],
                         key=H.row_keys(trace, rows),
                         constant={"num_experts": None if ne is None else int(ne),
                                   "sentinel": None if sentinel is None else int(sentinel),
                                   "ranks": int(trace.manifest.ranks), "confidence": Confidence.CERTAIN})


_COLUMNS = ("rank", "core", "launch", "token", "topk", "expert", "dst_rank")  # BadRoute's fields read from the route


class BadRoute(NamedTuple):
    """A route to an expert id out of range."""

    rank: int
    core: int
    launch: int
    token: int
    topk: int
    expert: int
    dst_rank: int | None  # the rank the kernel sent it to, where recorded
    num_experts: int | None  # the manifest's (stated or inferred)
    sentinel: int | None  # the manifest's expert_sentinel
    ranks: int


def _message(f: BadRoute) -> str:
    valid = f"outside [0, {f.num_experts})" if f.num_experts is not None else "negative (num_experts unknown)"
    allowed = "no sentinel" if f.sentinel is None else f"sentinel {f.sentinel}"
    if f.dst_rank is None:
        sent = ", no dst_rank recorded"
    elif 0 <= f.dst_rank < f.ranks:
        sent = f", sent to rank {f.dst_rank}"
    else:
        sent = f", sent to rank {f.dst_rank}, which is not a rank (ranks 0..{f.ranks - 1}): dropped"
    return (f"rank {f.rank} core {f.core} launch {f.launch}: token {f.token} top-k {f.topk} routed to expert "
            f"{f.expert}, {valid} ({allowed}){sent}")


def _extra(f: BadRoute) -> dict:
    return {"token": f.token, "topk": f.topk, "expert": f.expert, "num_experts": f.num_experts}
