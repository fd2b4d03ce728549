"""Binary ring dumps for the fuzzer: generated events encoded by ingest.ring_encode, then damaged.

The encoder only writes what a device could (codes, ids, slot-sized values);
the damage is what a dying job or a bad copy leaves: any header field or
record slot set to an edge value, flipped bytes, a torn end, rings repeated.
"""

from __future__ import annotations

import numpy as np

from ingest.manifest import Manifest
from ingest.ring_layout import HEADER_DTYPE, HEADER_SIZE, RECORD_DTYPE, RECORD_SIZE, RECORD_SLOTS
from ingest.rings import encode_rings

from . import gen
from _readers import ring_columns


_ENCODE_ERRORS = (ValueError, KeyError, TypeError, OverflowError, AttributeError)


def _encodes(evs: list[dict], m: Manifest) -> bool:
    try:
        encode_rings(ring_columns(evs, m), m, renumber=True)
    except _ENCODE_ERRORS:
        return False
    return True


def _typed(evs: list[dict]) -> list[dict]:
    return [ev for ev in evs if all(type(v) in (int, str) for v in ev.values())]


def _encodable(evs: list[dict], m: Manifest, whole: bool = True) -> list[dict]:
    """The events the encoder can lay out alone: known names, ranks and cores of the manifest, slot-sized values.

    Every check of the encoder is per event, so a group that encodes together
    encodes event by event: halves are tried before single events (about half
    the inputs encode whole, in one call instead of one per event). ``whole``
    False: the events (``_typed``) are known not to encode together.
    """
    def keep(group: list[dict], whole: bool = True) -> list[dict]:
        if not group:
            return []
        if whole and _encodes(group, m):
            return group
        if len(group) == 1:
            return []
        mid = len(group) // 2
        return keep(group[:mid]) + keep(group[mid:])

    return keep(evs, whole)


def _edge(c: gen.Chooser, dtype: np.dtype) -> int:
    if dtype.kind not in "iu":
        return 0
    info = np.iinfo(dtype)
    return c.pick([int(info.min), int(info.max), 0, 1, int(info.max) // 2 + 1, int(info.min) + 1,
                   2**31 if info.bits > 32 else int(info.max), 2**40 + 1 if info.bits > 32 else 7])


def ring_dump(c: gen.Chooser, m: Manifest) -> bytes:
    doc = m.to_json()
    evs = _typed(gen.events(c, doc, c.int(0, 10)))
    cap = None if c.chance(70) else c.int(1, 4)
    full = c.chance(20)

    def encode(evs):
        return bytearray(encode_rings(ring_columns(evs, m), m, capacity=cap, renumber=True, full=full))

    # All events encoding together is the common case, and then each encodes alone
    # (a capacity > 0 refuses nothing): one call makes the dump and answers _encodable.
    try:
        data = encode(evs) if evs else None
    except _ENCODE_ERRORS:
        data = None
    if data is None:
        evs = _encodable(evs, m, whole=False) if evs else []
        if not evs:
            evs = [{"rank": 0, "core": 0, "seq": 0, "ts": 1, "launch": 0, "kind": "fence"}]
        try:
            data = encode(evs)
        except (ValueError, KeyError, TypeError, OverflowError):  # events that encode alone may not together
            data = encode(evs[:1])
    if c.chance(10):
        data += data[: c.int(0, len(data))]  # a second copy of (part of) the rings
    for _ in range(c.int(0, 2) if c.chance(60) else 0):
        where = c.pick(["header", "record", "bytes"])
        if where == "header" and len(data) >= HEADER_SIZE:
            h = np.frombuffer(data, HEADER_DTYPE, count=1)
            field = c.pick([n for n in HEADER_DTYPE.names if n not in ("magic", "reserved")])
            h[field] = np.array(_edge(c, HEADER_DTYPE[field]) if c.chance(70) else c.int(0, 9)).astype(
                HEADER_DTYPE[field], casting="unsafe")
        elif where == "record" and len(data) >= HEADER_SIZE + RECORD_SIZE:
            n = (len(data) - HEADER_SIZE) // RECORD_SIZE
            rec = np.frombuffer(data, RECORD_DTYPE, count=1, offset=HEADER_SIZE + c.int(0, n - 1) * RECORD_SIZE)
            slot = c.pick([s.name for s in RECORD_SLOTS if s.name != "pad"])
            rec[slot] = np.array(_edge(c, RECORD_DTYPE[slot])).astype(RECORD_DTYPE[slot], casting="unsafe")
        else:
            data = bytearray(gen.mutate_bytes(c, bytes(data)))
    return bytes(data)
