"""`moetrace --help` must stay fast: no heavy package may load just to print help."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import run_cli

from ingest._allocator import glibc

CORPUS = Path(__file__).parent / "corpus"

HEAVY = ("numpy", "numba", "pyarrow", "duckdb", "polars")


def test_help_imports_no_heavy_package():
    code = ("import sys; sys.argv = ['moetrace', '--help']\n"
            "from analyzer.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', [m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "LOADED []" in out, out.splitlines()[-1]
    assert "diagnose" in out and "simulate" in out


# What a diagnose in text format must not import: the simulator, the other commands and reporters,
# and the packages only other commands use. Each costs start-up time on every diagnose.
NOT_FOR_DIAGNOSE = ("kernels", "polars", "duckdb", "analyzer.report.html", "analyzer.report.json",
                    "analyzer.report.sarif", "analyzer.report.junit", "analyzer.commands.simulate",
                    "analyzer.commands.demo", "analyzer.commands.query", "analyzer.commands.timeline",
                    "analyzer.commands.ingest", "analyzer.commands.rules")


def _diagnose_modules(trace: Path, fmt: str) -> tuple[list[str], list[str]]:
    """(modules a `moetrace diagnose TRACE --format FMT` process imported, kernels it loaded)."""
    code = ("import json, os, sys\n"
            f"sys.argv = ['moetrace', 'diagnose', {str(trace)!r}, '--format', {fmt!r}]\n"
            "sys.stdout = open(os.devnull, 'w')\n"
            "from analyzer.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "from ingest._jit import loaded\n"
            "print(json.dumps([sorted(sys.modules), list(loaded())]), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return tuple(json.loads(r.stderr.strip().splitlines()[-1]))


def test_diagnose_imports_only_what_it_uses():
    modules, kernels = _diagnose_modules(CORPUS / "classic_invalid_expert_9", "text")
    loaded = [m for m in NOT_FOR_DIAGNOSE if m in modules or any(x.startswith(m + ".") for x in modules)]
    assert loaded == [], loaded
    assert "analyzer.report.text" in modules and "numba" in modules
    assert kernels and len(kernels) == len(set(kernels))  # each kernel loaded once, only when used


def test_diagnose_of_a_dataset_imports_no_arrow_compute(tmp_path):
    """Reading a dataset's columns fills their nulls with numpy (ingest.column_read._filled): arrow's
    fill_null would import pyarrow.compute, ~0.04-0.08 s of every diagnose's start-up."""
    ds = tmp_path / "ds"
    assert run_cli("ingest", CORPUS / "classic_invalid_expert_9", "-o", ds).code == 0
    modules, _ = _diagnose_modules(ds, "text")
    assert "pyarrow.parquet" in modules and "pyarrow.compute" not in modules


def test_diagnose_loads_kernels_only_for_the_rules_selected():
    _, every = _diagnose_modules(CORPUS / "classic_invalid_expert_9", "text")
    code = ("import json, sys\n"
            f"sys.argv = ['moetrace', 'diagnose', {str(CORPUS / 'classic_invalid_expert_9')!r}, '--select', 'MT501']\n"
            "from analyzer.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "from ingest._jit import loaded\n"
            "print(json.dumps(list(loaded())), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    some = json.loads(r.stderr.strip().splitlines()[-1])
    assert set(some) < set(every), (some, every)


def test_console_script_flushes_the_whole_report_and_keeps_the_exit_code(tmp_path):
    """The console script ends the process without the interpreter's teardown: nothing may be lost."""
    trace = CORPUS / "classic_invalid_expert_9"
    script = "import sys; from moetrace._cli import main; sys.argv[0] = 'moetrace'; main()"
    for fmt in ("text", "json"):
        r = subprocess.run([sys.executable, "-c", script, "diagnose", str(trace), "--format", fmt],
                           capture_output=True, text=True)
        inproc = run_cli("diagnose", trace, "--format", fmt)
        assert (r.returncode, r.stdout) == (inproc.code, inproc.stdout)
        assert r.returncode == 1 and r.stdout.strip()
    out = tmp_path / "report.json"
    r = subprocess.run([sys.executable, "-c", script, "diagnose", str(trace), "--format", "json", "-o", str(out)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and json.loads(out.read_text())["findings"]
    r = subprocess.run([sys.executable, "-c", script, "diagnose", str(tmp_path / "missing")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("moetrace: error:") and len(r.stderr.splitlines()) == 1


def test_only_moetrace_own_process_freezes_objects_out_of_the_collector():
    """The command line freezes numba's objects (cheap collections after); the Python API, running
    in the caller's process, never freezes the caller's objects."""
    trace = str(CORPUS / "classic_invalid_expert_9")
    api = ("import gc, moetrace\n"
           f"with moetrace.open({trace!r}) as t:\n    t.diagnose()\n"
           "print(gc.get_freeze_count())")
    cli = ("import gc, os, sys\n"
           f"sys.argv = ['moetrace', 'diagnose', {trace!r}]\n"
           "sys.stdout = open(os.devnull, 'w')\n"
           "from analyzer.cli import main\n"
           "try:\n    main()\nexcept SystemExit:\n    pass\n"
           "print(gc.get_freeze_count(), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", api], capture_output=True, text=True, check=True)
    assert r.stdout.split()[-1] == "0"
    r = subprocess.run([sys.executable, "-c", cli], capture_output=True, text=True, check=True)
    assert int(r.stderr.split()[-1]) > 10_000


def test_warming_numba_in_moetrace_own_process_runs_no_collection():
    """numba's import and first cache load make ~100,000 long-lived objects: in moetrace's own process the
    collector is off while they are made (its passes over them cost ~0.05 s CPU), on again after the freeze."""
    code = ("import gc, sys\n"
            "from ingest._jit import own_process, warm\n"
            "own_process()\n"
            "runs = []\n"
            "gc.callbacks.append(lambda phase, info: runs.append(info['generation']) if phase == 'start' else None)\n"
            "warm()\n"
            "print(len(runs), gc.isenabled(), gc.get_freeze_count())")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    runs, enabled, frozen = r.stdout.split()
    assert (runs, enabled) == ("0", "True") and int(frozen) > 10_000, r.stdout


_REALLOCATE = ("import resource, sys, numpy as np\n"
               "if sys.argv[1] == 'own':\n"
               "    from ingest._jit import own_process\n"
               "    own_process()\n"
               "a = np.ones(32 << 20); del a\n"  # 256 MiB, freed
               "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
               "a = np.ones(32 << 20)\n"
               "print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)")


@pytest.mark.skipif(not glibc(), reason="the policy is glibc's mallopt")
def test_moetrace_own_process_reuses_freed_memory_without_page_faults():
    """A diagnose frees and allocates trace-long arrays stage after stage: in moetrace's own process the
    second 256 MiB array reuses the first's pages (no page faults), elsewhere glibc's default stands
    (the block went back to the kernel, and every page faults in again)."""
    faults = {}
    for who in ("own", "caller"):
        r = subprocess.run([sys.executable, "-c", _REALLOCATE, who], capture_output=True, text=True, check=True)
        faults[who] = int(r.stdout)
    assert faults["own"] < 16 and faults["caller"] >= 64, faults


_TRIMMED = ("import os, numpy as np\n"
            "from ingest._allocator import trim\n"
            "from ingest._jit import own_process\n"
            "own_process()\n"
            "rss = lambda: int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE') >> 20\n"
            "a = np.ones(32 << 20); kept = [np.ones(1000) for _ in range(100)]; del a\n"  # 256 MiB freed under live objects
            "before = rss(); trim()\n"
            "print(before - rss())")


@pytest.mark.skipif(not glibc(), reason="the policy is glibc's mallopt")
def test_trim_hands_back_the_memory_the_policy_kept():
    """What a window freed stays with the process for the next (above); ``trim``, which the engine calls
    after a window whose drafts outlive it amid that memory, hands it back to the kernel (MiB)."""
    r = subprocess.run([sys.executable, "-c", _TRIMMED], capture_output=True, text=True, check=True)
    assert int(r.stdout) >= 200, r.stdout


_HUGE_PAGES = ("import sys, numpy as np\n"
               "core = getattr(np, '_core', None) or np.core\n"
               "if sys.argv[1] == 'own':\n"
               "    from ingest._jit import own_process\n"
               "    own_process()\n"
               "print(core.multiarray._set_madvise_hugepage(True))")  # returns the setting it replaces


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="numpy asks for huge pages on Linux alone")
def test_moetrace_own_process_does_not_ask_for_huge_pages():
    """numpy asks the kernel for transparent huge pages for every large array; in moetrace's own process it
    does not (their first touch cost a 10 M-event diagnose 3 s of system time: ``ingest._allocator.small_pages``),
    in a caller's process numpy's default (set by NUMPY_MADVISE_HUGEPAGE) stands."""
    env = dict(os.environ, NUMPY_MADVISE_HUGEPAGE="1")
    seen = {who: subprocess.run([sys.executable, "-c", _HUGE_PAGES, who], capture_output=True, text=True,
                                check=True, env=env).stdout.strip() for who in ("own", "caller")}
    assert seen == {"own": "False", "caller": "True"}, seen
