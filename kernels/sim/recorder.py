"""Per-core columnar event buffers, as an instrumented kernel's ring would hold them.

Events are recorded in chunks: a chunk is a run of rows of one core built from
one or more ``Part``s (one part per operation of a batched loop body; parts are
interleaved row by row, so ``[PUT, QUIET]`` over n pairs gives put, quiet, put,
quiet, ...).  A column of a chunk is either a numpy array or a scalar that is
broadcast only when the dataset is written, so a batch of a thousand puts costs a
handful of numpy calls, not a thousand dicts.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from ingest.contract import COLUMN, COLUMNS, Kind

_REPO = Path(__file__).resolve().parents[2]
_INT_COLS = [c.name for c in COLUMNS if c.name not in ("rank", "core", "seq", "ts", "launch", "kind", "name")]

# Cycles an operation takes to issue; only the shape of time matters (monotone per
# core, waits and barriers absorb the gaps), not the absolute numbers.
_COST = np.full(max(Kind) + 1, 4, dtype=np.int64)
for _k, _c in ((Kind.PUT, 24), (Kind.GET, 24), (Kind.PUT_SIGNAL, 28), (Kind.QUIET, 40),
               (Kind.WAIT_BEGIN, 2), (Kind.WAIT_END, 6), (Kind.BARRIER_END, 8), (Kind.ROUTE, 2)):
    _COST[_k] = _c


class Sites:
    """Call-site ids: the reference kernel's own source line that issued an op.

    Looked up from the caller's frame; the (file, line) -> id map is cached so a
    site costs one dict probe after its first use.
    """

    def __init__(self):
        self._ids: dict[tuple[str, int], int] = {}
        self.text: dict[int, str] = {}

    def here(self, depth: int = 2) -> int:
        f = sys._getframe(depth)
        key = (f.f_code.co_filename, f.f_lineno)
        sid = self._ids.get(key)
        if sid is None:
            sid = len(self._ids)
            self._ids[key] = sid
            try:
                name = Path(key[0]).resolve().relative_to(_REPO).as_posix()
            except ValueError:
                name = Path(key[0]).name
            self.text[sid] = f"{name}:{key[1]}"
        return sid


@dataclass
class Part:
    """n events of one kind; cols map column name -> array of n or scalar."""

    kind: int
    n: int
    cols: dict

    def recording(self, **cols) -> "Part":
        """This part, recording ``cols`` as well (the value a put carries: ``put(...).recording(value=v)``)."""
        self.cols.update(cols)
        return self


class CoreLog:
    __slots__ = ("chunks", "rows", "seq", "clock", "cap", "dropped")

    def __init__(self, cap: int | None):
        self.chunks: list[tuple[np.ndarray, dict, np.ndarray, int, int]] = []  # kinds, cols, ts, seq0, launch
        self.rows = 0  # rows held in chunks
        self.seq = 0  # next seq
        self.clock = 0
        self.cap = cap
        self.dropped = 0  # rows dropped from the head (ring wrap)

    def emit(self, parts: list[Part], launch: int, now: int, skip: int = 0,
             upto: int | None = None) -> int:
        if len(parts) == 1:
            p = parts[0]
            n = p.n
            kinds = np.full(n, p.kind, dtype=np.int8)
            cols = p.cols
        else:
            n0 = parts[0].n
            k = len(parts)
            n = n0 * k
            kinds = np.tile(np.array([p.kind for p in parts], dtype=np.int8), n0)
            names = {c for p in parts for c in p.cols}
            cols = {}
            for c in names:
                arr = np.full(n, COLUMN[c].numpy_null if c != "name" else -1, dtype=np.int64)
                for j, p in enumerate(parts):
                    v = p.cols.get(c)
                    if v is not None:
                        arr[j::k] = v
                cols[c] = arr
        if skip or upto is not None:
            sl = slice(skip, upto)
            kinds = kinds[sl]
            cols = {c: (v[sl] if isinstance(v, np.ndarray) else v) for c, v in cols.items()}
            n = len(kinds)
        if n <= 0:
            return 0
        self.clock = max(self.clock, now)
        ts = self.clock + np.cumsum(_COST[kinds])
        self.clock = int(ts[-1])
        self.chunks.append((kinds, cols, ts, self.seq, launch))
        self.seq += n
        self.rows += n
        if self.cap is not None and self.rows - len(self.chunks[0][0]) > 2 * self.cap:
            self._trim()
        return n

    def _trim(self) -> None:
        # Drop whole head chunks that the ring has certainly overwritten already.
        while self.chunks and self.rows - len(self.chunks[0][0]) >= self.cap:
            n = len(self.chunks.pop(0)[0])
            self.rows -= n
            self.dropped += n

    @property
    def total(self) -> int:
        return self.seq


def build_table(logs: list[tuple[int, int, CoreLog]], names: list[str]) -> tuple[pa.Table, dict]:
    """One arrow table of the given (rank, core, log)s, and the rows lost per core."""
    lost: dict[tuple[int, int], int] = {}
    pieces = []  # (rank, core, chunk, start) kept rows
    total = 0
    for rank, core, log in logs:
        keep_from = 0 if log.cap is None else max(0, log.seq - log.cap)
        if keep_from:
            lost[(rank, core)] = keep_from
        for kinds, cols, ts, seq0, launch in log.chunks:
            n = len(kinds)
            if seq0 + n <= keep_from:
                continue
            s = max(0, keep_from - seq0)
            pieces.append((rank, core, kinds, cols, ts, seq0, launch, s))
            total += n - s
    out = {c: np.full(total, COLUMN[c].numpy_null, dtype=np.int64) for c in _INT_COLS}
    env = {"rank": np.empty(total, np.int16), "core": np.empty(total, np.int16),
           "seq": np.empty(total, np.int64), "ts": np.empty(total, np.int64),
           "launch": np.empty(total, np.int32), "kind": np.empty(total, np.int8)}
    name_idx = np.full(total, -1, dtype=np.int64)
    pos = 0
    for rank, core, kinds, cols, ts, seq0, launch, s in pieces:
        n = len(kinds) - s
        sl = slice(pos, pos + n)
        env["rank"][sl] = rank
        env["core"][sl] = core
        env["seq"][sl] = np.arange(seq0 + s, seq0 + s + n)
        env["ts"][sl] = ts[s:]
        env["launch"][sl] = launch
        env["kind"][sl] = kinds[s:]
        for c, v in cols.items():
            if v is None:
                continue
            dst = name_idx if c == "name" else out[c]
            dst[sl] = v[s:] if isinstance(v, np.ndarray) else v
        pos += n
    arrays, fields = [], []
    for c in COLUMNS:
        if c.name in env:
            arrays.append(pa.array(env[c.name], type=c.type))
        elif c.name == "name":
            lookup = np.array(list(names) + [None], dtype=object)
            arrays.append(pa.array(lookup[name_idx], type=pa.string()))
        else:
            v = out[c.name]
            arrays.append(pa.array(v, mask=v == c.numpy_null).cast(c.type))
        fields.append(c.name)
    return pa.Table.from_arrays(arrays, names=fields), lost
