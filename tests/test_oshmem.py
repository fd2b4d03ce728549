"""The classic dispatch/combine on a real one-sided runtime (Open MPI's OpenSHMEM
over UCX, examples/oshmem/), instrumented with kernels/device/moetrace.h.

Each scenario is built with oshcc and run with oshrun on 4 PEs with its fault;
the binary ring dumps and the manifest the host wrote (nothing the docs call
optional) are diagnosed, and the injected root cause (tests/data/oshmem/
<scenario>/expect.json) must be found at its rank (and core, where it has one),
with no other root at error or warning; the clean and wrapped runs must give no
error or warning at all. The same assertions run on the stored dumps of each
scenario, so machines without Open MPI diagnose real-runtime traces too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import _golden
from _stored_reports import group, report_of
from conftest import ROOT

DATA = ROOT / "tests" / "data" / "oshmem"
RUN = ROOT / "examples" / "oshmem" / "run.sh"
SCENARIOS = sorted(p.name for p in DATA.iterdir() if (p / "expect.json").is_file())
RANKS = 4
REPORTED = ("error", "warning")
# What docs/trace-format.md requires of a region; the optional annotations (reset, monotonic,
# slot_words, index) are what a user's manifest need not have, so these traces do without them.
REGION_KEYS = {"name", "role", "elem_bytes", "length"}

HAVE_OSHMEM = shutil.which("oshcc") is not None and shutil.which("oshrun") is not None
needs_oshmem = pytest.mark.skipif(
    not HAVE_OSHMEM, reason="Open MPI's OpenSHMEM is not installed (no oshcc / oshrun on PATH; "
    "Debian: apt-get install openmpi-bin libopenmpi-dev)")
# The real runs share one pytest-xdist worker: the scenarios are built once (build_dir), and two
# 4-PE runs never compete for the CPUs (a hang scenario waits on its own timeout).
real_runs = pytest.mark.xdist_group("oshmem-real")


def _expect(scenario: str) -> dict:
    return json.loads((DATA / scenario / "expect.json").read_text())


def _statuses(out: Path) -> dict[int, str | None]:
    """Each PE's marker: 'ok', 'wrong N', 'hang', or None where the PE died before writing one."""
    return {r: (out / f"rank{r}.status").read_text().strip() if (out / f"rank{r}.status").exists() else None
            for r in range(RANKS)}


def _check_runtime(exp: dict, status: dict[int, str | None]) -> None:
    """The fault really bit the running program the way the scenario says."""
    what = exp["runtime"]
    if what == "completed":
        assert set(status.values()) == {"ok"}, status
    elif what == "wrong output":
        assert all(s is not None and s != "hang" for s in status.values()), status
        assert any(s.startswith("wrong") for s in status.values()), status
    elif what == "hang":
        assert set(status.values()) == {"hang"}, status
    elif what == "died":
        dead = exp["root"]["rank"]
        assert status[dead] is None, status
        assert {s for r, s in status.items() if r != dead} == {"hang"}, status
    else:
        raise AssertionError(f"unknown runtime outcome {what!r}")


def _where(f) -> str:
    loc = f.location
    return f"{f.code}@rank{loc.rank}/core{loc.core}/launch{loc.launch}{'' if f.is_root else '(symptom)'}"


def _check_diagnosis(trace: Path, exp: dict, golden: str | None = None, report=None) -> None:
    """``report``: diagnose(trace) already made (a stored run's, _stored_reports.report_of)."""
    from analyzer.engine import diagnose

    report = diagnose(trace) if report is None else report
    if golden:
        _golden.check(golden, report)
    reported = [f for f in report.findings if f.severity in REPORTED]
    roots = [f for f in reported if f.is_root]
    want = exp["root"]
    if want is None:
        assert not reported, f"{exp['scenario']}: clean run reported {[_where(f) for f in reported]}"
        return
    hit = [f for f in roots if f.code == want["code"] and f.location.rank == want["rank"]
           and (want["core"] is None or f.location.core == want["core"])]
    others = [_where(f) for f in roots if f not in hit]
    assert hit, f"{exp['scenario']}: no {want} root; roots: {[_where(f) for f in roots]}"
    assert not others, f"{exp['scenario']}: roots besides {want}: {others}"


def _check_manifest(trace: Path) -> None:
    doc = json.loads((trace / "manifest.json").read_text())
    assert all(set(r) == REGION_KEYS for r in doc["regions"]), doc["regions"]
    assert set(doc["params"]) <= {"tokens", "topk", "num_experts", "local_experts"}, doc["params"]


def _lost(trace: Path, tmp: Path) -> int:
    from ingest.run import ingest

    return ingest([trace], tmp / "lost.ds").lost


@pytest.fixture(scope="module")
def build_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("oshmem-build")


@needs_oshmem
@real_runs
def test_run_script_lists_the_stored_scenarios():
    out = subprocess.run([str(RUN), "--list"], check=True, capture_output=True, text=True).stdout.split()
    assert sorted(out) == SCENARIOS


@needs_oshmem
@real_runs
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_real_run_is_diagnosed(scenario, build_dir, tmp_path):
    out = tmp_path / scenario
    env = {**os.environ, "MOE_BUILD": str(build_dir)}
    res = subprocess.run([str(RUN), scenario, str(out)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    exp = _expect(scenario)
    if exp["repeatable"]:
        _check_runtime(exp, _statuses(out))
    _check_manifest(out)
    if scenario == "wrap":
        assert _lost(out, tmp_path) > 0, "the small rings must really wrap"
    _check_diagnosis(out, exp)


@pytest.mark.parametrize("scenario", [pytest.param(s, marks=group(DATA / s)) for s in SCENARIOS])
def test_stored_real_run_is_diagnosed(scenario, tmp_path):
    trace = DATA / scenario
    exp = _expect(scenario)
    assert sorted(trace.glob("*.mtr")), f"{trace}: no dumps stored (examples/oshmem/store_test_data.sh)"
    _check_runtime(exp, _statuses(trace))  # what the stored run did, as the scenario says
    _check_manifest(trace)
    if scenario == "wrap":
        assert _lost(trace, tmp_path) > 0, "the stored small rings must have wrapped"
    _check_diagnosis(trace, exp, f"oshmem-{scenario}", report_of(trace))  # shared with test_report_all_formats


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_stored_real_run_is_diagnosed_without_params(scenario, tmp_path):
    """The same dumps with the manifest's optional `params` gone too: only what the contract requires."""
    trace = tmp_path / scenario
    shutil.copytree(DATA / scenario, trace)
    doc = json.loads((trace / "manifest.json").read_text())
    assert doc.pop("params", None), "the stored manifest names the kernel's params"
    (trace / "manifest.json").write_text(json.dumps(doc))
    _check_diagnosis(trace, _expect(scenario))
