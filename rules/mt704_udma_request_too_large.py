"""MT704: a single UDMA request over 256 MB."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Kind

from . import _engines as E
from .analysis import codes as C
from .base import Family, Rule, Severity

_KINDS = np.array([int(Kind.PUT), int(Kind.GET), int(Kind.PUT_SIGNAL)], np.int8)


class UdmaRequestTooLarge(Rule):
    """One UDMA put or get moving more than the engine takes in one request.

    What it does
        Flags every `put`, `get` or `put_signal` on the UDMA engine whose
        `nbytes` exceeds the option `max_bytes` (256 MiB). One hit per
        (rank, core, launch, site), with the count.

    Why it matters
        A UDMA work request carries at most 256 MB; a larger transfer must
        be cut into chunks by the kernel. One oversized request is refused
        or truncated by the engine, so the peer gets part of the data (or
        none) while the kernel goes on as if it had all of it.

    Example
        put udma peer=1 payload[0] nbytes=402653184
        -- issue it as two requests of at most 256 MB.

    Evidence
        The oversized request (first); with several from one site, the last.
        Needs no optional field: `engine` and `nbytes` are required.
        Certain where it fires.
    """

    code = "MT704"
    name = "udma-request-too-large"
    family = Family.ENGINE_LIMIT
    severity = Severity.ERROR
    summary = "A single UDMA put/get over 256 MB (must be chunked)"
    options = {"max_bytes": 256 << 20}

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        limit = int(ctx.option("max_bytes", self.options["max_bytes"]))
        rows = np.flatnonzero(C.one_of(trace["kind"], _KINDS) & (trace["engine"] == C.E_UDMA)
                              & (trace["nbytes"] > limit))
        yield from E.site_hits(self, trace, rows, "oversized request", Oversized, _message,
                               at_rows={"limit": np.broadcast_to(limit, trace.n)})


class Oversized(NamedTuple):
    """A site's first oversized request: its message is rendered from these."""

    rank: int
    core: int
    launch: int
    kind: str
    peer: int
    region: str
    offset: int
    seq: int
    nbytes: int
    limit: int  # the max_bytes option
    operations: int  # requests from the site


def _message(f: Oversized) -> str:
    return E.per_site(f, f"rank {f.rank} core {f.core} launch {f.launch}: udma {f.kind} to rank {f.peer} "
                         f"{f.region}[{f.offset}] at seq {f.seq} moves {f.nbytes} B in one request, over the "
                         f"{f.limit} B a UDMA request carries: chunk it")
