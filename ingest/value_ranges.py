"""Which values each field may hold as data: part of the contract (``ingest.contract``).

Every reader (the careful and the fast JSON-lines paths, the ring decoder)
and the manifest take their checks from here, through
``Manifest.value_range(kind, column)``, so all give one verdict.
"""

from __future__ import annotations

from .contract import COLUMN, Kind

# Kinds whose peer names the rank whose memory a one-sided operation reaches
# (or whose operations a quiet / fence completes): it keys the word's owner.
RMA_KINDS = frozenset({Kind.PUT, Kind.GET, Kind.PUT_SIGNAL, Kind.SIGNAL, Kind.AMO, Kind.QUIET, Kind.FENCE})


def must_be_rank(kind: Kind, column: str) -> bool:
    """Whether every reader checks this field against the manifest's ranks.

    Only where a rank addresses memory (the envelope's rank, the peer of a
    one-sided operation): the analyses key words by it. A route's dst_rank, a
    count's peer and a deliver's src_rank are what the kernel computed, so a
    value outside the ranks is evidence for the rules (MT501, MT502), checked
    only against its column type.
    """
    return column == "rank" or (column == "peer" and kind in RMA_KINDS)


# --------------------------------------------------------------------------
# What the analyses can address. Word keys are int64 sums (owner rank *
# words_per_rank + region base + offset, plus element counts), so offsets,
# byte counts and region lengths are bounded far inside int64: 2^40 elements
# (1 Ti) is beyond any device's memory, and 2^15 ranks * 2^44 words per rank
# leaves every such sum under 2^60. Values beyond are rejected at ingest.
# --------------------------------------------------------------------------

ADDRESS_LIMIT = 1 << 40  # |offset|, |nbytes| of an event; a region's length, in elements
HEAP_LIMIT = 1 << 44  # elements one rank's regions span together (words_per_rank)
ADDRESS_FIELDS = ("offset", "local_offset", "sig_offset", "nbytes")


def value_range_of(ranks: int, cores: int, kind: Kind, column: str) -> tuple[int, int]:
    """The values an integer field of ``kind`` may take on a machine of ``ranks`` x ``cores``: its ranks
    and cores where it addresses memory (``must_be_rank``), else ``column_range`` (``Manifest.value_range``)."""
    if must_be_rank(kind, column):
        return 0, ranks - 1
    if column == "core":
        return 0, cores - 1
    return column_range(column)


def column_range(column: str) -> tuple[int, int]:
    """The values an integer column can hold as data: its type's range without the
    null sentinel (the type's minimum stands for null in the core), and the
    address bound for offsets and byte counts."""
    if column in ADDRESS_FIELDS:
        return -ADDRESS_LIMIT, ADDRESS_LIMIT
    bits = COLUMN[column].type.bit_width
    return -(1 << (bits - 1)) + 1, (1 << (bits - 1)) - 1


def range_problem(column: str, value: int) -> str:
    """Why an integer outside ``column_range`` is refused (for a reader's message)."""
    spec = COLUMN[column]
    if value == spec.numpy_null:
        return f"is the null sentinel of {spec.type} (its minimum), which never stands for data"
    lo, hi = column_range(column)
    if column in ADDRESS_FIELDS and -(2**63) <= value < 2**63:
        return f"is beyond what the analyses address ({lo}..{hi}, 2^40 elements or bytes)"
    return f"does not fit {spec.type} ({lo}..{hi})"
