"""``moetrace demo``: the classic combine hang, simulated, then diagnosed.

Eight ranks run cann/shmem's dispatch_classic + combine_classic; one token's
router output carries an expert id past num_experts. Dispatch drops the pair (no
core serves a dst rank >= P), and combine waits every top-k status slot (it only
skips invalid ids when it sums), so the token owner hangs exactly as the real
combine_classic would. The demo prints the simulated outcome and what a
post-mortem dump shows (from the trace alone, through the SQL views), then the
diagnosis.

Exit code: 0 when the diagnosis names the injected fault as its root cause, 1
when it does not (so the demo doubles as an end-to-end self-check).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from ._common import Command

DEMO_AT = {"rank": 3, "round": 0, "token": 5, "topk": 1}


def register(app: typer.Typer) -> None:
    @app.command("demo", cls=Command)
    def demo(
        out: Optional[Path] = typer.Option(None, "-o", "--out", metavar="DIR",
                                             help="output directory (default: a temp dir)"),
        seed: int = typer.Option(1, "--seed", metavar="N"),
    ) -> None:
        """Simulate classic dispatch/combine on 8 ranks with one invalid expert id and diagnose the hang."""
        import tempfile

        from analyzer.engine import diagnose
        from analyzer.report import render
        from kernels.api import DATASET_DIR, Recording, simulate
        from kernels.base import Params

        out = out or Path(tempfile.mkdtemp(prefix="moetrace-demo-"))
        params = Params(ranks=8, cores=8, tokens=16, topk=2, hidden=8, local_experts=2)
        # Routes recorded where the kernel reads expert_ids, as docs/trace-format.md asks of a kernel.
        truth = simulate("classic", params, faults=["invalid-expert"], seed=seed, out=out, at=DEMO_AT,
                         recording=Recording(route_layout="read"))
        ds = out / DATASET_DIR
        typer.echo(f"simulated: {truth.summary()}")
        typer.echo(f"trace: {ds}")
        typer.echo(trace_summary(ds))
        typer.echo("")
        report = diagnose([ds])
        typer.echo(render(report, "text"), nl=False)
        if not names_injected_fault(report):
            typer.echo("moetrace: demo: the diagnosis did not name the injected invalid expert id "
                       "as its root cause", err=True)
            raise typer.Exit(1)
        # The summary's exit code is what `moetrace diagnose` returns on this trace; the demo
        # itself succeeds when the diagnosis names the fault it injected.
        typer.echo(f"demo: the root cause is the injected fault (invalid expert id at rank {DEMO_AT['rank']} "
                   f"token {DEMO_AT['token']} top-k {DEMO_AT['topk']}): demo exit 0")


def trace_summary(ds: Path) -> str:
    """Events per kind and the waits that never ended, as a post-mortem dump shows them."""
    from ingest.dataset import Dataset
    from rules.views import connect

    con = connect(Dataset(ds))
    kinds = con.sql("SELECT kind, count(*) FROM events GROUP BY kind ORDER BY min(_kind_code(kind))").fetchall()
    lines = ["events per kind: " + ", ".join(f"{k} {n}" for k, n in kinds)]
    stuck = con.sql("""
        SELECT w.rank, w.core, w.region, w."offset" // r.slot_words AS slot, w."offset", w.cmp, w.target
        FROM waits w JOIN _regions r ON r.name = w.region
        WHERE w.stuck ORDER BY w.rank, w.core""").fetchall()
    for rank, core, region, slot, offset, cmp, target in stuck:
        lines.append(f"stuck wait: rank {rank} core {core} on {region} slot {slot} "
                     f"(offset {offset}) until {cmp} {target}")
    if not stuck:
        lines.append("stuck waits: none")
    return "\n".join(lines)


def names_injected_fault(report) -> bool:
    """True when a root cause is the invalid-expert finding on the injected (rank, token, topk)."""
    for f in report.roots:
        if f.family == "invalid-expert-id" and f.location.rank == DEMO_AT["rank"] \
                and f.extra.get("token") == DEMO_AT["token"] and f.extra.get("topk") == DEMO_AT["topk"]:
            return True
    return False
