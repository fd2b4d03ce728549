"""Large benchmark traces, built once from the simulator and cached under bench/cache/.

Simulating 100 M events directly would take ~7 minutes here and hold the whole
machine state in memory, so a trace is assembled: a few distinct simulated
runs ("pieces", ~1 M events each: different seeds, and one with faults) are
laid end to end on every (rank, core) as successive launches, clean pieces
first, cycling through the seeds, and the faulty piece last (its hang ends the
trace, as a real post-mortem would). Per piece copy: launch += the launches
before it, ts += the cycles before it (per core, plus a gap), seq is
renumbered 0..n-1 per (rank, core) in that order, and site ids are mapped onto
one union table (ids are assigned as a run first meets a site, so runs with
faults can differ). Everything else (ranks, regions, offsets, values, epochs)
is the simulated run's own: every piece starts from reset flags and ends with
them reset, except the faulty last one, so each copy is a well-formed round.

Each trace is written twice from the same rows: a dataset (the writer's own
parquet layout, one file per rank) and binary ring dumps (``encode_rings``,
one .mtr per rank) for the ingest timing.
"""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ingest.dataset import BLOCK_EVENTS, EVENTS_DIR, MANIFEST_FILE, REPORT_FILE  # noqa: E402
from ingest.ingest_report import CoreReport, IngestReport, SourceReport  # noqa: E402
from ingest.blocks import blocks_of, cut_blocks, launch_counts, row_cuts  # noqa: E402
from ingest.writer import conform, write_events  # noqa: E402
from ingest.manifest import Manifest  # noqa: E402
from ingest.rings import write_ring_file  # noqa: E402

CACHE = ROOT / "bench" / "cache"
VERSION = 2  # bump when the recipe or the layout changes: the cache key includes it (2: blocks)
PIECE_VERSION = 1  # bump when the simulated pieces change


@dataclass(frozen=True)
class Recipe:
    protocol: str
    params: dict
    clean_seeds: tuple[int, ...]
    faults: tuple[str, ...]  # of the last piece
    fault_seed: int = 7


# 16 ranks x 8 cores, top-8: ~1.13 M events per classic piece, ~0.26 M per reduce-scatter piece.
BIG = dict(ranks=16, cores=8, tokens=256, topk=8, hidden=16, local_experts=4, rounds=2)
RECIPES = {
    # invalid expert -> hang with a chain (stuck combine wait -> dropped route);
    # missing quiet -> MT401; ready-not-reset -> stale flags (MT202).
    "classic": Recipe("classic", BIG, (0, 1, 2, 3), ("invalid-expert", "missing-quiet", "ready-not-reset")),
    "reduce_scatter": Recipe("reduce_scatter", BIG, (0, 1, 2, 3),
                             ("atomic-none-early", "plain-write-in-window", "rank-stop")),
}


def _piece(rec: Recipe, seed: int, faults: tuple[str, ...]) -> Path:
    from kernels import simulate
    from kernels.base import Params

    tag = "-".join(faults) or "clean"
    d = CACHE / "pieces" / f"v{PIECE_VERSION}_{rec.protocol}_{seed}_{tag}"
    if not (d / "dataset" / REPORT_FILE).exists():
        shutil.rmtree(d, ignore_errors=True)
        print(f"simulating {d.name} ...", file=sys.stderr)
        simulate(rec.protocol, Params(**rec.params), faults=list(faults), seed=seed, out=d)
    return d / "dataset"


def _rank_table(ds: Path, rank: int) -> pa.Table:
    p = ds / EVENTS_DIR / f"rank={rank}" / "part-0.parquet"
    return pq.read_table(p, partitioning=None) if p.exists() else None


def build(protocol: str, events: int) -> Path:
    """The cached trace of ``protocol`` with about ``events`` events; returns its directory."""
    rec = RECIPES[protocol]
    out = CACHE / f"v{VERSION}_{protocol}_{events // 1_000_000}M"
    if (out / "dataset" / REPORT_FILE).exists() and (out / "rings" / "manifest.json").exists():
        return out
    clean = [_piece(rec, s, ()) for s in rec.clean_seeds]
    last = _piece(rec, rec.fault_seed, rec.faults)
    sizes = {p: json.loads((p / REPORT_FILE).read_text())["rows_out"] for p in clean + [last]}
    order, total = [], sizes[last]
    while total + sizes[clean[len(order) % len(clean)]] <= events:
        order.append(clean[len(order) % len(clean)])
        total += sizes[order[-1]]
    order.append(last)
    manifests = [Manifest.load(p / MANIFEST_FILE) for p in order]
    sites: dict[str, int] = {}
    remap = []  # per piece: old site id -> union id (as an array indexable by the old id)
    for m in manifests:
        old = {int(k): v for k, v in m.to_json()["sites"].items()}
        arr = np.full(max(old, default=0) + 1, -1, np.int64)
        for k, text in old.items():
            arr[k] = sites.setdefault(text, len(sites))
        remap.append(arr)
    names = list(dict.fromkeys(n for m in manifests for n in m.names))
    doc = manifests[0].to_json()
    if any(m.to_json()["regions"] != doc["regions"] for m in manifests):
        raise RuntimeError("pieces disagree on regions: change the recipe")
    doc.update(sites={str(v): k for k, v in sites.items()}, names=names)
    doc["params"] = {**doc["params"], "rounds": sum(m.param("rounds", 1) for m in manifests)}
    manifest = Manifest.from_json(doc)
    print(f"assembling {out.name}: {len(order)} pieces, {total:,} events", file=sys.stderr)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    (tmp / "rings").mkdir(parents=True)
    values, counts = _launch_counts(order, manifests)
    edges = cut_blocks(values, counts, BLOCK_EVENTS)
    report = IngestReport(blocks=blocks_of(values, counts, edges))
    for rank in range(manifest.ranks):
        table = _assemble_rank(order, manifests, remap, rank)
        d = tmp / "dataset" / EVENTS_DIR / f"rank={rank}"
        d.mkdir(parents=True)
        cuts = row_cuts(table.column("core").to_numpy(), table.column("launch").to_numpy(), edges)
        write_events(table, d / "part-0.parquet", cuts)
        write_ring_file(tmp / "rings" / f"rank{rank:02d}.mtr", table, manifest)
        core = table.column("core").to_numpy()
        report.sources.append(SourceReport(f"assembled:rank{rank}", "simulator", len(core), len(core)))
        bounds = np.concatenate(([0], np.flatnonzero(np.diff(core)) + 1, [len(core)]))
        for s, e in zip(bounds[:-1], bounds[1:]):
            report.cores.append(CoreReport(rank, int(core[s]), int(e - s), 0, 0, int(e - s - 1)))
        del table
    manifest.dump(tmp / "dataset" / MANIFEST_FILE)
    manifest.dump(tmp / "rings" / "manifest.json")
    (tmp / "dataset" / REPORT_FILE).write_text(json.dumps(report.to_json(), indent=2) + "\n")
    (tmp / "recipe.json").write_text(json.dumps({
        "protocol": protocol, "params": rec.params, "faults_last_piece": rec.faults,
        "pieces": [p.parent.name for p in order], "events": total}, indent=2) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)
    return out


def _launch_counts(order, manifests):
    """(launches, events in each) of the assembled trace: each copy's counts, shifted as assembled."""
    vals, counts, launch_off = [], [], 0
    for p, m in zip(order, manifests):
        files = sorted((p / EVENTS_DIR).glob("rank=*/part-0.parquet"))
        v, c = launch_counts([pq.read_table(f, columns=["launch"], partitioning=None).column(0) for f in files])
        vals.append(v + launch_off)
        counts.append(c)
        launch_off += int(m.param("rounds", 1))
    return np.concatenate(vals), np.concatenate(counts)


def _assemble_rank(order, manifests, remap, rank: int) -> pa.Table:
    """One rank's rows of every piece copy, in (core, copy, seq) order, renumbered."""
    parts, launch_off = [], 0
    ts_off: dict[int, int] = {}
    for i, (p, m) in enumerate(zip(order, manifests)):
        t = _rank_table(p, rank)
        if t is None:
            continue
        core = t.column("core").to_numpy()
        ts = t.column("ts").to_numpy()
        off = np.array([ts_off.get(int(c), 0) for c in range(int(core.max()) + 1)], np.int64)
        new_ts = ts - ts.min() + off[core]
        for c in np.unique(core):  # next copy starts 10k cycles after this one's last event
            ts_off[int(c)] = int(new_ts[core == c].max()) + 10_000
        site = t.column("site")
        ok = site.is_valid().to_numpy(zero_copy_only=False)
        sv = site.fill_null(0).to_numpy()
        new_site = pa.array(np.where(ok, remap[i][sv], 0), pa.int32(), mask=~ok)
        t = t.set_column(t.schema.get_field_index("ts"), "ts", pa.array(new_ts, pa.int64()))
        t = t.set_column(t.schema.get_field_index("site"), "site", new_site)
        t = t.set_column(t.schema.get_field_index("launch"), "launch",
                         pc.add(t.column("launch"), pa.scalar(launch_off, pa.int32())))
        t = t.append_column("_copy", pa.array(np.full(t.num_rows, i, np.int32)))
        parts.append(t)
        launch_off += int(m.param("rounds", 1))
    table = pa.concat_tables(parts)
    del parts
    core = table.column("core").to_numpy()
    copy = table.column("_copy").to_numpy()
    seq = table.column("seq").to_numpy()
    idx = np.lexsort((seq, copy, core))
    table = table.drop_columns(["_copy"]).take(idx)
    core = core[idx]
    starts = np.concatenate(([0], np.flatnonzero(np.diff(core)) + 1))
    counts = np.diff(np.concatenate((starts, [len(core)])))
    new_seq = np.arange(len(core), dtype=np.int64) - np.repeat(starts, counts)
    table = table.set_column(table.schema.get_field_index("seq"), "seq", pa.array(new_seq, pa.int64()))
    return conform(table)


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="build a cached benchmark trace")
    ap.add_argument("protocol", choices=sorted(RECIPES))
    ap.add_argument("--events", type=int, default=10_000_000)
    print(build(ap.parse_args().protocol, ap.parse_args().events))
