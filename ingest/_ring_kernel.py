"""The ring decoder's one pass over the records, and the tables that drive it.

``PROGRAM`` turns ``ingest.ring_layout.PLANS`` into flat integer tables
(which slot each column reads, which kinds carry it, which codes and ranges
it must hold) so one numba kernel can transpose 64-byte records into columns
and validate them without knowing any field: a layout change changes the
tables, not the kernel. A check does not raise in the kernel; it records the
first bad row, and ``ingest.rings`` words the error from the record itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._jit import kernel
from .contract import COLUMN, RANK_FIELDS, Kind
from .ring_layout import PLANS, RECORD_DTYPE, REGION_SLOTS, Plan

_NP_TYPE = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64}
# Output columns are passed as one matrix per numpy type, a row per column;
# the name ids get their own, dropped once the names are looked up.
GROUPS = (np.int64, np.int32, np.int16, np.int8, np.int32)
_IDS = 4

# Check codes; the limits of the range checks that depend on the manifest are
# filled in per call (``Program.limits``).
ALLOWED, REGION, RANK, NAME, FIT = range(5)


@dataclass(frozen=True)
class Check:
    plan: Plan
    what: int  # ALLOWED, REGION, RANK, NAME or FIT


@dataclass(frozen=True)
class Program:
    """Flat tables over the columns of ``PLANS`` (column j = ``PLANS[j]``)."""

    slot_off: np.ndarray  # int64[j]: byte offset of the slot in the record
    slot_size: np.ndarray  # int64[j]: 1, 2, 4 or 8
    slot_signed: np.ndarray  # bool[j]
    out_group: np.ndarray  # int64[j]: the output matrix (index into GROUPS)
    out_index: np.ndarray  # int64[j]: its row there
    carry: np.ndarray  # int32[256, j]: -1 required, presence bit where optional, 0 not carried
    kind_cols: np.ndarray  # int64[256, n]: the columns each kind may carry
    kind_ncols: np.ndarray  # int64[256]
    allowed: np.ndarray  # int64[j, 256]: allowed enum codes as bits (all ones: no enum)
    checks: tuple[Check, ...]  # in the order the errors are reported
    col_checks: np.ndarray  # int64[j, 2]: first check and end of column j's checks
    check_what: np.ndarray  # int64[c]

    def limits(self, regions: int, ranks: int, names: int) -> tuple[np.ndarray, np.ndarray]:
        """[lo, hi) of each check for this manifest (unused by ALLOWED)."""
        lo = np.zeros(len(self.checks), np.int64)
        hi = np.zeros(len(self.checks), np.int64)
        for c, chk in enumerate(self.checks):
            if chk.what == REGION:
                hi[c] = regions
            elif chk.what == RANK:
                hi[c] = ranks
            elif chk.what == NAME:
                hi[c] = names
            elif chk.what == FIT:
                info = np.iinfo(_NP_TYPE[str(COLUMN[chk.plan.column].type)])
                lo[c], hi[c] = info.min, info.max + 1
        return lo, hi


def _program() -> Program:
    n = len(PLANS)
    off, size, signed, group, index = [], [], [], [], []
    used = [0] * len(GROUPS)
    carry = np.zeros((256, n), np.int32)
    allowed = np.full((n, 256), 0xFFFFFFFF, np.int64)
    checks: list[Check] = []
    col_checks = np.zeros((n, 2), np.int64)
    for j, plan in enumerate(PLANS):
        slot_type, slot_off = RECORD_DTYPE.fields[plan.slot]
        assert slot_type.kind == "i" or slot_type.itemsize < 8, "an unsigned 64-bit slot needs another read"
        # The kernel only stores an id for names; the strings are looked up after.
        g = _IDS if plan.column == "name" else GROUPS.index(_NP_TYPE[str(COLUMN[plan.column].type)])
        dt = np.dtype(GROUPS[g])
        off.append(slot_off)
        size.append(slot_type.itemsize)
        signed.append(slot_type.kind == "i")
        group.append(g)
        index.append(used[g])
        used[g] += 1
        carry[:, j] = np.where(plan.required, -1, plan.bit.astype(np.int32))
        for kmask, cmask in plan.allowed or ():
            for k in range(256):
                if kmask >> k & 1:
                    allowed[j, k] = cmask
        col_checks[j, 0] = len(checks)
        if plan.allowed:
            checks.append(Check(plan, ALLOWED))
        if plan.slot in REGION_SLOTS:
            checks.append(Check(plan, REGION))
        if plan.column in RANK_FIELDS:
            checks.append(Check(plan, RANK))
        if plan.column == "name":
            checks.append(Check(plan, NAME))
        elif not (plan.allowed or plan.slot in REGION_SLOTS) and slot_type.itemsize > dt.itemsize:
            checks.append(Check(plan, FIT))
        col_checks[j, 1] = len(checks)
    kind_ncols = (carry != 0).sum(axis=1).astype(np.int64)
    kind_cols = np.zeros((256, max(1, int(kind_ncols.max()))), np.int64)
    for k in range(256):
        cols = np.flatnonzero(carry[k])
        kind_cols[k, :len(cols)] = cols
    return Program(np.array(off, np.int64), np.array(size, np.int64), np.array(signed, bool),
                   np.array(group, np.int64), np.array(index, np.int64), carry, kind_cols,
                   kind_ncols, allowed, tuple(checks), col_checks,
                   np.array([c.what for c in checks], np.int64))


PROGRAM = _program()
OUTPUTS = tuple(int((PROGRAM.out_group == g).sum()) for g in range(len(GROUPS)))  # rows per matrix
ENVELOPE = ("ts", "launch", "kind")  # record slots copied to every row, checked or not
SEQ_LO_OFF = RECORD_DTYPE.fields["seq_lo"][1]
PRESENT_OFF = RECORD_DTYPE.fields["present"][1]
KINDS = len(Kind)


@kernel
def decode_records(b1, b2, b4, b8, pieces, block, env_off, seq_off, present_off, kinds,
                   slot_off, slot_size, slot_signed, out_group, out_index, carry, kind_cols, kind_ncols,
                   allowed, col_checks, check_what, check_lo, check_hi,
                   seq, pos, rank, core, ts, launch, kind_out, o8, o4, o2, o1, oid, bits, nvalid, first_bad):
    """Transpose and validate the records of ``pieces`` (unit, count, seq, rank, core) into the outputs.

    ``b1``..``b8``: the dump as [unit, item] views of 1, 2, 4 and 8 bytes;
    ``o8``..``oid``: the output matrices of ``GROUPS``, [index, row].
    Values of null rows stay as allocated (zero). ``first_bad[0]``: seq_lo
    mismatch, ``[1]``: kind code, ``[2 + c]``: check c (-1 where none fails).

    Rows are taken a cache-sized block at a time and grouped by kind, so the
    per-field loops run over rows of one kind: which slot, check and output a
    field uses is fixed for the whole loop instead of a branch per row.
    """
    of_kind = np.zeros(block, np.int64)
    kind_blk = np.zeros(block, np.int64)
    count = np.zeros(256, np.int64)
    start = np.zeros(257, np.int64)
    o = 0
    for p in range(pieces.shape[0]):
        u0, cnt, s0, rk, cr = pieces[p, 0], pieces[p, 1], pieces[p, 2], pieces[p, 3], pieces[p, 4]
        for b0 in range(0, cnt, block):
            m = min(block, cnt - b0)
            ub = u0 + b0
            count[:] = 0
            for t in range(m):
                u = ub + t
                r = o + t
                sq = s0 + b0 + t
                seq[r] = sq
                pos[r] = u * b1.shape[1]  # the byte view is [unit, record byte]
                rank[r] = rk
                core[r] = cr
                ts[r] = b8[u, env_off[0] >> 3]
                launch[r] = b4[u, env_off[1] >> 2]
                k = np.int64(b1[u, env_off[2]])
                kind_out[r] = k
                kind_blk[t] = k
                count[k] += 1
                if (np.int64(b4[u, seq_off >> 2]) & 0xFFFFFFFF) != (sq & 0xFFFFFFFF) and first_bad[0] < 0:
                    first_bad[0] = r
                if k >= kinds and first_bad[1] < 0:
                    first_bad[1] = r
            start[0] = 0
            for k in range(256):
                start[k + 1] = start[k] + count[k]
            for t in range(m):
                k = kind_blk[t]
                of_kind[start[k]] = t
                start[k] += 1
            for k in range(256):
                start[k] -= count[k]  # back to each kind's first place
            for k in range(256):
                if count[k] == 0:
                    continue
                e0, e1 = start[k], start[k] + count[k]
                for q in range(kind_ncols[k]):
                    j = kind_cols[k, q]
                    c = carry[k, j]
                    sz, so, sg = slot_size[j], slot_off[j], slot_signed[j]
                    g, i = out_group[j], out_index[j]
                    c0, c1 = col_checks[j, 0], col_checks[j, 1]
                    cmask = allowed[j, k]
                    got = 0
                    for e in range(e0, e1):
                        t = of_kind[e]
                        u = ub + t
                        if c > 0 and (np.int64(b2[u, present_off >> 1]) & c) == 0:
                            continue
                        r = o + t
                        if sz == 8:
                            v = b8[u, so >> 3]
                        elif sz == 4:
                            v = np.int64(b4[u, so >> 2])
                            if not sg:
                                v &= 0xFFFFFFFF
                        elif sz == 2:
                            v = np.int64(b2[u, so >> 1])
                            if not sg:
                                v &= 0xFFFF
                        else:
                            v = np.int64(b1[u, so])
                            if sg and v >= 128:
                                v -= 256
                        for ci in range(c0, c1):
                            if check_what[ci] == 0:
                                bad = v < 0 or v >= 32 or ((cmask >> v) & 1) == 0
                            else:
                                bad = v < check_lo[ci] or v >= check_hi[ci]
                            # Kinds are visited one after another: keep the lowest row.
                            if bad and (first_bad[2 + ci] < 0 or r < first_bad[2 + ci]):
                                first_bad[2 + ci] = r
                        if g == 0:
                            o8[i, r] = v
                        elif g == 1:
                            o4[i, r] = v
                        elif g == 2:
                            o2[i, r] = v
                        elif g == 3:
                            o1[i, r] = v
                        else:
                            oid[i, r] = v
                        bits[j, r >> 3] |= np.uint8(1 << (r & 7))
                        got += 1
                    nvalid[j] += got
            o += m
