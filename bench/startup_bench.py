"""Start-up benchmark: `moetrace diagnose` of a ~1,000-event trace, end to end, warm caches.

Simulates once (under bench/out/startup/) a classic dispatch/combine with an
invalid expert id, 4 ranks x 4 cores, 6 tokens (~1,150 events), runs one
diagnose to fill numba's cache, then times --repeat runs of the console
script's entry point (a fresh process each: wall clock and the child's CPU
time), interleaved with the same runs of each --against source tree (another
checkout of moetrace, e.g. `git archive main | tar -x -C /tmp/main`: run from
this environment with that tree first on sys.path, its own numba cache), so
both see the same machine load. Also prints what one diagnose imports and how
many kernels it loads. Bytecode caching is on (PYTHONDONTWRITEBYTECODE
removed), as after an installation: without .pyc files every run compiles
every module first (~3 s more here).

    uv run python bench/startup_bench.py [--repeat 9] [--against DIR ...] [--no-results]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from _results import write_section  # noqa: E402

OUT = ROOT / "bench" / "out" / "startup"
BEGIN, END = "<!-- startup:begin -->", "<!-- startup:end -->"
FORMATS = ("text", "json")

# One diagnose, then what it imported and loaded, as a line of JSON on stderr.
PROBE = """
import json, os, sys
sys.argv = ['moetrace', 'diagnose', sys.argv[1], '--format', sys.argv[2]]
sys.stdout = open(os.devnull, 'w')
from analyzer.cli import main
try:
    main()
except SystemExit:
    pass
try:
    from ingest._jit import loaded
    kernels = len(loaded())
except ImportError:
    kernels = None
top = sorted({m.split('.')[0] for m in sys.modules})
ours = sorted(m for m in sys.modules if m.split('.')[0] in ('analyzer', 'kernels', 'rules', 'ingest'))
print(json.dumps({'kernels': kernels, 'heavy': [m for m in ('numba', 'pyarrow', 'pyarrow.compute', 'polars',
      'duckdb', 'pydantic') if m in sys.modules], 'kernels_pkg': [m for m in ours if m.startswith('kernels')],
      'reporters': [m for m in ours if m.startswith('analyzer.report.') and not m.split('.')[-1].startswith('_')],
      'commands': [m for m in ours if m.startswith('analyzer.commands.') and not m.split('.')[-1].startswith('_')]}),
      file=sys.stderr)
"""

# One diagnose (json) with its CPU time cut into phases (time.process_time at each boundary, through
# wrappers around run_diagnose, ingest._jit.warm and analyzer.report.render, names every tree has),
# and the CPU of the kernels loaded after warm's first one; a line of JSON on stderr.
PHASES = """
import json, os, sys, time
t0 = time.process_time()
sys.argv = ['moetrace', 'diagnose', sys.argv[1], '--format', 'json']
sys.stdout = open(os.devnull, 'w')
at = {}
import analyzer.cli as cli
at['cli'] = time.process_time()
import analyzer.commands.diagnose as d, analyzer.report as rep, ingest._jit as j
run_diagnose, warm, render = d.run_diagnose, j.warm, rep.render
def _run_diagnose(*a, **k):
    at['parsed'] = time.process_time()
    return run_diagnose(*a, **k)
kernels = [0, 0.0]
def _warm():
    if 'warm0' in at:
        return warm()
    at['warm0'] = time.process_time()
    warm()
    at['warm1'] = time.process_time()
    from numba.core.dispatcher import Dispatcher
    load = Dispatcher._compile_for_args
    def timed(self, *a, **k):
        c = time.process_time()
        try:
            return load(self, *a, **k)
        finally:
            kernels[0] += 1
            kernels[1] += time.process_time() - c
    Dispatcher._compile_for_args = timed
def _render(*a, **k):
    at['rules'] = time.process_time()
    out = render(*a, **k)
    at['report'] = time.process_time()
    return out
d.run_diagnose, j.warm, rep.render = _run_diagnose, _warm, _render
try:
    cli.main()
except SystemExit:
    pass
print(json.dumps({'start': t0, **at, 'end': time.process_time(), 'kernels': kernels}), file=sys.stderr)
"""
PHASE_NAMES = (("start", "interpreter start"), ("cli", "the command line's imports (typer, ours)"),
               ("parsed", "typer's argument parsing"),
               ("warm0", "engine imports (numpy, pyarrow, rules), config, dataset opened"),
               ("warm1", "numba's import and first cache load (warm: on a thread, beside the window's column read, "
                         "whose CPU counts here too)"),
               ("rules", "columns read (what is left of it), rules run (with the kernels below)"),
               ("report", "the report"))


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _trace() -> Path:
    ds = OUT / "trace" / "dataset"
    if not (ds / "ingest.json").exists():
        subprocess.run([sys.executable, "-m", "analyzer.cli", "simulate", "--protocol", "classic",
                        "--fault", "invalid-expert", "--tokens", "6", "-o", str(OUT / "trace"), "--force"],
                       check=True, cwd=ROOT, env=_env(ROOT), stdout=subprocess.DEVNULL)
    return ds


def _once(tree: Path, ds: Path, fmt: str) -> tuple[float, float]:
    """(wall s, CPU s) of one `moetrace diagnose` in a fresh process."""
    cmd = [sys.executable, "-c", "import sys; from moetrace._cli import main; sys.argv[0] = 'moetrace'; main()",
           "diagnose", str(ds), "--format", fmt]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    r = subprocess.run(cmd, cwd=tree, env=_env(tree), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode not in (0, 1):
        raise SystemExit(f"{tree}: diagnose failed ({r.returncode}): {r.stderr.strip()[-400:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _probe(tree: Path, ds: Path, fmt: str) -> dict:
    r = subprocess.run([sys.executable, "-c", PROBE, str(ds), fmt], cwd=tree, env=_env(tree),
                       capture_output=True, text=True, check=True)
    return json.loads(r.stderr.strip().splitlines()[-1])


def _phases(tree: Path, ds: Path) -> dict:
    r = subprocess.run([sys.executable, "-c", PHASES, str(ds)], cwd=tree, env=_env(tree),
                       capture_output=True, text=True, check=True)
    return json.loads(r.stderr.strip().splitlines()[-1])


def _events(ds: Path) -> int:
    return json.loads((ds / "ingest.json").read_text())["rows_out"]


def _lap(p: dict, key: str) -> float:
    """CPU seconds of the phase ending at ``key``: from the previous boundary (0 for the start)."""
    keys = [k for k, _ in PHASE_NAMES]
    i = keys.index(key)
    return p[key] - (p[keys[i - 1]] if i else 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--against", type=Path, action="append", default=[],
                    help="another moetrace source tree to time in the same run")
    ap.add_argument("--no-results", action="store_true", help="do not rewrite bench/RESULTS.md")
    args = ap.parse_args()
    ds = _trace()
    trees = [ROOT, *[p.resolve() for p in args.against]]
    for tree in trees:  # fill each tree's numba and bytecode caches
        for fmt in FORMATS:
            _once(tree, ds, fmt)
    load0 = os.getloadavg()[0]
    runs: dict[tuple[Path, str], list[tuple[float, float]]] = {(t, f): [] for t in trees for f in FORMATS}
    for i in range(args.repeat):
        for fmt in FORMATS:
            for tree in trees:
                runs[tree, fmt].append(_once(tree, ds, fmt))
        print(f"round {i + 1}/{args.repeat}", file=sys.stderr)
    phases: dict[Path, list[dict]] = {t: [] for t in trees}
    for _ in range(3):
        for tree in trees:
            phases[tree].append(_phases(tree, ds))
    load1 = os.getloadavg()[0]
    lines = []
    for tree in trees:
        name = "this tree" if tree == ROOT else str(tree)
        for fmt in FORMATS:
            walls, cpus = zip(*runs[tree, fmt])
            lines.append(f"| {name} | {fmt} | {min(walls):.2f} | {statistics.median(walls):.2f} | "
                         f"{min(cpus):.2f} | {statistics.median(cpus):.2f} |")
    probes = {tree: _probe(tree, ds, "text") for tree in trees}
    facts = [f"- {'this tree' if t == ROOT else t}: "
             + (f"{p['kernels']} numba kernels loaded" if p['kernels'] is not None else
                "kernels not countable there (no `ingest._jit.loaded`)") + "; imports "
             f"{', '.join(p['heavy'])}; command modules {', '.join(m.split('.')[-1] for m in p['commands'])}; "
             f"reporters {', '.join(m.split('.')[-1] for m in p['reporters']) or 'none'}; simulator modules "
             f"{', '.join(p['kernels_pkg']) or 'none'}" for t, p in probes.items()]
    # Each phase's least CPU over the 3 runs (the quietest reading of each), as the runs' cuts differ little.
    cut = [f"| {'this tree' if t == ROOT else t} | "
           + " | ".join(f"{min(_lap(p, k) for p in runs):.3f}" for k, _ in PHASE_NAMES)
           + f" | {min(p['kernels'][1] for p in runs):.3f} ({runs[0]['kernels'][0]}) | "
           f"{min(p['end'] for p in runs):.3f} |" for t, runs in phases.items()]
    block = "\n".join([
        BEGIN, "## Start-up", "",
        f"`uv run python bench/startup_bench.py --repeat {args.repeat}"
        + "".join(f" --against {p}" for p in args.against) + f"`: `moetrace diagnose` of a {_events(ds):,}-event "
        f"trace (classic, invalid expert, 4x4, 6 tokens), a fresh process per run, numba's and Python's "
        f"bytecode caches warm; the trees' runs interleaved; 1-minute load average {load0:.1f} before, "
        f"{load1:.1f} after, on {os.cpu_count()} cores (shared: wall times are pessimistic, CPU times less so).", "",
        "| tree | format | wall best s | wall median s | CPU best s | CPU median s |",
        "|---|---|---|---|---|---|", *lines, "",
        "CPU seconds by phase of one json diagnose (least of 3 runs per phase, after the timed rounds): "
        + "; ".join(f"{i + 1}. {name}" for i, (_, name) in enumerate(PHASE_NAMES))
        + "; then the kernels loaded after warm's first (CPU, count), and the whole process.", "",
        "| tree | " + " | ".join(str(i + 1) for i in range(len(PHASE_NAMES))) + " | kernels | total |",
        "|---|" + "---|" * (len(PHASE_NAMES) + 2), *cut, "", *facts, END])
    print(block)
    if not args.no_results:
        write_section(block, BEGIN, END, before="<!-- sim:begin -->")


if __name__ == "__main__":
    main()
