"""MT601: a read of a peer's symmetric memory not ordered after the peer's write of it."""

from __future__ import annotations

from ._races import Race, more, race_hits
from .analysis import Stage, WordTable
from .base import Family, Rule, Severity


class MissingPreBarrier(Rule):
    """A get of a peer's workspace that the peer writes in the same launch, with no edge between.

    What it does
        For every `get` from another rank's non-flag region, looks for the
        writes of the same words in the same launch (the owner's local
        `write`s, any rank's `put`s into it) and orders each against the
        read by happens-before: program order, core barriers within a rank,
        cross-rank barriers between ranks (both recording layouts), and the
        flags the reader's rank waited on before the read whose observed
        value needed a write made after the write: the one set of that value,
        or an add a counter could not have reached its value without (a
        barrier of amos), followed through chains of such flags (all add to
        rank 0's counter, rank 0 releases all); a put counts from the quiet
        that completes it. Never by ts. A read with an unordered write and no
        write ordered before it is a hit: it can only have meant that write.
        One hit per (rank, core, launch, read site): its first read no flag
        orders.

    Why it matters
        This is the missing pre barrier of a reduce-scatter: rank p reads
        `Sym_r[stage][p]` while rank r may still be writing it. A fast reader
        gets the old contents (garbage, last stage's data) and the sum is
        wrong with no error anywhere. `aclshmem_barrier_all()` (or a flag the
        writer sets after its write and the reader waits on) before the get
        makes every write visible first.

    Example
        rank 1: write workspace[0..8]; (no barrier) rank 0: get mte peer=1 workspace[0..8]
        -- put aclshmem_barrier_all() between the workspace writes and the gets.

    Evidence
        The read (first) and one unordered write of its words. Inferred where
        the reader waited on a flag of the writer's rank whose value the
        trace cannot tie to a write after this one; a partial-trace note where
        a ring wrap or a missing dump may hide the barrier.
    """

    code = "MT601"
    name = "missing-pre-barrier"
    family = Family.DATA_RACE
    severity = Severity.ERROR
    summary = "Get of a peer's symmetric memory not ordered after the peer's write of it (missing pre barrier)"
    requires = (Stage.WORD_TABLE,)

    def check(self, trace, ctx):
        yield from race_hits(self, trace, ctx.stage(WordTable), False, _message)


def _message(f: Race) -> str:
    return more(f, f"rank {f.rank} core {f.core} launch {f.launch}: get from rank {f.peer} {f.region}[{f.offset}] "
                   f"({f.nbytes} B) at seq {f.seq} is not ordered after {f.writer}'s {f.writer_kind} of those words "
                   f"({f.writer_nbytes} B at offset {f.writer_offset}): no barrier between them and no flag the "
                   f"reader saw set after the write; the get can read the old contents")
