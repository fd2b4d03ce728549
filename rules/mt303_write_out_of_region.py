"""MT303: a write that runs past the end of its region."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Kind

from . import _hits as H
from ._jit import kernel
from .analysis import codes as C
from .analysis import regions as R
from .base import Confidence, Family, Rule, Severity
from .hit_columns import HitColumns, coded

K_PUT, K_PUTSIG, K_SIGNAL, K_AMO, K_WRITE, K_GET = C.K_PUT, C.K_PUTSIG, C.K_SIGNAL, C.K_AMO, C.K_WRITE, C.K_GET


class Targets(NamedTuple):
    """Per row: the region written, its offset (a get's: local_offset), the words written."""
    region: np.ndarray
    offset: np.ndarray
    local_offset: np.ndarray
    extent: np.ndarray


@kernel
def _outside(kind, targets, sig_region, sig_offset, length, out):
    # 1: the target range leaves its region; 2: only a put_signal's signal word does.
    treg, offset, loffset, ext = targets
    for i in range(len(kind)):
        k = kind[i]
        r = treg[i]
        if r >= 0 and (k == K_PUT or k == K_PUTSIG or k == K_SIGNAL or k == K_AMO or k == K_WRITE or k == K_GET):
            o = loffset[i] if k == K_GET else offset[i]
            if o < 0 or o + ext[i] > length[r]:
                out[i] = 1
                continue
        if k == K_PUTSIG:
            sr = sig_region[i]
            if sr >= 0 and (sig_offset[i] < 0 or sig_offset[i] >= length[sr]):
                out[i] = 2


class WriteOutOfRegion(Rule):
    """A write whose target range leaves its region: offset < 0 or offset + extent > length.

    What it does
        For put, put_signal (payload and signal word), signal, amo, write and
        a get's local destination, computes the elements written (nbytes
        over the region's element size, rounded up; one for signal and amo)
        and flags targets outside [0, length) of their region.

    Why it matters
        Regions sit back to back in the symmetric heap: a row written past
        the end of one lands in the next (a neighbour segment's payload, or
        the flags after it), on another rank for a remote write. Nothing
        traps; the damage shows up later as a corrupted row or a flag set
        by nobody.

    Example
        put peer=1 payload[60] nbytes=64 with payload of length 64 (4 B elements)
        -- 16 elements from 60 end at 76: 12 past the end.

    Evidence
        The write.
    """

    code = "MT303"
    name = "write-out-of-region"
    family = Family.CAPACITY_TRUNCATION
    severity = Severity.ERROR
    summary = "Write beyond its region's length (offset + extent > length)"

    def check(self, trace, ctx):
        if trace.n == 0:
            return
        kind = trace["kind"]
        rt = R.region_table(trace)
        reg, ext = R.target_region(trace), R.extent(trace)
        offset = trace["offset"]
        loffset = trace["local_offset"] if bool((kind == K_GET).any()) else offset
        # Read at a put_signal alone, here and below: a window without one holds neither.
        sreg, soff = trace.carried("sig_region"), trace.carried("sig_offset")
        out = np.zeros(trace.n, np.int8)
        _outside(kind, Targets(reg, offset, loffset, ext), sreg, soff, rt["length"], out)
        rows = np.flatnonzero(out)
        if not len(rows):
            return
        # A write past the end of its region in a loop is one per iteration: the hits are columns.
        payload = out[rows] == 1  # else only a put_signal's signal word leaves its region
        region = reg[rows].astype(np.int64)
        offset_ = np.where(kind[rows] == K_GET, loffset[rows], offset[rows]).astype(np.int64)
        signal = rows[~payload]
        region[~payload], offset_[~payload] = sreg[signal], soff[signal]
        columns = {name: trace[name][rows].astype(np.int64) for name in ("rank", "core", "launch")}
        columns |= {"offset": offset_.astype(np.int64), "extent": np.where(payload, ext[rows], 1).astype(np.int64),
                    "length": rt["length"][region], "owner": trace.owner[rows].astype(np.int64)}
        tables = {}
        columns["kind"], tables["kind"] = coded(Kind(k).wire for k in kind[rows].tolist())
        columns["region"], tables["region"] = coded(H.region_name(trace, r) for r in region.tolist())
        yield HitColumns(code=self.code, fields=OutOfRegion, render=_message, extra=_extra, columns=columns,
                         tables=tables, roles=("write",), rows=rows.astype(np.int64)[:, None],
                         key=H.row_keys(trace, rows),
                         constant={"confidence": Confidence.CERTAIN})


class OutOfRegion(NamedTuple):
    """A write whose target range leaves its region."""

    rank: int
    core: int
    launch: int
    kind: str
    region: str  # the region written (a put_signal's signal word's where only that leaves it)
    offset: int
    extent: int  # elements written
    length: int  # the region's elements
    owner: int  # the rank whose memory it is


def _message(f: OutOfRegion) -> str:
    end = f.offset + f.extent
    return (f"rank {f.rank} core {f.core} launch {f.launch}: {f.kind} writes {f.region}[{f.offset}:{end}] of rank "
            f"{f.owner}, but {f.region} has {f.length} elements ({max(end - f.length, -f.offset)} outside)")


def _extra(f: OutOfRegion) -> dict:
    return {"region": f.region, "offset": f.offset, "extent": f.extent, "length": f.length, "owner": f.owner}
