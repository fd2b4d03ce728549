"""A hand-written execution recorder for the corpus: events as docs/trace-format.md says.

Nothing here knows moetrace's code (only ``json``): a protocol script drives
the ranks' cores in ONE real-time interleaving it chooses, and every call
records the event the core executed at that moment and applies its effect
to a word-level model of every rank's memory.  So the trace is causally
consistent by construction: a wait ends only when the word really holds a
satisfying value (checked here, or the script is wrong), a wait left open
never becomes satisfiable, and a write that lands late (no quiet) is a
pending effect the script lands at the moment it chooses.

Clocks: ts = the rank's clock offset + real time, so ts is monotone on a
core and comparable inside a rank, but the ranks' offsets differ by far more
than a whole run: ordering two ranks' events by ts is wrong about half the
time, as the contract warns.

Bare by default: manifest regions carry only name, role, elem_bytes and
length, and the optional event fields (site, epoch, words, dst_rank, slot)
are dropped unless the trace is ``annotated`` or keeps a field by name.
"""

from __future__ import annotations

import json
from pathlib import Path

FORMAT = "moetrace-trace/1"
OPTIONAL_EVENT_FIELDS = ("site", "epoch", "words", "dst_rank", "slot")
REGION_ANNOTATIONS = ("reset", "monotonic", "slot_words", "index")
# Clock origin of each rank: far apart and not ordered by rank (rank 3 starts near 0,
# rank 2 4.7 s in at 1 GHz); rank r >= 4 reuses rank r % 4's, shifted by 97 cycles per wrap.
CLOCK_OFFSETS = (3_000_000_000, 1_000_000_000 - 12_345, 4_700_000_000, 17)
PAYLOAD = "payload"  # the model's content of a payload word: the trace never compares it

CMP = {"eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "gt": lambda a, b: a > b,
       "ge": lambda a, b: a >= b, "lt": lambda a, b: a < b, "le": lambda a, b: a <= b}


class Inconsistent(AssertionError):
    """The script asked for something no real execution does (a wait ending on a wrong value)."""


class Wait:
    def __init__(self, rank, core, region, offset, cmp, value, words):
        self.rank, self.core, self.region, self.offset = rank, core, region, offset
        self.cmp, self.value, self.words = cmp, value, words
        self.open = True


class Trace:
    def __init__(self, *, ranks: int, cores: int, regions: list[dict], protocol: str | None = None,
                 params: dict | None = None, annotated: bool = False, keep: tuple[str, ...] = (),
                 sites: dict | None = None, names: list[str] | None = None, clocks: tuple | None = None):
        self.ranks, self.cores = ranks, cores
        # Per-rank clock origins, reused modulo their count (shifted by 97 cycles per wrap).
        self.clocks = clocks or CLOCK_OFFSETS
        self.regions = {r["name"]: r for r in regions}
        self.protocol, self.params, self.sites, self.names = protocol, params, sites, names
        self.annotated = annotated
        self.keep = set(keep)
        self.mem: dict[tuple[int, str, int], object] = {}
        self.events: list[dict] = []
        self.seq: dict[tuple[int, int], int] = {}
        self.launch_of = [0] * ranks
        self.now = 0
        self.waits: list[Wait] = []
        self.dropped_ranks: set[int] = set()

    # ---- manifest ----------------------------------------------------------
    def manifest(self) -> dict:
        doc: dict = {"format": FORMAT, "ranks": self.ranks, "cores": self.cores}
        if self.protocol:
            doc["protocol"] = self.protocol
        if self.params is not None:
            doc["params"] = self.params
        regions = []
        for r in self.regions.values():
            out = {k: r[k] for k in ("name", "role", "elem_bytes", "length")}
            if self.annotated:
                out.update({k: r[k] for k in REGION_ANNOTATIONS if k in r})
            regions.append(out)
        doc["regions"] = regions
        if self.sites and self.annotated:
            doc["sites"] = self.sites
        if self.names:
            doc["names"] = self.names
        return doc

    # ---- clock and envelope -------------------------------------------------
    def launch(self, g: int, ranks=None) -> None:
        for r in (range(self.ranks) if ranks is None else ranks):
            self.launch_of[r] = g

    def idle(self, cycles: int) -> None:
        """Real time passes (a core computing, a host sync)."""
        self.now += cycles

    def emit(self, r: int, c: int, kind: str, **fields) -> dict:
        # Real time: a few tens of cycles per operation, varied so no two ranks tick alike.
        self.now += 11 + (len(self.events) * 7 + r * 5 + c * 3) % 17
        seq = self.seq.get((r, c), 0)
        self.seq[(r, c)] = seq + 1
        n = len(self.clocks)
        ev = {"rank": r, "core": c, "seq": seq, "ts": self.clocks[r % n] + 97 * (r // n) + self.now,
              "launch": self.launch_of[r], "kind": kind}
        for k, v in fields.items():
            if v is None or (k in OPTIONAL_EVENT_FIELDS and not (self.annotated or k in self.keep)):
                continue
            ev[k] = v
        ev["_t"] = self.now  # real time, for cutting a prefix; never written
        self.events.append(ev)
        return ev

    # ---- memory model ---------------------------------------------------------
    def words(self, region: str, nbytes: int) -> int:
        return max(1, nbytes // self.regions[region]["elem_bytes"])

    def memset(self, owner: int, region: str, value) -> None:
        """The host filled the whole region before the first launch (aclrtMemset): nothing recorded."""
        for i in range(self.regions[region]["length"]):
            self.mem[(owner, region, i)] = value

    def read(self, owner: int, region: str, offset: int):
        return self.mem.get((owner, region, offset), 0)

    def _store(self, owner, region, offset, n, value, data, op="set"):
        for i in range(n):
            key = (owner, region, offset + i)
            v = data[i] if data is not None else (PAYLOAD if value is None else value)
            if op == "add":
                v = self.mem.get(key, 0) + v
            self.mem[key] = v

    def land(self, effects: list) -> None:
        """Apply the memory effect of writes that were issued earlier and land now."""
        for eff in effects:
            self._store(*eff)
        effects.clear()

    # ---- one-sided and local writes -----------------------------------------------
    def put(self, r, c, peer, region, offset, nbytes, value=None, *, data=None, engine="mte",
            land=True, site=None, epoch=None):
        """``value``: the word at ``offset`` (recorded); ``data``: every word's content (the model)."""
        self.emit(r, c, "put", engine=engine, peer=peer, region=region, offset=offset, nbytes=nbytes,
                  value=value, site=site, epoch=epoch)
        eff = [(peer, region, offset, self.words(region, nbytes), value, data)]
        if land:
            self.land(eff)
        return eff

    def put_signal(self, r, c, peer, region, offset, nbytes, sig_region, sig_offset, value, op="set",
                   engine="mte", site=None, epoch=None):
        self.emit(r, c, "put_signal", engine=engine, peer=peer, region=region, offset=offset,
                  nbytes=nbytes, sig_region=sig_region, sig_offset=sig_offset, op=op, value=value,
                  site=site, epoch=epoch)
        self._store(peer, region, offset, self.words(region, nbytes), None, None)
        self._store(peer, sig_region, sig_offset, 1, value, None, op)

    def signal(self, r, c, peer, region, offset, value, op="set", engine="mte", kind="signal",
               land=True, site=None, epoch=None):
        self.emit(r, c, kind, engine=engine, peer=peer, region=region, offset=offset, op=op, value=value,
                  site=site, epoch=epoch)
        eff = [(peer, region, offset, 1, value, None, op)]
        if land:
            self.land(eff)
        return eff

    def amo(self, r, c, peer, region, offset, value, op="add", engine="udma", land=True, site=None):
        return self.signal(r, c, peer, region, offset, value, op, engine, "amo", land, site)

    def write(self, r, c, region, offset, nbytes, value, site=None, epoch=None):
        self.emit(r, c, "write", region=region, offset=offset, nbytes=nbytes, value=value, site=site,
                  epoch=epoch)
        self._store(r, region, offset, self.words(region, nbytes), value, None)

    def get(self, r, c, peer, region, offset, nbytes, local_region, local_offset, engine="mte", site=None):
        self.emit(r, c, "get", engine=engine, peer=peer, region=region, offset=offset, nbytes=nbytes,
                  local_region=local_region, local_offset=local_offset, site=site)
        n = self.words(region, nbytes)
        self._store(r, local_region, local_offset, n, None,
                    [self.read(peer, region, offset + i) for i in range(n)])

    def quiet(self, r, c, engine="mte", peer=None):
        self.emit(r, c, "quiet", engine=engine, peer=peer)

    def fence(self, r, c, engine=None, peer=None):
        self.emit(r, c, "fence", engine=engine, peer=peer)

    # ---- waits ---------------------------------------------------------------------------
    def holds(self, w: Wait) -> bool:
        return all(CMP[w.cmp](self.read(w.rank, w.region, w.offset + i), w.value) for i in range(w.words))

    def wait_begin(self, r, c, region, offset, cmp, value, words=1, site=None, epoch=None) -> Wait:
        self.emit(r, c, "wait_begin", region=region, offset=offset, cmp=cmp, value=value,
                  words=words if words != 1 else None, site=site, epoch=epoch)
        w = Wait(r, c, region, offset, cmp, value, words)
        self.waits.append(w)
        return w

    def wait_end(self, w: Wait, timeout: bool = False, site=None, epoch=None) -> int:
        if self.holds(w) == timeout:
            raise Inconsistent(f"rank {w.rank} core {w.core} wait on {w.region}[{w.offset}] {w.cmp} "
                               f"{w.value}: word holds {self.read(w.rank, w.region, w.offset)}"
                               f"{' (a timeout must not hold)' if timeout else ''}")
        observed = self.read(w.rank, w.region, w.offset)
        if observed == PAYLOAD:
            raise Inconsistent(f"wait on payload word {w.region}[{w.offset}]")
        self.emit(w.rank, w.core, "wait_end", region=w.region, offset=w.offset, observed=observed,
                  outcome="timeout" if timeout else None, site=site, epoch=epoch)
        w.open = False
        return observed

    def wait(self, r, c, region, offset, cmp, value, words=1, site=None, epoch=None) -> int:
        return self.wait_end(self.wait_begin(r, c, region, offset, cmp, value, words, site, epoch),
                             site=site, epoch=epoch)

    # ---- everything else ------------------------------------------------------------------------
    def kernel(self, r, c, name, begin=True):
        self.emit(r, c, "kernel_begin" if begin else "kernel_end", name=name)

    def barrier(self, r, c, scope, begin=True, value=None):
        self.emit(r, c, "barrier_begin" if begin else "barrier_end", scope=scope, value=value)

    def route(self, r, c, token, topk, expert, dst_rank=None, slot=None, site=None):
        self.emit(r, c, "route", token=token, topk=topk, expert=expert, dst_rank=dst_rank, slot=slot, site=site)

    def count(self, r, c, peer, local_expert, value, capacity=None):
        self.emit(r, c, "count", peer=peer, local_expert=local_expert, value=value, capacity=capacity)

    def deliver(self, r, c, local_expert, src_rank, requested, delivered, capacity):
        self.emit(r, c, "deliver", local_expert=local_expert, src_rank=src_rank, requested=requested,
                  delivered=delivered, capacity=capacity)

    def atomic_mode(self, r, c, op, dtype=None):
        self.emit(r, c, "atomic_mode", op=op, dtype=dtype)

    def pipe_sync(self, r, c, op, event):
        self.emit(r, c, "pipe_sync", op=op, event=event)

    # ---- output ---------------------------------------------------------------------------------
    def finish(self) -> None:
        """A wait left open must never have become satisfiable: the waiter polls forever."""
        for w in self.waits:
            if w.open and self.holds(w):
                raise Inconsistent(f"rank {w.rank} core {w.core} left waiting on {w.region}[{w.offset}] "
                                   f"{w.cmp} {w.value}, which holds {self.read(w.rank, w.region, w.offset)}")

    def kept_events(self, cut_before: int | dict | None = None) -> list[dict]:
        """Events in (rank, core, seq) order, without dropped ranks or a cut prefix: ``cut_before``
        a real time (every core's dump starts there) or {(rank, core): seq} (that core's dump
        starts at its event ``seq``: each core's buffer flushed from its own point)."""
        def kept(e) -> bool:
            if cut_before is None:
                return True
            if isinstance(cut_before, dict):
                return e["seq"] >= cut_before.get((e["rank"], e["core"]), 0)
            return e["_t"] >= cut_before

        out = [e for e in self.events if e["rank"] not in self.dropped_ranks and kept(e)]
        out.sort(key=lambda e: (e["rank"], e["core"], e["seq"]))
        return [{k: v for k, v in e.items() if k != "_t"} for e in out]


def dump_json(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=False) + "\n"


def write_jsonl(trace: Trace, out: Path, cut_before: int | dict | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "manifest.json").write_text(dump_json(trace.manifest()))
    lines = [json.dumps(e, separators=(",", ":")) for e in trace.kept_events(cut_before)]
    (out / "events.jsonl").write_text("\n".join(lines) + "\n")
