"""The trace contract, defined once.

Every other representation of an event is derived from the tables here: the
pyarrow schema of the dataset, the JSON-lines validator, the binary ring
decoder (``ingest.rings``), the SQL ``events`` view's name decoding and the
documentation in docs/trace-format.md.  Names are the contract; the integer
codes are what the core (rules, numba kernels) sees.

Which values a field may hold as data (ranks that address memory, null
sentinels, the address bound) is ``ingest.value_ranges``, beside this.

Enum codes are stored as int8 in parquet. They are append-only: a code, once
shipped, never changes meaning, because datasets and binary dumps outlive the
code that wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import pyarrow as pa

FORMAT = "moetrace-trace/1"
DATASET_FORMAT = "moetrace-dataset/1"


class _Named(IntEnum):
    """An IntEnum whose wire name is its lower-case member name."""

    @property
    def wire(self) -> str:
        return self.name.lower()

    @classmethod
    def from_wire(cls, text: str):
        try:
            return cls[text.upper()]
        except KeyError:
            raise ValueError(f"unknown {cls.__name__.lower()} {text!r}; expected one of "
                             f"{', '.join(m.wire for m in cls)}") from None

    @classmethod
    def wires(cls) -> list[str]:
        # Dense list indexed by code, for SQL list lookups and fast decoding.
        names = [""] * (max(cls) + 1)
        for m in cls:
            names[m] = m.wire
        return names


class Kind(_Named):
    KERNEL_BEGIN = 0
    KERNEL_END = 1
    PUT = 2
    GET = 3
    PUT_SIGNAL = 4
    SIGNAL = 5
    AMO = 6
    QUIET = 7
    FENCE = 8
    WAIT_BEGIN = 9
    WAIT_END = 10
    WRITE = 11
    PIPE_SYNC = 12
    ATOMIC_MODE = 13
    BARRIER_BEGIN = 14
    BARRIER_END = 15
    ROUTE = 16
    COUNT = 17
    DELIVER = 18


class Engine(_Named):
    MTE = 0
    SDMA = 1
    UDMA = 2
    ROCE = 3
    LOCAL = 4
    ALL = 5  # only meaningful on quiet / fence: completes every engine
    # NVLink loads / stores between the GPUs of one node (DeepEP intranode): a put is a warp copy
    # into the peer's buffer, a signal a store; a release store is a quiet of p2p then the store.
    P2P = 6
    # GPU-initiated RDMA (NVSHMEM IBGDA): one reliable-connected queue pair per (core, peer), so
    # the ops of one core to one peer are delivered in issue order (an amo lands after the puts
    # before it: data then count needs no quiet); nothing orders two cores or two peers.
    IBGDA = 7


class Op(_Named):
    """Operation of signal / amo / put_signal (set, add) and atomic_mode (add, none)."""

    SET = 0
    ADD = 1
    NONE = 2


class Cmp(_Named):
    EQ = 0
    NE = 1
    GT = 2
    GE = 3
    LT = 4
    LE = 5


class Outcome(_Named):
    OK = 0
    TIMEOUT = 1


class Scope(_Named):
    ALL = 0
    CORE = 1
    TEAM = 2


class PipeOp(_Named):
    SET_FLAG = 0
    WAIT_FLAG = 1
    PIPE_BARRIER = 2
    CROSS_CORE_SET = 3
    CROSS_CORE_WAIT = 4
    SYNC_ALL = 5


class PipeEvent(_Named):
    MTE3_S = 0
    S_MTE3 = 1
    MTE3_MTE2 = 2
    MTE2_MTE3 = 3
    MTE2_S = 4
    S_MTE2 = 5
    MTE3 = 6  # pipe_barrier of the MTE3 pipe alone
    ALL = 7


class Role(_Named):
    PAYLOAD = 0
    FLAG = 1
    COUNTER = 2
    META = 3
    OUTPUT = 4


class DType(_Named):
    """Element type named by atomic_mode and amo."""

    INT8 = 0
    INT16 = 1
    INT32 = 2
    INT64 = 3
    UINT32 = 4
    UINT64 = 5
    HALF = 6
    BFLOAT16 = 7
    FLOAT = 8


# --------------------------------------------------------------------------
# Columns. One row per event; a field a kind does not carry is null.
# ``enum`` names the IntEnum whose wire names the JSON and SQL forms use;
# ``ref`` marks columns whose JSON form is a name resolved through the
# manifest (regions) rather than a fixed enum.
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    name: str
    type: pa.DataType
    doc: str
    enum: type[_Named] | None = None
    ref: str | None = None  # "region": JSON carries a region name
    envelope: bool = False  # present on every event

    @property
    def numpy_null(self) -> int:
        """The sentinel that stands for null once the column is a numpy array."""
        return _NULL_BY_TYPE[self.type]


_NULL_BY_TYPE = {
    pa.int8(): -(2**7),
    pa.int16(): -(2**15),
    pa.int32(): -(2**31),
    pa.int64(): -(2**63),
}

COLUMNS: tuple[Column, ...] = (
    # The envelope.
    Column("rank", pa.int16(), "rank (PE) that executed the operation", envelope=True),
    Column("core", pa.int16(), "AIV core / block / SM within the rank", envelope=True),
    Column("seq", pa.int64(), "program order, strictly increasing per (rank, core)", envelope=True),
    Column("ts", pa.int64(), "device cycles; monotone per core, not aligned across ranks", envelope=True),
    Column("launch", pa.int32(), "host round / kernel launch index", envelope=True),
    Column("kind", pa.int8(), "operation kind", enum=Kind, envelope=True),
    Column("site", pa.int32(), "call-site id, resolved to file:line by the manifest's sites"),
    Column("epoch", pa.int64(), "the kernel's own generation / magic value, where it has one"),
    # Per-kind fields.
    Column("name", pa.string(), "kernel name (kernel_begin, kernel_end)"),
    Column("engine", pa.int8(), "transfer engine", enum=Engine),
    Column("peer", pa.int16(), "target rank of a one-sided operation (put, get, signal, amo, count)"),
    Column("region", pa.int16(), "symmetric region, an index into the manifest's regions", ref="region"),
    Column("offset", pa.int64(), "offset in elements of the region"),
    Column("nbytes", pa.int64(), "bytes moved or written"),
    Column("local_region", pa.int16(), "get: local destination region; put: local source region", ref="region"),
    Column("local_offset", pa.int64(), "get: local destination offset in elements; put: local source offset"),
    Column("sig_region", pa.int16(), "put_signal: region of the signal word", ref="region"),
    Column("sig_offset", pa.int64(), "put_signal: offset of the signal word"),
    Column("op", pa.int8(), "set / add (signal, amo, put_signal); add / none (atomic_mode)", enum=Op),
    Column("value", pa.int64(), "word written or compared against, or count announced"),
    Column("cmp", pa.int8(), "wait comparison", enum=Cmp),
    Column("words", pa.int32(), "wait: consecutive words that must all satisfy cmp"),
    Column("observed", pa.int64(), "wait_end: the value that satisfied the wait"),
    Column("outcome", pa.int8(), "wait_end: ok or timeout", enum=Outcome),
    Column("pipe_op", pa.int8(), "pipe_sync operation (JSON field 'op')", enum=PipeOp),
    Column("event", pa.int8(), "pipe_sync hardware event", enum=PipeEvent),
    Column("dtype", pa.int8(), "atomic_mode / amo element type", enum=DType),
    Column("scope", pa.int8(), "barrier scope", enum=Scope),
    Column("token", pa.int32(), "route: token index on the owner rank"),
    Column("topk", pa.int16(), "route: top-k slot of the token"),
    Column("expert", pa.int32(), "route: global expert id as the kernel used it"),
    Column("dst_rank", pa.int16(), "route: rank the kernel sent the pair to"),
    Column("slot", pa.int32(), "route: slot within the destination segment"),
    Column("local_expert", pa.int32(), "count / deliver: local expert index on the receiver"),
    Column("src_rank", pa.int16(), "deliver: rank whose rows were delivered"),
    Column("requested", pa.int32(), "deliver: rows the sender announced"),
    Column("delivered", pa.int32(), "deliver: rows the receiver actually took"),
    Column("capacity", pa.int32(), "count / deliver: receive capacity in rows"),
)

COLUMN: dict[str, Column] = {c.name: c for c in COLUMNS}
ENVELOPE: tuple[str, ...] = tuple(c.name for c in COLUMNS if c.envelope)

SCHEMA = pa.schema(
    [pa.field(c.name, c.type, nullable=not c.envelope, metadata={"doc": c.doc}) for c in COLUMNS],
    metadata={"format": DATASET_FORMAT},
)

# --------------------------------------------------------------------------
# Which kind carries which field. (required, optional) per kind; the JSON
# name of pipe_sync's operation is "op", stored in column pipe_op.
# --------------------------------------------------------------------------

_ONE_SIDED = ("engine", "peer", "region", "offset", "nbytes")

FIELDS: dict[Kind, tuple[tuple[str, ...], tuple[str, ...]]] = {
    Kind.KERNEL_BEGIN: (("name",), ()),
    Kind.KERNEL_END: (("name",), ()),
    # Optional parts are append-only: a new one goes last (its ring presence bit is its place).
    Kind.PUT: (_ONE_SIDED, ("value", "local_region", "local_offset")),
    Kind.GET: (_ONE_SIDED + ("local_region", "local_offset"), ()),
    Kind.PUT_SIGNAL: (_ONE_SIDED + ("sig_region", "sig_offset", "op", "value"), ()),
    Kind.SIGNAL: (("engine", "peer", "region", "offset", "op", "value"), ()),
    Kind.AMO: (("engine", "peer", "region", "offset", "op", "value"), ("dtype",)),
    Kind.QUIET: (("engine",), ("peer",)),
    Kind.FENCE: ((), ("engine", "peer")),
    Kind.WAIT_BEGIN: (("region", "offset", "cmp", "value"), ("words",)),
    Kind.WAIT_END: (("region", "offset", "observed"), ("outcome",)),
    Kind.WRITE: (("region", "offset", "nbytes", "value"), ()),
    Kind.PIPE_SYNC: (("pipe_op", "event"), ()),
    Kind.ATOMIC_MODE: (("op",), ("dtype",)),
    Kind.BARRIER_BEGIN: (("scope",), ("value",)),
    Kind.BARRIER_END: (("scope",), ("value",)),
    Kind.ROUTE: (("token", "topk", "expert"), ("dst_rank", "slot")),
    Kind.COUNT: (("peer", "local_expert", "value"), ("capacity",)),
    Kind.DELIVER: (("local_expert", "src_rank", "requested", "delivered", "capacity"), ()),
}

# Fields every event may carry besides its kind's own.
COMMON_OPTIONAL: tuple[str, ...] = ("site", "epoch")

# The JSON key of a column where it differs from the column name.
JSON_NAME: dict[tuple[Kind, str], str] = {(Kind.PIPE_SYNC, "pipe_op"): "op"}

# Enum values a field may take, where a kind allows only part of its enum.
ALLOWED: dict[tuple[Kind, str], frozenset[int]] = {
    (Kind.SIGNAL, "op"): frozenset({Op.SET, Op.ADD}),
    (Kind.AMO, "op"): frozenset({Op.SET, Op.ADD}),
    (Kind.PUT_SIGNAL, "op"): frozenset({Op.SET, Op.ADD}),
    (Kind.ATOMIC_MODE, "op"): frozenset({Op.ADD, Op.NONE}),
    (Kind.PUT, "engine"): frozenset(set(Engine) - {Engine.ALL}),
    (Kind.GET, "engine"): frozenset(set(Engine) - {Engine.ALL}),
    (Kind.PUT_SIGNAL, "engine"): frozenset(set(Engine) - {Engine.ALL}),
    (Kind.SIGNAL, "engine"): frozenset(set(Engine) - {Engine.ALL}),
    (Kind.AMO, "engine"): frozenset(set(Engine) - {Engine.ALL}),
}


def json_name(kind: Kind, column: str) -> str:
    return JSON_NAME.get((kind, column), column)


def kind_columns(kind: Kind) -> tuple[str, ...]:
    """Every non-envelope column an event of this kind may fill."""
    req, opt = FIELDS[kind]
    return req + opt + COMMON_OPTIONAL


# Columns whose values are ranks.
RANK_FIELDS = ("rank", "peer", "dst_rank", "src_rank")

# Kinds whose target word lives in a peer's memory (owner = peer).
REMOTE_WRITE_KINDS = frozenset({Kind.PUT, Kind.PUT_SIGNAL, Kind.SIGNAL, Kind.AMO})

