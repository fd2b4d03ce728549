"""``moetrace demo``: the classic combine hang, simulated, then diagnosed.

Eight ranks run cann/shmem's dispatch_classic + combine_classic; one token's
router output carries an expert id past num_experts. Dispatch drops the pair (no
core serves a dst rank >= P), and combine waits every top-k status slot (it only
skips invalid ids when it sums), so the token owner hangs exactly as the real
combine_classic would. The demo prints the simulated outcome and a trace
summary, then the diagnose report when the diagnose engine is installed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

DEMO_AT = {"rank": 3, "round": 0, "token": 5, "topk": 1}


def register(app: typer.Typer) -> None:
    @app.command("demo")
    def demo(
        out: Optional[Path] = typer.Option(None, "-o", "--out", help="output directory (default: a temp dir)"),
        seed: int = typer.Option(1, "--seed"),
    ) -> None:
        """Simulate classic dispatch/combine on 8 ranks with one invalid expert id and diagnose the hang."""
        import tempfile

        from kernels.api import simulate
        from kernels.base import Params

        out = out or Path(tempfile.mkdtemp(prefix="moetrace-demo-"))
        params = Params(ranks=8, cores=8, tokens=16, topk=2, hidden=8, local_experts=2)
        truth = simulate("classic", params, faults=["invalid-expert"], seed=seed, out=out, at=DEMO_AT)
        ds = out / "dataset"
        typer.echo(f"simulated: {truth.summary()}")
        typer.echo(f"trace: {ds}")
        typer.echo(trace_summary(ds))
        code = diagnose(ds)
        if code is not None:
            raise typer.Exit(code)


def trace_summary(ds: Path) -> str:
    """Events per kind and the waits that never ended, as a post-mortem dump shows them."""
    import numpy as np

    from ingest.contract import Kind
    from ingest.dataset import Dataset

    d = Dataset(ds)
    a = d.arrays(["rank", "core", "kind", "region", "offset"])
    kinds, counts = np.unique(a["kind"], return_counts=True)
    lines = ["events per kind: " + ", ".join(f"{Kind(k).wire} {n}" for k, n in zip(kinds, counts))]
    wb = a["kind"] == Kind.WAIT_BEGIN
    we = a["kind"] == Kind.WAIT_END
    # Rows are in (rank, core, seq) order: a wait_begin not followed by its wait_end is stuck.
    nxt_end = np.zeros(len(wb), bool)
    nxt_end[:-1] = we[1:] & (a["rank"][1:] == a["rank"][:-1]) & (a["core"][1:] == a["core"][:-1])
    stuck = np.flatnonzero(wb & ~nxt_end)
    regions = d.manifest.regions
    for i in stuck:
        reg = regions[int(a["region"][i])]
        off = int(a["offset"][i])
        lines.append(f"stuck wait: rank {a['rank'][i]} core {a['core'][i]} on {reg.name}[{off}] "
                     f"(slot {off // reg.slot_words})")
    if not len(stuck):
        lines.append("stuck waits: none")
    return "\n".join(lines)


def diagnose(ds: Path) -> int | None:
    """Run the diagnose engine on the dataset if it is there; None when it is not (yet)."""
    try:
        from analyzer.commands.diagnose import run_diagnose
    except (ImportError, AttributeError):
        return None
    typer.echo("")
    return run_diagnose([ds], fmt="text", out=sys.stdout)
