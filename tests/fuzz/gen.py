"""Trace inputs for the fuzzer, generated from the contract (FIELDS, COLUMN, ALLOWED, value_range).

One generator, two drivers: ``Chooser`` takes its choices from a
``random.Random``: a seeded one in bench/fuzz_campaign.py (fast, millions of
inputs), hypothesis' ``st.randoms()`` in tests/fuzz (replayable; uniform
choices like the campaign's, where hypothesis' own integer draws would make
nearly every input a broken one). Mostly
valid values with the contract's edges (each column's range ends, its null
sentinel, the address bound, ranks + 1), and now and then a value of the
wrong type, a field too many or too few, or bytes mangled after encoding.
"""

from __future__ import annotations

import json
import random

from ingest.contract import ALLOWED, COLUMN, COMMON_OPTIONAL, ENVELOPE, FIELDS, Kind, Role, json_name
from ingest.value_ranges import ADDRESS_LIMIT, column_range
from ingest.manifest import SLOT_INDEX


class Chooser:
    """Choices from a seeded random.Random."""

    def __init__(self, rng: random.Random):
        self.rng = rng

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def pick(self, seq):
        return seq[self.rng.randrange(len(seq))]

    def chance(self, percent: int) -> bool:
        return self.rng.randrange(100) < percent


def _edges(lo: int, hi: int) -> list[int]:
    return [lo, lo + 1, hi, hi - 1, lo - 1, hi + 1, 0, -1, 1]


WEIRD = [None, True, 1.5, "7", [], {}, 2**63, -(2**63), -(2**63) - 1, 2**64 + 3, ADDRESS_LIMIT + 1,
         -(2**31), -(2**15), 2**62, "\ud83d", "\ufeff"]


def manifest(c: Chooser) -> dict:
    """A manifest: usually valid, with edge values; sometimes one value made wrong."""
    ranks = c.pick([1, 2, 3, 4, 64]) if c.chance(95) else c.pick([0, -1, 32768, 2**63])
    cores = c.pick([1, 2, 3]) if c.chance(95) else c.pick([0, 40000])
    regions = []
    for i in range(c.int(1, 4)):
        r = {"name": c.pick(["payload", "flags", "counts", "meta", "out"]) + (str(i) if i else ""),
             "role": c.pick([m.wire for m in Role]), "elem_bytes": c.pick([1, 2, 4, 8]),
             "length": c.pick([0, 1, 8, 64, 1024, 1 << 20, ADDRESS_LIMIT])}
        if c.chance(40):
            r["reset"] = c.pick([0, -1, 1, 2**63 - 1])
        if c.chance(20):
            r["monotonic"] = True
        if c.chance(30):
            r["slot_words"] = c.pick([1, 8, 16])
        if c.chance(30):
            r["index"] = c.pick(list(SLOT_INDEX))
        regions.append(r)
    doc = {"format": "moetrace-trace/1", "ranks": ranks, "cores": cores, "protocol": "fuzz", "regions": regions,
           "params": {"tokens": c.pick([1, 4, 2**31]), "topk": c.pick([1, 2, 8]),
                      "local_experts": c.pick([1, 2, 4]), "capacity": c.pick([0, 4, 2**63 - 1])},
           "sites": {"1": "k.cpp:10", str(c.pick([2, 2**31 - 1, -5])): "k.cpp:20"},
           "names": ["dispatch", "combine"]}
    if c.chance(30):
        doc["params"]["num_experts"] = c.pick([0, 8, 2**63 - 1])
    if c.chance(20):
        doc["params"]["expert_sentinel"] = c.pick([-1, 2**31 - 1, None])
    if c.chance(8):  # one value made wrong: the manifest must be rejected with its JSON path, or work
        target = c.pick(["top", "region", "params", "sites"])
        value = c.pick(WEIRD)
        if target == "top":
            doc[c.pick(["ranks", "cores", "regions", "params", "protocol", "names", "format"])] = value
        elif target == "region":
            regions[0][c.pick(["name", "role", "elem_bytes", "length", "reset", "slot_words", "index"])] = value
        elif target == "params":
            doc["params"][c.pick(["capacity", "topk", "tokens", "deep"])] = value
        else:
            doc["sites"][c.pick(["x", str(2**40), "3"])] = value
    return doc


def _value(c: Chooser, kind: Kind, col: str, doc: dict, clean: bool):
    spec = COLUMN[col]
    if not clean and c.chance(3):
        return c.pick(WEIRD)
    if spec.enum is not None:
        allowed = ALLOWED.get((kind, col), frozenset(spec.enum))
        names = [spec.enum(a).wire for a in sorted(allowed)]
        return c.pick(names) if clean or c.chance(97) else c.pick([m.wire for m in spec.enum] + ["bogus", 0])
    if spec.ref == "region":
        regions = doc.get("regions") if isinstance(doc.get("regions"), list) else []
        names = [r.get("name") for r in regions if isinstance(r, dict)] or ["none"]
        return c.pick(names) if clean or c.chance(97) else "nowhere"
    if col == "name":
        names = doc.get("names") if isinstance(doc.get("names"), list) and doc["names"] else ["k"]
        # Text a kernel's name may carry, lone surrogate escapes included (json.dumps writes them as \\udXXX).
        return c.pick(names) if c.chance(80) else c.pick(["", "\u00e9t\u00e9", "\U0001f600", "\ud83d", "a\udc80b",
                                                          "\ud83d\ude00", "\x00", "\u2028"])
    ranks = doc.get("ranks") if isinstance(doc.get("ranks"), int) else 2
    cores = doc.get("cores") if isinstance(doc.get("cores"), int) else 1
    if col in ("peer", "dst_rank", "src_rank"):
        if clean:  # the peer of a one-sided op is a rank; a computed rank may be anything that fits int16
            if kind in (Kind.ROUTE, Kind.COUNT, Kind.DELIVER) and c.chance(30):
                return c.pick([-1, ranks, ranks + 5, 32767, -32767])
            return c.int(0, max(ranks - 1, 0))
        return c.int(0, max(ranks - 1, 0)) if c.chance(85) else c.pick(_edges(0, ranks - 1) + [2**15, 9])
    if col == "core":
        return c.int(0, max(cores - 1, 0))
    bits = spec.type.bit_width
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if c.chance(70):
        return c.int(0, min(hi, 1 << 12))
    if clean:  # the edges of the column's data range
        lo, hi = column_range(col)
        return c.pick([lo, hi, lo + 1, hi - 1, 0, -1])
    return c.pick(_edges(lo, hi) + ([ADDRESS_LIMIT, -ADDRESS_LIMIT, ADDRESS_LIMIT + 1, 2**62]
                                    if col in ("offset", "local_offset", "sig_offset", "nbytes") else []))


def events(c: Chooser, doc: dict, n: int | None = None) -> list[dict]:
    """Events of random kinds over the manifest's ranks and cores; seq mostly strictly increasing."""
    ranks = doc.get("ranks") if isinstance(doc.get("ranks"), int) and doc["ranks"] > 0 else 2
    cores = doc.get("cores") if isinstance(doc.get("cores"), int) and doc["cores"] > 0 else 1
    out, nxt = [], {}
    kinds = list(FIELDS)
    clean = c.chance(50)  # a trace of valid events only (edge values included), so later damage shows
    for _ in range(n if n is not None else c.int(0, 12)):
        kind = c.pick(kinds)
        rank, core = c.int(0, min(ranks, 8) - 1), c.int(0, min(cores, 4) - 1)
        if not clean and c.chance(3):
            rank = c.pick([ranks, -1, 2**15])
        seq = nxt.get((rank, core), c.pick([0, 0, 5, 2**62]))
        nxt[(rank, core)] = seq + (c.pick([1, 1, 1, 2, 7]) if clean or c.chance(97) else c.pick([0, -1]))
        ts_edges, launch_edges = _edges(*column_range("ts")), _edges(*column_range("launch"))
        if not clean:
            ts_edges, launch_edges = _edges(-(2**63), 2**63 - 1), _edges(-(2**31), 2**31 - 1)
        ev = {"rank": rank, "core": core, "seq": seq, "ts": c.int(0, 1 << 20) if c.chance(95) else
              c.pick(ts_edges), "launch": c.int(0, 3) if c.chance(95) else c.pick(launch_edges), "kind": kind.wire}
        req, opt = FIELDS[kind]
        for col in req:
            if clean or c.chance(98):
                ev[json_name(kind, col)] = _value(c, kind, col, doc, clean)
        for col in opt + COMMON_OPTIONAL:
            if c.chance(30):
                ev[json_name(kind, col)] = _value(c, kind, col, doc, clean)
        if not clean and c.chance(2):
            ev[c.pick([k for k in COLUMN if k not in ENVELOPE] + ["bogus"])] = c.pick([1, None, "x"])
        out.append(ev)
    return out


def jsonl(c: Chooser, evs: list[dict]) -> bytes:
    """Events as JSON lines, now and then with a line or the bytes mangled."""
    lines = [json.dumps(e) for e in evs]
    if lines and c.chance(15):
        i = c.int(0, len(lines) - 1)
        lines[i] = c.pick([
            "", "   ", "[" * c.pick([10, 3000, 100000]) + "]" * 10, lines[i][: c.int(0, len(lines[i]))],
            lines[i].replace('"k"', '"\\ud83d"').replace('"dispatch"', '"\\udc80x"'), lines[i] + lines[i],
            "\ufeff" + lines[i], lines[i].replace(":", ": ", 1), "null", '"text"', "1e400", "{}",
            lines[i].replace("}", ', "kind": null}'),
        ])
    data = ("\n".join(lines) + ("\n" if c.chance(90) else "")).encode("utf-8", "surrogatepass")
    if c.chance(5):
        data = b"\xef\xbb\xbf" + data
    if data and c.chance(8):
        data = mutate_bytes(c, data)
    return data


def mutate_bytes(c: Chooser, data: bytes, start: int = 0) -> bytes:
    """A few byte-level mutations past ``start``: flips, cuts, inserts, copies."""
    buf = bytearray(data)
    for _ in range(c.int(1, 4)):
        if len(buf) <= start:
            break
        i = c.int(start, len(buf) - 1)
        op = c.pick(["flip", "set", "cut", "insert", "dup", "zero"])
        if op == "flip":
            buf[i] ^= 1 << c.int(0, 7)
        elif op == "set":
            buf[i] = c.pick([0, 0xFF, 0x7F, 0x80, ord("{"), ord('"'), ord("\n"), 0xC3])
        elif op == "cut":
            del buf[i:]
        elif op == "insert":
            buf[i:i] = c.pick([b"\n", b"\xff", b"\x00", b"\xed\xa0\xbd", b"{}", b"\xef\xbb\xbf"])
        elif op == "dup":
            j = c.int(i, len(buf))
            buf[j:j] = buf[i:j][:256]
        else:
            j = min(len(buf), i + c.int(1, 16))
            buf[i:j] = bytes(j - i)
    return bytes(buf)


def compress(c: Chooser, data: bytes) -> tuple[bytes, str]:
    """(bytes, file suffix): plain, gzip or zstd, the compressed stream sometimes damaged."""
    how = c.pick(["plain", "plain", "gzip", "zstd"])
    if how == "plain":
        return data, ".jsonl"
    if how == "gzip":
        import gzip

        blob = gzip.compress(data, compresslevel=1)
    else:
        import pyarrow as pa

        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as f:
            f.write(data)
        blob = sink.getvalue().to_pybytes()
    if c.chance(25):
        blob = mutate_bytes(c, blob, start=min(4, len(blob)))
    return blob, ".jsonl.gz" if how == "gzip" else ".jsonl.zst"
