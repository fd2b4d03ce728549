"""The operations a simulated core issues, each performing its effect and
returning the ``Part`` (the events) an instrumented kernel would record for it.

A call may stand for n operations (a batched loop): offsets are arrays of n and
the part has n rows. ``n`` on quiet / route-like calls repeats the event for an
interleaved loop body (put, quiet, put, quiet, ...); its effect happens once,
which is equivalent because nothing else runs between the ops of one step.
Sites are the caller's source line (the reference kernel's own code).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ingest.contract import Engine, Kind, Op, PipeEvent, PipeOp

from .memory import Pending, carried_words
from .recorder import Part


class Signal(NamedTuple):
    """The signal half of a put_signal: ``op`` ``value`` into ``region`` at ``offs``."""
    region: int
    offs: object
    op: int
    value: object


def _arr(x) -> np.ndarray:
    return np.atleast_1d(np.asarray(x, dtype=np.int64))


class Ops:
    """Mixed into Machine; ``self.heap`` and ``self.part`` come from there."""

    def _eb(self, region: int) -> int:
        return self.heap.specs[region].elem_bytes

    def _carried(self, engine, region: int, words: int, data):
        """The words of a put the engine moves (a UDMA request over its limit is cut), and their data."""
        moved = carried_words(int(engine), words, self._eb(region))
        if moved < words and isinstance(data, np.ndarray) and data.ndim == 2:
            data = data[:, :moved]
        return moved, data

    # ---- one-sided ---------------------------------------------------------
    def put(self, c, engine, peer, region, offs, data, words=1, src=None) -> Part:
        """put_nbi of ``words`` elements per offset; pending until a covering quiet.

        ``src`` = (local region, local offsets): the put reads its data from the core's own
        memory there when it lands (so a source reused before the quiet sends the new
        contents), and the event names it (``local_region`` / ``local_offset``). The value a
        put carries, where the event records one: ``put(...).recording(value=v)``.
        """
        offs = _arr(offs)
        sreg, soffs = (None, None) if src is None else (src[0], _arr(src[1]))
        moved, data = self._carried(engine, region, words, data)
        self.heap.enqueue(Pending(c, Kind.PUT, (int(engine), int(peer)), (region, offs, moved), data,
                                  src=None if src is None else (sreg, soffs)))
        cols = dict(engine=int(engine), peer=peer, region=region, offset=offs, nbytes=words * self._eb(region))
        if src is not None:
            cols["local_region"], cols["local_offset"] = sreg, soffs
        return self.part(Kind.PUT, len(offs), 3, **cols)

    def put_signal(self, c, engine, peer, region, offs, data, words, signal: Signal) -> Part:
        """Fused put-with-signal: the signal lands together with (after) its payload."""
        offs, sig_offs = _arr(offs), _arr(signal.offs)
        sig = (signal.region, sig_offs, int(signal.op), signal.value)
        moved, data = self._carried(engine, region, words, data)
        self.heap.enqueue(Pending(c, Kind.PUT_SIGNAL, (int(engine), int(peer)), (region, offs, moved), data,
                                  sig=sig))
        return self.part(Kind.PUT_SIGNAL, len(offs), 3, engine=int(engine), peer=peer, region=region,
                         offset=offs, nbytes=words * self._eb(region), sig_region=signal.region,
                         sig_offset=sig_offs, op=int(signal.op), value=signal.value)

    def get(self, c, engine, peer, region, offs, local_region, local_offs, words=1) -> Part:
        """get_nbi: read peer's region at landing, write locally under this core's atomic mode."""
        offs, local_offs = _arr(offs), _arr(local_offs)
        moved, _ = self._carried(engine, region, words, None)
        self.heap.enqueue(Pending(c, Kind.GET, (int(engine), int(peer)), (local_region, local_offs, moved), None,
                                  src=(region, offs)))
        return self.part(Kind.GET, len(offs), 3, engine=int(engine), peer=peer, region=region, offset=offs,
                         nbytes=words * self._eb(region), local_region=local_region, local_offset=local_offs)

    def signal(self, c, engine, peer, region, offs, op, value) -> Part:
        """MTE signal set/add: a scalar store visible at once (it can overtake pending payload)."""
        offs = _arr(offs)
        self.heap.store(int(peer), region, offs, 1, value, int(op) == Op.ADD)
        return self.part(Kind.SIGNAL, len(offs), 3, engine=int(engine), peer=peer, region=region,
                         offset=offs, op=int(op), value=value)

    def amo(self, c, engine, peer, region, offs, op, value) -> Part:
        """Non-fetching remote atomic (UDMA / RoCE): pending until that engine's quiet."""
        offs = _arr(offs)
        data = value if np.isscalar(value) else np.asarray(value).reshape(-1, 1)
        self.heap.enqueue(Pending(c, Kind.AMO, (int(engine), int(peer)), (region, offs, 1), data))
        return self.part(Kind.AMO, len(offs), 3, engine=int(engine), peer=peer, region=region,
                         offset=offs, op=int(op), value=value)

    def quiet(self, c, engine=Engine.MTE, peer=None, n=1) -> Part:
        self.heap.complete(c, int(engine), peer)
        cols = dict(engine=int(engine))
        if peer is not None:
            cols["peer"] = peer
        return self.part(Kind.QUIET, n, 3, **cols)

    def fence(self, c, engine=None, peer=None, n=1) -> Part:
        c.fence += 1
        cols = {}
        if engine is not None:
            cols["engine"] = int(engine)
        if peer is not None:
            cols["peer"] = peer
        return self.part(Kind.FENCE, n, 3, **cols)

    # ---- local -------------------------------------------------------------
    def write(self, c, region, offs, words, value) -> Part:
        """A scalar / DataCopy write to the core's own GM: under atomic add it accumulates."""
        offs = _arr(offs)
        self.heap.store(c.rank, region, offs, words, value, c.atomic == Op.ADD)
        v = value if np.isscalar(value) else np.asarray(value).reshape(len(offs), -1)[:, 0]
        return self.part(Kind.WRITE, len(offs), 3, region=region, offset=offs,
                         nbytes=words * self._eb(region), value=v)

    def atomic_mode(self, c, op, dtype=None) -> Part:
        c.atomic = int(op)
        cols = dict(op=int(op))
        if dtype is not None:
            cols["dtype"] = int(dtype)
        return self.part(Kind.ATOMIC_MODE, 1, 3, **cols)

    def pipe_sync(self, c, op, event) -> Part:
        # Waiting MTE3 -> S / a barrier of the MTE3 (or every) pipe drains the MTE writes.
        if (op == PipeOp.WAIT_FLAG and event in (PipeEvent.MTE3_S, PipeEvent.MTE3_MTE2)) or \
                (op == PipeOp.PIPE_BARRIER and event in (PipeEvent.MTE3, PipeEvent.ALL)):
            self.heap.complete(c, Engine.MTE)
        return self.part(Kind.PIPE_SYNC, 1, 3, pipe_op=int(op), event=int(event))

    def kernel(self, c, name: str, begin: bool) -> Part:
        return self.part(Kind.KERNEL_BEGIN if begin else Kind.KERNEL_END, 1, 3, name=self.name_id(name))

    def info(self, kind, n, **cols) -> Part:
        """route / count / deliver: what the kernel decided, no memory effect."""
        return self.part(kind, n, 3, **cols)
