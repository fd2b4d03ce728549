"""``moetrace simulate``: run a reference kernel on the simulated SHMEM machine.

The help text is built from the kernels' own registries (names and docs live
there) without importing numpy: the protocol / fault tables below are read from
``kernels.faults`` (pure data) and the protocol docs listed here.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Literal, Optional

import typer

from ._common import Command, die

# Protocol one-liners for --help (kept here so `--help` imports nothing heavy; the
# kernels carry the same text in their .doc and tests check they agree).
PROTOCOL_HELP = {
    "classic": "dispatch_classic + combine_classic: MTE payload, per-token quiet, ready/count/status 8-word slots",
    "fused": "dispatch_gmm_combine: epoch count exchange (count or count+1), peers' rows pulled (get), silent clamp at maxOutputSize, expert compute, combine with status words",
    "doubleplane": "classic with big segments' payload over SDMA + SDMA quiet before the control flags",
    "generation": "MegaMoE-style rounds without host sync: waits on monotonic generation counters (>=)",
    "reduce_scatter": "MTE bulk atomic reduce-scatter: barrier, SetAtomicAdd, get_nbi from peers, MTE3 drain, none",
    "sdma_fallback": "SDMA fallback reduce: one chunk per core, peers serial, add in UB, plain write back",
    "udma_atomic": "UDMA put of each peer's block from UB + quiet, UDMA scalar atomic add, UDMA quiet, MTE done flag",
    "reduce_scatter_staged": "reduce-scatter over comm blocks reusing one workspace stage: pre and post "
                             "barrier_all per block",
    "unified_atomic": "unified aclshmem_*_atomic_add over a topology of MTE, UDMA and RoCE peers, quiet, "
                      "MTE done flag",
    "udma_bulk": "UDMA put of a 384 MB buffer part per core to the next rank in 128 MB requests, quiet, "
                 "MTE ready flag",
    "deepep_normal": "DeepEP intranode dispatch/combine: per-channel NVLink rings with head/tail indices, "
                     "counts encoded -n-1",
    "deepep_ll": "DeepEP low-latency dispatch/combine: IBGDA data then count amo on one QP, per-expert "
                 "counts -n-1, parity signal buffers cleaned one launch ahead",
}
# kernels.base.ROUTINGS, restated so that --help imports no numpy (a test checks they agree).
ROUTINGS = ("uniform", "skewed", "hot")
# kernels.sim.machine.BARRIER_LAYOUTS and kernels.base.ROUTE_LAYOUTS, likewise.
BARRIER_LAYOUTS = ("all", "core0")
ROUTE_LAYOUTS = ("send", "read")


def _help() -> str:
    from kernels.faults import FAULTS

    # "\b" keeps click from re-wrapping the tables into one paragraph.
    intro = ("Simulate a reference MoE all-to-all kernel on a simulated SHMEM machine and write its "
             "trace: OUT/dataset is the moetrace dataset, OUT/truth.json the faults injected, their "
             "places, families and the outcome (completed, hung, wrong output, lost accumulation; "
             "latent when a fault did not bite on that interleaving).")
    protos = "\b\nProtocols:\n" + "\n".join(f"  {k}: {v}" for k, v in PROTOCOL_HELP.items())
    faults = "\b\nFaults (name [family]: what; consequence):\n" + "\n".join(
        f"  {f.name} [{f.family}]: {f.doc}; {f.consequence}" for f in FAULTS.values())
    placing = ("Placement: --at rank=3,core=1,round=0 (also token=, topk=); keys not given are drawn "
               "from the seed. One --at applies to every fault, or give one per --fault in order.")
    return "\n\n".join([intro, protos, faults, placing])


def register(app: typer.Typer) -> None:
    @app.command("simulate", cls=Command, help=_help(), no_args_is_help=True)
    def simulate(
        protocol: Literal[tuple(PROTOCOL_HELP)] = typer.Option(
            ..., "--protocol", metavar="PROTOCOL", help="one of the protocols above"),
        ranks: int = typer.Option(4, "--ranks", min=1, metavar="N"),
        cores: int = typer.Option(4, "--cores", min=1, metavar="N"),
        tokens: int = typer.Option(16, "--tokens", min=1, metavar="N"),
        topk: int = typer.Option(2, "--topk", min=1, metavar="N"),
        hidden: int = typer.Option(8, "--hidden", min=1, metavar="N"),
        local_experts: int = typer.Option(2, "--local-experts", min=1, metavar="N"),
        rounds: int = typer.Option(1, "--rounds", min=1, metavar="N"),
        routing: Literal[ROUTINGS] = typer.Option("uniform", "--routing", help="how tokens pick experts"),
        seed: int = typer.Option(0, "--seed", metavar="N"),
        fault: Optional[List[str]] = typer.Option(None, "--fault", metavar="FAULT",
                                                    help="a fault above to inject (repeatable)"),
        at: Optional[List[str]] = typer.Option(None, "--at", metavar="KEY=N,...",
                                                 help="placement, e.g. rank=3,core=1,round=0"),
        capacity: Optional[int] = typer.Option(None, "--capacity", metavar="ROWS",
                                                     help="receive capacity in rows"),
        ring_capacity: Optional[int] = typer.Option(None, "--ring-capacity", metavar="N",
                                                          help="events kept per core"),
        barriers: Literal[BARRIER_LAYOUTS] = typer.Option(
            "all", "--barriers", help="record cross-rank barriers on every core, or on core 0 with core barriers"),
        routes: Literal[ROUTE_LAYOUTS] = typer.Option(
            "send", "--routes", help="record routes beside each send, or once where expert ids are read"),
        fmt: Literal["text", "json"] = typer.Option("text", "--format", help="json prints truth.json"),
        out: Path = typer.Option(..., "-o", "--out", metavar="DIR", help="output directory"),
        force: bool = typer.Option(False, "--force", help="write into DIR even if it is not empty"),
    ) -> None:
        import json

        if out.exists() and not force and (not out.is_dir() or any(out.iterdir())):  # ingest's words; empty is fine
            raise die(f"{out}: output already exists (use --force to replace it)")
        from kernels.api import Recording
        from kernels.api import simulate as run
        from kernels.base import Params
        from kernels.faults import check_at, parse_at

        faults = list(fault or [])
        params = Params(ranks=ranks, cores=cores, tokens=tokens, topk=topk, hidden=hidden,
                        local_experts=local_experts, rounds=rounds, routing=routing, capacity=capacity)
        try:
            ats = [parse_at(a) for a in (at or [])]
            for a in ats:
                check_at(a, params, faults)
        except ValueError as e:
            raise die(str(e))
        if len(ats) > 1 and len(ats) != len(faults):
            raise die("give one --at for all faults or one per --fault")
        placement = ats if len(ats) > 1 else (ats[0] if ats else None)
        try:
            recording = Recording(ring_capacity=ring_capacity, barrier_layout=barriers, route_layout=routes)
            truth = run(protocol, params, faults=faults, seed=seed, out=out, at=placement, recording=recording)
        except ValueError as e:
            raise die(str(e))
        if fmt == "json":
            typer.echo(json.dumps(truth.to_json(), indent=2))
        else:
            typer.echo(truth.summary())
            typer.echo(f"dataset: {Path(out) / 'dataset'}  truth: {Path(out) / 'truth.json'}")
