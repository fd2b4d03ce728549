"""MT402: atomic mode switched back to none while MTE3 writes issued under add are in flight."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import PipeEvent, PipeOp

from . import _hits as H
from ._jit import kernel
from .analysis import HappensBefore, Stage
from .analysis import codes as C
from .base import Family, Rule, Severity
from .hit_columns import HitColumns, coded_columns

K_BEGIN, K_PUT, K_GET, K_AMODE, K_PIPE = C.K_BEGIN, C.K_PUT, C.K_GET, C.K_AMODE, C.K_PIPE
E_MTE, OP_ADD = C.E_MTE, C.OP_ADD
WAIT_FLAG, PIPE_BARRIER = int(PipeOp.WAIT_FLAG), int(PipeOp.PIPE_BARRIER)
EV_MTE3_S, EV_MTE3, EV_ALL = int(PipeEvent.MTE3_S), int(PipeEvent.MTE3), int(PipeEvent.ALL)


@kernel
def _scan(seg, kind, engine, op, pipe_op, event, done):
    # done: the completion pass with the quiets' peers forgotten and without kernel_end (an
    # MTE or all quiet drains the pipe whatever peer it names). The MTE3 pipe waits are not
    # quiets: they drain it too, so they stay here. A drain clears every earlier write, so the
    # last write is undrained exactly when some write is.
    hit_write = np.full_like(done, -1)  # row numbers, in the dtype the completion pass uses
    hit_open = np.full_like(done, -1)
    for s in range(len(seg) - 1):
        mode_add = False
        opened = -1
        outst = -1  # last MTE3 write issued under add and not drained yet
        for i in range(seg[s], seg[s + 1]):
            k = kind[i]
            if k == K_BEGIN:
                mode_add = False
                outst = -1
            elif k == K_AMODE:
                if op[i] == OP_ADD:
                    mode_add = True
                    opened = i
                else:
                    if mode_add and outst >= 0 and not (0 <= done[outst] < i):
                        hit_write[i] = outst
                        hit_open[i] = opened
                    mode_add = False
                    outst = -1
            elif (k == K_PUT or k == K_GET) and mode_add and engine[i] == E_MTE:
                outst = i
            elif k == K_PIPE:
                if (pipe_op[i] == WAIT_FLAG and event[i] == EV_MTE3_S) or \
                        (pipe_op[i] == PIPE_BARRIER and (event[i] == EV_ALL or event[i] == EV_MTE3)):
                    outst = -1
    return hit_write, hit_open


class AtomicNoneUndrained(Rule):
    """Atomic mode set back to none before the MTE3 writes of the add window drained.

    What it does
        Per core, between `atomic_mode add` and the next `atomic_mode none`,
        tracks the MTE3 writes issued under add (MTE gets, which land in local
        memory, and MTE puts). A `pipe_sync wait_flag mte3_s`, a
        `pipe_barrier` of all or mte3, or an MTE/all quiet drains them. An
        `atomic_mode none` with a write still undrained is a hit. Default
        severity warning; set the option `severity = "error"` to make it one.

    Why it matters
        Atomic mode applies to writes as the MTE3 pipe performs them. A write
        still in the pipe when the mode flips lands as a plain store: it
        overwrites the sum instead of adding to it, and a contribution is
        lost. The catcoc reduce-scatter and allreduce epilogues drain with
        `SetFlag/WaitFlag<MTE3_S>` first; other real code (SHMEM's signal add,
        the asc-devkit example) goes straight to `SetAtomicNone`, which is why
        this is a warning by default.

    Example
        atomic_mode add; get mte peer=1 -> out[0:1024]; atomic_mode none
        -- insert set_flag/wait_flag mte3_s before atomic_mode none.

    Evidence
        The `atomic_mode none` (first), the last undrained write, and the
        `atomic_mode add` that opened the window.
    """

    code = "MT402"
    name = "atomic-none-undrained"
    family = Family.MISSING_DRAIN
    severity = Severity.WARNING
    summary = "Atomic mode switched to none while MTE3 writes issued under add are outstanding"
    options = {"severity": "warning"}
    requires = (Stage.HAPPENS_BEFORE,)

    def check(self, trace, ctx):
        if trace.n == 0 or not (trace["kind"] == K_AMODE).any():
            return  # no atomic mode, no window: nothing to drain (and no completion pass to compute)
        sev = Severity(ctx.option("severity", self.options["severity"]))
        done = ctx.stage(HappensBefore).completed_at(ends=False, peers=False)
        hit_write, hit_open = _scan(trace.segments, trace["kind"], trace["engine"], trace["op"], trace["pipe_op"],
                                    trace["event"], done)
        none = np.flatnonzero(hit_write >= 0)
        if not len(none):
            return
        write, opened = hit_write[none].astype(np.int64), hit_open[none].astype(np.int64)
        d = H.described(trace, none, ("rank", "core", "launch", "seq"))
        dw = H.described(trace, write, ("kind", "region", "offset", "peer", "local_region", "local_offset", "seq"))
        columns, tables = coded_columns((
            *d.items(), *((f"write_{name}", values) for name, values in dw.items()),
            ("add_seq", trace["seq"][opened].tolist()),
            ("rests_on", [((r, c),) for r, c in zip(d["rank"], d["core"])])))
        yield HitColumns(code=self.code, fields=Undrained, render=_message, columns=columns, tables=tables,
                         roles=("atomic none", "undrained write", "atomic add"),
                         rows=np.stack((none, write, opened), axis=1), key=H.row_keys(trace, none),
                         constant={"severity": None if sev is self.severity else sev})


class Undrained(NamedTuple):
    """An `atomic_mode none` reached while an MTE3 write issued under add may still be in flight."""

    rank: int
    core: int
    launch: int
    seq: int
    write_kind: str  # the last undrained write
    write_region: str | None
    write_offset: int | None
    write_peer: int | None
    write_local_region: str | None  # where a get lands
    write_local_offset: int | None
    write_seq: int
    add_seq: int  # the atomic_mode add that opened the window


def _message(f: Undrained) -> str:
    dest = f"{f.write_local_region}[{f.write_local_offset}]" if f.write_kind == "get" \
        else f"{f.write_region}[{f.write_offset}] on rank {f.write_peer}"
    return (f"rank {f.rank} core {f.core} launch {f.launch}: atomic_mode none at seq {f.seq} "
            f"while the MTE3 {f.write_kind} into {dest} at seq {f.write_seq} (issued under the add mode "
            f"of seq {f.add_seq}) may still be in flight; no wait_flag mte3_s or "
            f"pipe_barrier in between, so it can land as a plain store")
