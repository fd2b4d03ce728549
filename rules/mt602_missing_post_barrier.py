"""MT602: a write over symmetric memory a peer's read of it is not ordered before."""

from __future__ import annotations

from ._races import Race, more, race_hits
from .analysis import Stage, WordTable
from .base import Family, Rule, Severity


class MissingPostBarrier(Rule):
    """A rank overwrites its workspace while a peer's get of the previous contents may still run.

    What it does
        As MT601, orders every `get` from another rank's non-flag region
        against the writes of the same words in its launch. A read that has
        a write ordered before it (the value it was meant to read) and also
        an unordered later write (not ordered after the read's completion:
        its quiet, or for an MTE get its pipe drain) is a hit: the owner
        reuses the words while the peer may still be reading them. One hit
        per (rank, core, launch, read site).

    Why it matters
        This is the missing post barrier of a reduce-scatter: after its own
        reads rank p goes on to the next stage and its AIC writes
        `Sym_p[stage]` again while rank r is still reading the old stage
        from it. r adds the new stage's data (or a half-written tile) into
        its sum. `aclshmem_barrier_all()` after the reads, before the AIC
        reuses the stage (`flagAivFinishCompute` set after it), orders them.

    Example
        rank 0: get mte peer=1 workspace[0..8]; rank 1: write workspace[0..8] (next stage, no barrier)
        -- barrier after the gets, before the workspace is written again.

    Evidence
        The read (first), the unordered write, and the write ordered before
        the read (its intended value). Confidence as MT601.
    """

    code = "MT602"
    name = "missing-post-barrier"
    family = Family.DATA_RACE
    severity = Severity.ERROR
    summary = "Workspace overwritten while a peer's read of it is not ordered before (missing post barrier)"
    requires = (Stage.WORD_TABLE,)

    def check(self, trace, ctx):
        yield from race_hits(self, trace, ctx.stage(WordTable), True, _message)


def _message(f: Race) -> str:
    return more(f, f"rank {f.rank} core {f.core} launch {f.launch}: get from rank {f.peer} {f.region}[{f.offset}] "
                   f"({f.nbytes} B) at seq {f.seq} reads what {f.before} wrote, but {f.writer}'s {f.writer_kind} "
                   f"of those words is not ordered after the read completes: no barrier between them; the words "
                   f"can be overwritten while the peer still reads them")
