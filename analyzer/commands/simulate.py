"""``moetrace simulate``: run a reference kernel on the simulated SHMEM machine.

The help text is built from the kernels' own registries (names and docs live
there) without importing numpy: the protocol / fault tables below are read from
``kernels.faults`` (pure data) and the protocol docs listed here.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from ._common import die

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
}


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
    @app.command("simulate", help=_help(), no_args_is_help=True)
    def simulate(
        protocol: str = typer.Option(..., "--protocol", help="one of: " + ", ".join(PROTOCOL_HELP)),
        ranks: int = typer.Option(4, "--ranks", min=1),
        cores: int = typer.Option(4, "--cores", min=1),
        tokens: int = typer.Option(16, "--tokens", min=1),
        topk: int = typer.Option(2, "--topk", min=1),
        hidden: int = typer.Option(8, "--hidden", min=1),
        local_experts: int = typer.Option(2, "--local-experts", min=1),
        rounds: int = typer.Option(1, "--rounds", min=1),
        routing: str = typer.Option("uniform", "--routing", help="uniform | skewed | hot"),
        seed: int = typer.Option(0, "--seed"),
        fault: Optional[List[str]] = typer.Option(None, "--fault", help="a fault to inject (repeatable)"),
        at: Optional[List[str]] = typer.Option(None, "--at", help="placement, e.g. rank=3,core=1,round=0"),
        capacity: Optional[int] = typer.Option(None, "--capacity", help="receive capacity in rows"),
        ring_capacity: Optional[int] = typer.Option(None, "--ring-capacity", help="events kept per core"),
        fmt: str = typer.Option("text", "--format", help="text | json (json prints truth.json)"),
        out: Path = typer.Option(..., "-o", "--out", help="output directory"),
    ) -> None:
        import json

        from kernels.api import PROTOCOLS, simulate as run
        from kernels.base import ROUTINGS, Params
        from kernels.faults import parse_at

        if protocol not in PROTOCOLS:
            raise die(f"unknown protocol {protocol!r}; expected one of {', '.join(PROTOCOLS)}")
        if routing not in ROUTINGS:
            raise die(f"unknown routing {routing!r}; expected one of {', '.join(ROUTINGS)}")
        if fmt not in ("text", "json"):
            raise die(f"unknown format {fmt!r}; expected text or json")
        faults = list(fault or [])
        try:
            ats = [parse_at(a) for a in (at or [])]
        except ValueError as e:
            raise die(str(e))
        if len(ats) > 1 and len(ats) != len(faults):
            raise die("give one --at for all faults or one per --fault")
        placement = ats if len(ats) > 1 else (ats[0] if ats else None)
        params = Params(ranks=ranks, cores=cores, tokens=tokens, topk=topk, hidden=hidden,
                        local_experts=local_experts, rounds=rounds, routing=routing, capacity=capacity)
        try:
            truth = run(protocol, params, faults=faults, seed=seed, out=out, at=placement,
                        ring_capacity=ring_capacity)
        except ValueError as e:
            raise die(str(e))
        if fmt == "json":
            typer.echo(json.dumps(truth.to_json(), indent=2))
        else:
            typer.echo(truth.summary())
            typer.echo(f"dataset: {Path(out) / 'dataset'}  truth: {Path(out) / 'truth.json'}")
