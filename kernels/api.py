"""``simulate(protocol, params, faults, seed, out)``: run a reference kernel, write its trace.

Output layout: ``OUT/dataset/`` is the moetrace dataset (what the analyzer reads:
manifest.json, ingest.json, events/); ``OUT/truth.json`` beside it is what the
simulator knows: faults and places, families, the outcome, latent hazards.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ingest.contract import Cmp

from .base import ROUTE_LAYOUTS, Params
from .faults import FAULTS, place
from .sim.machine import Barrier, Machine, Wait

DATASET_DIR = "dataset"
TRUTH_FILE = "truth.json"


_MODULES = (("classic", "Classic"), ("doubleplane", "Doubleplane"), ("fused", "Fused"),
            ("generation", "Generation"), ("reduce_scatter", "ReduceScatter"),
            ("sdma_fallback", "SdmaFallback"), ("udma_atomic", "UdmaAtomic"),
            ("reduce_scatter_staged", "ReduceScatterStaged"), ("unified_atomic", "UnifiedAtomic"),
            ("udma_bulk", "UdmaBulk"), ("deepep_normal", "DeepepNormal"), ("deepep_ll", "DeepepLL"))


def _protocols() -> dict:
    import importlib
    out = {}
    for mod, cls in _MODULES:
        try:
            k = getattr(importlib.import_module(f"kernels.{mod}"), cls)
        except ModuleNotFoundError as e:  # a kernel still being written
            if e.name != f"kernels.{mod}":
                raise
            continue
        out[k.name] = k
    return out


class _Registry(dict):
    """protocol name -> kernel class (with .doc and .faults), loaded on first use."""

    def _load(self):
        if not super().__len__():
            self.update(_protocols())

    def __getitem__(self, k):
        self._load()
        return super().__getitem__(k)

    def __iter__(self):
        self._load()
        return super().__iter__()

    def __len__(self):
        self._load()
        return super().__len__()

    def __contains__(self, k):
        self._load()
        return super().__contains__(k)

    def items(self):
        self._load()
        return super().items()

    def keys(self):
        self._load()
        return super().keys()


PROTOCOLS = _Registry()


@dataclass
class Truth:
    protocol: str
    params: dict
    seed: int
    faults: list = field(default_factory=list)
    outcome: dict = field(default_factory=dict)
    events: int = 0
    lost: int = 0
    seconds: float = 0.0
    dataset: str | None = None

    @property
    def status(self) -> str:
        return self.outcome.get("status", "")

    def to_json(self) -> dict:
        return {"format": "moetrace-truth/1", "protocol": self.protocol, "params": self.params,
                "seed": self.seed, "faults": self.faults, "outcome": self.outcome, "events": self.events,
                "lost": self.lost, "dataset": self.dataset}

    def summary(self) -> str:
        o = self.outcome
        s = f"{self.protocol}: {o['status']}"
        if o["status"] == "hung":
            s += f" ({len(o['stuck'])} stuck cores, e.g. " + ", ".join(
                f"rank {x['rank']} core {x['core']} {x['waiting']}" for x in o["stuck"][:2]) + ")"
        elif o.get("wrong_rows"):
            s += f" ({o['wrong_count']} wrong rows)"
        for f in self.faults:
            s += f"; fault {f['name']} [{f['family']}] at {f['place']}: " + (
                "latent on this interleaving" if f["latent"] else "manifested")
        return s + f"; {self.events} events"


@dataclass(frozen=True)
class Recording:
    """How a run is recorded: ``ring_capacity`` events per core's ring (None: unbounded),
    ``barrier_layout`` how cross-rank barriers are recorded (``kernels.sim.machine.BARRIER_LAYOUTS``),
    ``route_layout`` where routes are (``kernels.base.ROUTE_LAYOUTS``)."""

    ring_capacity: int | None = None
    barrier_layout: str = "all"
    route_layout: str = "send"


def simulate(protocol: str, params: Params | None = None, faults=(), seed: int = 0, out=None,
             at: dict | list | None = None, recording: Recording = Recording()) -> Truth:
    """Run one protocol on the simulated machine; write OUT/dataset + OUT/truth.json if out is given."""
    ring_capacity, barrier_layout, route_layout = (recording.ring_capacity, recording.barrier_layout,
                                                   recording.route_layout)
    t0 = time.perf_counter()
    params = params or Params()
    if protocol not in PROTOCOLS:
        raise ValueError(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
    cls = PROTOCOLS[protocol]
    faults = list(faults)
    need = max([FAULTS[f].min_rounds for f in faults if f in FAULTS] + [params.rounds])
    if need > params.rounds:  # a flag left unreset only bites in a next round
        params = params.with_(rounds=need)
    params = cls.adjust(params, faults) if hasattr(cls, "adjust") else params
    plan = place(faults, at, params, seed, cls.faults, cls.fault_bounds(params))
    kern = cls(params, plan, seed)
    if route_layout not in ROUTE_LAYOUTS:
        raise ValueError(f"unknown route layout {route_layout!r}; expected one of {', '.join(ROUTE_LAYOUTS)}")
    kern.route_layout = route_layout
    m = Machine(params.ranks, params.cores, kern.regions(), seed, ring_capacity, barrier_layout=barrier_layout)
    kern.spawn(m)
    res = m.run()
    truth = Truth(protocol, params.to_json(), seed, events=m.events)
    truth.outcome = _outcome(kern, m, res)
    for f in plan.faults:
        hit, attributed = _manifested(kern, f, truth.outcome)
        truth.faults.append({"name": f.name, "family": f.spec.family, "place": f.place,
                             "consequence": f.spec.consequence, "manifested": hit, "latent": not hit,
                             "executed": bool(f.fired), "attributed": attributed})
    truth.seconds = time.perf_counter() - t0
    if out is not None:
        truth.lost = write(m, kern, truth, Path(out))
    return truth


def _manifested(kern, f, outcome) -> tuple[bool, bool]:
    """(manifested, attributed) for one fault.

    Attributed: the kernel's ``manifested(fault, outcome)`` traces the bad outcome back
    to the fault's place (the wrong rows are the tokens it clamped / left unquieted, the
    stuck wait is the slot it never wrote). Fallback, for kernels that cannot tell (their
    fault code reads the plan's places directly, so "executed" is not known either): the
    whole run's outcome, i.e. every fault of a run gone bad is manifested.
    """
    judge = getattr(kern, "manifested", None)
    if judge is not None:
        return bool(judge(f, outcome)), True
    return outcome["status"] != "completed", False


def _outcome(kern, m, res) -> dict:
    heap = m.heap
    if res.hung:
        stuck = []
        for rank, core, req in res.stuck:
            d = {"rank": rank, "core": core}
            if isinstance(req, Wait):
                off = int(req.offsets[min(req.pos + req.partial // 2, len(req.offsets) - 1)])
                spec = heap.specs[req.region]
                d.update(waiting="wait", region=spec.name, offset=off, slot=off // spec.slot_words,
                         cmp=Cmp(req.cmp).wire, value=_scalar(req.values(slice(req.pos, req.pos + 1))),
                         observed=int(heap.mem[req.region][rank][off]))
            elif isinstance(req, Barrier):
                d.update(waiting="barrier" if req.scope is not None else "host-sync")
            else:
                d.update(waiting="other")
            stuck.append(d)
        return {"status": "hung", "stuck": stuck, "pending_ops": heap.pending_ops()}
    aborted = sorted(getattr(kern, "aborted", ()))
    if aborted:  # a kernel_abort trapped these (round, rank)s: no output, though nobody waited on them
        return {"status": "aborted", "aborted": [{"round": g, "rank": r} for g, r in aborted]}
    wrong = []
    for key in sorted(kern.want):
        want = kern.want[key]
        got = kern.got.get(key)
        if got is None:
            continue
        rows = np.flatnonzero((got != want).reshape(len(want), -1).any(axis=1))
        wrong += [{"round": key[0], "rank": key[1], "row": int(i)} for i in rows]
    if not wrong:
        return {"status": "completed"}
    status = "lost_accumulation" if kern.output_kind == "sum" else "wrong_output"
    return {"status": status, "wrong_count": len(wrong), "wrong_rows": wrong[:1000]}


def _scalar(v) -> int:
    return int(v[0]) if isinstance(v, np.ndarray) else int(v)


def write(m: Machine, kern, truth: Truth, out: Path) -> int:
    """Write the dataset through the ingest writer and truth.json beside it; returns rows lost."""
    from ingest.contract import FORMAT
    from ingest.ingest_report import SourceReport
    from ingest.manifest import Manifest
    from ingest.writer import DatasetWriter

    regions = tuple(s.region(i) for i, s in enumerate(m.heap.specs))
    manifest = Manifest.from_json({"format": FORMAT, "ranks": m.P, "cores": m.C, "protocol": kern.name,
                                   "params": kern.manifest_params(),
                                   "regions": [r.to_json() for r in regions],
                                   "sites": {str(k): v for k, v in m.sites.text.items()},
                                   "names": list(m.names),
                                   # platform / per-peer transport, where the kernel knows them
                                   **(kern.manifest_extra() if hasattr(kern, "manifest_extra") else {})})
    out.mkdir(parents=True, exist_ok=True)
    ds = out / DATASET_DIR
    w = DatasetWriter(ds, manifest, overwrite=True)
    from .sim.recorder import build_table
    lost_total = 0
    for r in range(m.P):  # one source per rank keeps memory per table bounded
        logs = [(c.rank, c.core, c.log) for c in m.cores[r * m.C:(r + 1) * m.C]]
        table, lost = build_table(logs, m.names)
        src = SourceReport(f"sim:rank{r}", "simulator", events_in=table.num_rows + sum(lost.values()))
        w.add(table, src, lost=lost)
        lost_total += sum(lost.values())
    w.commit()
    truth.dataset = DATASET_DIR
    (out / TRUTH_FILE).write_text(json.dumps(truth.to_json(), indent=2) + "\n")
    return lost_total
