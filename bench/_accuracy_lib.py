"""The accuracy matrix: which runs, how a finding is matched to an injected fault.

Shared by ``bench/accuracy.py`` (the report) and ``tests/test_accuracy.py``
(the same matrix as tests). Generic over ``kernels.PROTOCOLS`` and each kernel
class's ``.faults``: a kernel or fault added later joins the matrix by itself.

A run is (protocol, fault or None for a clean run, seed, routing) on the small
``SHAPE`` below. Each is simulated into a temporary directory, its dataset
diagnosed in-process with the default configuration, and scored against
``truth.json``.

Matching an injected fault (truth.json ``faults[i]``) to a finding. The finding
must be a root cause (no ``caused_by``) at error or warning (a note does not
fail CI, so it is not a diagnosis), of the fault's family, and at its place,
key by key of ``place`` (keys a fault does not have are not checked):

- ``rank``: the finding's location rank equals it. The place is where the bug
  is (the producer that sent to the wrong slot, the rank whose route carried the
  bad expert id, the consumer that skipped its reset), so no evidence fallback.
- ``core``: the location core equals it, or one of the finding's evidence
  events is on (rank, core). A defect between two cores (two cores writing one
  output chunk) is reported at one of them, and the trace cannot say which of
  the two was given the wrong chunk.
- ``round``: the location launch is unknown, or lies in
  [round, round + min_rounds - 1]: a flag left unreset in round g is seen at
  the end of g (flag-not-reset) or by the wait of g+1 (stale-wait).
- ``token`` / ``topk`` (the slot of a route): the finding's ``extra`` or one of
  its evidence events names that token (and top-k index).

A fault whose evidence lies only in optional fields (``FaultSpec.evidence_in``: a
put's source) is not required in the bare mode, which strips them: that trace
cannot show it (``Scored.blind``; scored skipped unless something found it).

A fault truth.json marks ``latent`` (the run completed correctly on that
interleaving) is scored found-latent / missed-latent. It is still required
(``Scored.required``: tests/test_accuracy.py fails on its miss) when it is a
hazard the trace shows whether or not it bit, that is a fault of
``HAZARD_FAMILIES`` whose faulty path ran (truth.json ``executed``): a
missing or wrong-engine quiet, a flag left unreset at the end of its round,
an == on a generation, an invalid expert id on a route are in the events
themselves, which is what linting a kernel in CI relies on. A latent fault of
another family (a hang that did not bite, a skew that clamped nothing) or
one whose path never ran is scored skipped-latent unless something found it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from kernels.base import ROUTE_LAYOUTS
from kernels.sim.machine import BARRIER_LAYOUTS

SEEDS = 5
ROUTINGS = ("uniform", "skewed")
# 4 ranks x 2 cores keeps a core serving two peers (strided loops) and a run
# near 0.15 s; 8 tokens x top-2 over 8 experts still gives skew something to do.
SHAPE = dict(ranks=4, cores=2, tokens=8, topk=2, hidden=4, local_experts=2)
REPORTED = ("error", "warning")
# How the simulated trace is handed to the diagnosis: as the simulator wrote it (every optional
# annotation), or bare (only what docs/trace-format.md requires: see ``make_bare``).
MODES = ("full", "bare")
LAYOUTS = BARRIER_LAYOUTS  # every way of recording a cross-rank barrier is in the matrix
ROUTES = ROUTE_LAYOUTS  # and every place a kernel may record its routes
# data-race: the unordered pair is in the events whether or not the read lost the race;
# engine-limit: the unsupported operation is in the events (and aborts, where it does).
HAZARD_FAMILIES = ("missing-drain", "stale-flag", "invalid-expert-id", "data-race", "engine-limit")


@dataclass(frozen=True)
class Case:
    protocol: str
    fault: str | None  # None: a clean run
    seed: int
    routing: str
    mode: str = "full"  # one of MODES
    layout: str = "all"  # how cross-rank barriers are recorded: kernels.sim.machine.BARRIER_LAYOUTS
    routes: str = "send"  # where routes are recorded: kernels.base.ROUTE_LAYOUTS

    @property
    def id(self) -> str:
        tail = ("" if self.mode == "full" else f"-{self.mode}") + ("" if self.layout == "all" else f"-{self.layout}") \
            + ("" if self.routes == "send" else f"-routes-at-{self.routes}")
        return f"{self.protocol}-{self.fault or 'clean'}-s{self.seed}-{self.routing}{tail}"


@dataclass
class Scored:
    """One injected fault of one run, and what the diagnosis said."""

    name: str
    family: str
    place: dict
    latent: bool
    found: bool
    matched: list = field(default_factory=list)  # ids of the findings that match it
    executed: bool = True  # the kernel took the faulty path (truth.json); False: nothing of it in the trace
    # The optional fields its evidence is in were stripped (bare mode): the trace cannot show it.
    blind: bool = False

    @property
    def required(self) -> bool:
        """Must be found: it manifested, or it is a hazard the trace shows anyway (module doc)."""
        if self.blind:
            return False
        return not self.latent or (self.family in HAZARD_FAMILIES and self.executed)

    @property
    def outcome(self) -> str:
        if self.blind and not self.found:
            return "skipped-blind"
        if self.latent and not self.found and not self.required:
            return "skipped-latent"
        return ("found" if self.found else "missed") + ("-latent" if self.latent else "")


@dataclass
class Result:
    case: Case
    status: str  # the simulated outcome: completed, hung, wrong_output, lost_accumulation
    faults: list[Scored]
    roots: list  # root-cause findings at error/warning
    reported: list  # every finding at error/warning (roots and symptoms)
    spurious: list  # roots that match no injected fault of their family
    report: Any = None  # the whole report (tests/_golden.py compares it to the stored one)

    @property
    def false_positives(self) -> list:
        """A clean run: every error/warning finding is one."""
        return self.reported if self.case.fault is None else []


def cases(protocols=None, seeds: int = SEEDS, routings=ROUTINGS, clean: bool = True,
          modes=("full",), layouts=("all",), routes=("send",)) -> list[Case]:
    """Every (protocol, fault, seed, routing) in each manifest mode, barrier layout and route
    layout; a barrier layout other than "all" only for the protocols that record a cross-rank
    barrier, a route layout other than "send" only for those that record routes (elsewhere
    neither changes the trace)."""
    import kernels

    out = []
    found = recorded()
    for proto, cls in kernels.PROTOCOLS.items():
        if protocols and proto not in protocols:
            continue
        lays = [lay for lay in layouts if lay == "all" or proto in found["barriers"]]
        rts = [rt for rt in routes if rt == "send" or proto in found["routes"]]
        for fault in ((None,) if clean else ()) + tuple(cls.faults):
            out += [Case(proto, fault, s, r, m, lay, rt) for rt in rts for lay in lays for m in modes
                    for s in range(seeds) for r in routings]
    return out


_RECORDED: dict = {}


def recorded() -> dict:
    """Which protocols' clean runs record a cross-rank barrier (scope all) and which record routes:
    found by running them once, so a kernel added later joins the variants by itself."""
    if not _RECORDED:
        import kernels
        from ingest.contract import Kind, Scope
        from rules.trace import TraceView

        _RECORDED.update(barriers=set(), routes=set())
        with tempfile.TemporaryDirectory(prefix="moetrace-acc-") as tmp:
            for proto in kernels.PROTOCOLS:
                out = Path(tmp) / proto
                kernels.simulate(proto, kernels.Params(**SHAPE), seed=0, out=out)
                t = TraceView.open(out / json.loads((out / "truth.json").read_text())["dataset"])
                if ((t["kind"] == Kind.BARRIER_BEGIN) & (t["scope"] == Scope.ALL)).any():
                    _RECORDED["barriers"].add(proto)
                if (t["kind"] == Kind.ROUTE).any():
                    _RECORDED["routes"].add(proto)
    return _RECORDED


def make_bare(dataset: Path) -> None:
    """Strip a dataset down to what the contract requires, in place.

    The manifest loses every optional region annotation (``reset``,
    ``monotonic``, ``slot_words``, ``index``), its ``sites``, ``params``,
    ``platform`` and per-peer ``transport``; every event loses every field its kind carries only
    optionally (``ingest.contract.FIELDS``' optional half, plus ``site`` and
    ``epoch``). What is left is the trace a user writes from the docs'
    required columns alone: the diagnosis must hold on it.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ingest.contract import COMMON_OPTIONAL, FIELDS, Kind

    path = dataset / "manifest.json"
    doc = json.loads(path.read_text())
    for key in ("sites", "params", "platform", "transport"):
        doc.pop(key, None)
    for region in doc["regions"]:
        for key in ("reset", "monotonic", "slot_words", "index"):
            region.pop(key, None)
    path.write_text(json.dumps(doc, indent=2) + "\n")
    # A column optional for some kind is nulled on that kind's rows only: it may be required elsewhere.
    optional: dict[str, list[int]] = {name: [int(k) for k in Kind] for name in COMMON_OPTIONAL}
    for kind, (_, opt) in FIELDS.items():
        for name in opt:
            optional.setdefault(name, []).append(int(kind))
    for part in sorted(dataset.glob("events/rank=*/*.parquet")):
        pf = pq.ParquetFile(part)
        table = pf.read()
        kind = table.column("kind").to_numpy()
        for name, kinds in optional.items():
            col = table.column(name)
            keep = ~np.isin(kind, kinds)
            table = table.set_column(table.schema.get_field_index(name), name,
                                     pa.compute.if_else(pa.array(keep), col, pa.nulls(len(col), col.type)))
        # One row group per original one, so window reads by launch statistics still work.
        sizes = [pf.metadata.row_group(i).num_rows for i in range(pf.num_row_groups)]
        with pq.ParquetWriter(part, table.schema, compression="lz4") as w:
            at = 0
            for n in sizes:
                w.write_table(table.slice(at, n))
                at += n


def simulate_case(case: Case, out: str | Path, shape: dict | None = None) -> None:
    """Simulate the case's run (on ``shape``, default ``SHAPE``) into ``out``: truth.json and its dataset.

    The manifest mode plays no part here: the bare run is the full run's trace, stripped afterwards.
    """
    from kernels import Params, Recording, simulate

    simulate(case.protocol, Params(routing=case.routing, **(SHAPE if shape is None else shape)),
             faults=[case.fault] if case.fault else [], seed=case.seed, out=Path(out),
             recording=Recording(barrier_layout=case.layout, route_layout=case.routes))


def run_case(case: Case, workdir: str | Path | None = None, shape: dict | None = None,
             simulated: str | Path | None = None) -> Result:
    """Simulate the case (on ``shape``, default ``SHAPE``), diagnose its dataset, score it.

    ``simulated``: a directory ``simulate_case`` already wrote for this case (in any manifest mode,
    on the same shape); it is copied into ``workdir`` instead of simulating again, and left as it was.
    """
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="moetrace-acc-") as tmp:
            return run_case(case, tmp, shape, simulated)
    from analyzer.engine import diagnose
    from kernels import FAULTS

    out = Path(workdir)
    if simulated is None:
        simulate_case(case, out, shape)
    else:
        shutil.copytree(simulated, out, dirs_exist_ok=True)
    truth = json.loads((out / "truth.json").read_text())  # the written truth is what we score against
    if case.mode == "bare":
        make_bare(out / truth["dataset"])
    report = diagnose(out / truth["dataset"])
    reported = [f for f in report.findings if f.severity in REPORTED]
    roots = [f for f in reported if f.is_root]
    scored, used = [], set()
    for tf in truth["faults"]:
        rounds = FAULTS[tf["name"]].min_rounds if tf["name"] in FAULTS else 1
        hit = [f.id for f in roots if f.family == tf["family"] and at_place(f, tf["place"], rounds)]
        used.update(hit)
        blind = case.mode == "bare" and tf["name"] in FAULTS and bool(FAULTS[tf["name"]].evidence_in)
        scored.append(Scored(tf["name"], tf["family"], tf["place"], bool(tf["latent"]), bool(hit), hit, blind=blind,
                             executed=bool(tf.get("executed", True))))
    spurious = [f for f in roots if f.id not in used]
    return Result(case, truth["outcome"]["status"], scored, roots, reported, spurious, report)


def at_place(f, place: dict, min_rounds: int = 1) -> bool:
    """Does finding ``f`` sit at the fault's place? (the rules are in the module docstring)"""
    loc = f.location
    rank = place.get("rank")
    if rank is not None and loc.rank != rank:
        return False
    core = place.get("core")
    if core is not None and loc.core != core and not any(
            e.rank == rank and e.core == core for e in f.evidence):
        return False
    rnd = place.get("round")
    if rnd is not None and loc.launch is not None and not rnd <= loc.launch <= rnd + min_rounds - 1:
        return False
    if "token" in place and not _names_slot(f, place["token"], place.get("topk")):
        return False
    return True


def _names_slot(f, token: int, topk: int | None) -> bool:
    def ok(vals) -> bool:
        return vals.get("token") == token and (topk is None or vals.get("topk") == topk)

    return ok(f.extra) or any(ok(e.values) for e in f.evidence)


def describe(f) -> str:
    """A finding in one line for miss / false-positive listings."""
    loc = f.location
    where = f"r{loc.rank}" + ("" if loc.core is None else f"c{loc.core}") \
        + ("" if loc.launch is None else f"L{loc.launch}")
    return f"{f.id} {f.code} {f.family} {f.severity} {where}{'' if f.is_root else ' (symptom)'}: {f.message}"
