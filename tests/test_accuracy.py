"""The accuracy matrix as tests: every protocol x applicable fault x 5 seeds x 2 routings, each
with the full manifest and bare (lib.make_bare: only what the contract requires), and, for the
protocols with cross-rank barriers, under both barrier layouts; routes recorded where the kernel
reads expert ids (before any filter, the computed dst_rank kept) on two seeds.

Each case simulates a small run (bench/_accuracy_lib.py: shape and matching
rules), diagnoses it in-process, and checks that every injected fault that
manifested is found by its family at its place among the root causes; a clean
run must give no error or warning finding. A fault latent on its interleaving
(truth.json says the run completed correctly) must still be found when the
trace shows its hazard anyway (lib.HAZARD_FAMILIES: a missing or wrong-engine
quiet, an unreset flag, an == on a generation, an invalid expert id, where the
faulty path ran): that is what linting a kernel in CI is for. Only a latent
fault with a reason in LATENT_SKIP, or whose faulty path never ran, is
skipped. Generic over kernels.PROTOCOLS and each kernel's .faults.

Known analyzer / simulator defects are listed in KNOWN as strict xfails, so
the suite stays green, the defect stays visible, and the case flips to a
failure (XPASS) the moment it is fixed: then delete its line.
"""

from __future__ import annotations

import dataclasses
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import _accuracy_lib as lib  # noqa: E402
import _golden  # noqa: E402

# (protocol, fault, seeds or None for all, routings or None for all) -> why it fails.
KNOWN: list = []


# Why a latent fault outside lib.HAZARD_FAMILIES may go unfound: the trace cannot show what did not bite.
_NO_HANG = ("a hang fault is diagnosed from the wait it leaves stuck; latent, no wait is stuck, and the "
            "events it changed look like a correct run's")
LATENT_SKIP = {
    "wrong-slot": _NO_HANG + " (the misdirected flag was not the one a consumer needed that round)",
    "wrong-peer": _NO_HANG + " (the peer that missed the flag did not wait for it that round)",
    "rank-stop": _NO_HANG + " (the rank stopped after its last obligation: its trace ends like a finished one)",
    "capacity-skew": "no receiver went past its capacity on this routing: no row was clamped, nothing is "
                     "truncated to see",
    "head-not-returned": _NO_HANG + " (no queue into the withholding receiver overfilled its ring: no "
                         "sender ever waited for the head it kept)",
    "wrong-channel-poll": _NO_HANG + " (the tails of both channels told the same story on this routing)",
    "count-unencoded": _NO_HANG,
    "dispatch-tokens-exceeded": "no source sent more rows to one expert than the buffer holds",
}
NOT_EXECUTED = ("the faulty path never ran (truth.json executed is false, e.g. doubleplane's wrong-engine-quiet "
                "on a core with no segment big enough for SDMA): the trace holds no hazard")


BLIND = ("bare mode strips the optional fields all of this fault's evidence lies in "
         "(kernels.faults FaultSpec.evidence_in, e.g. a put's local source): the trace cannot show it")


def _skip_reason(sf) -> str | None:
    if sf.required:
        return None
    if sf.blind:
        return BLIND
    if sf.family in lib.HAZARD_FAMILIES:
        return NOT_EXECUTED if not sf.executed else None
    return LATENT_SKIP.get(sf.name)


def _known(case: lib.Case, known: list = KNOWN) -> str | None:
    for proto, fault, seeds, routings, why in known:
        if (case.protocol, case.fault) == (proto, fault) and (seeds is None or case.seed in seeds) \
                and (routings is None or case.routing in routings):
            return why
    return None


def _trace_of(case: lib.Case) -> lib.Case:
    """The run whose trace ``case`` diagnoses: the same for every manifest mode (bare strips the full one)."""
    return dataclasses.replace(case, mode="full")


def _side_by_side(cases: list[lib.Case]) -> list[lib.Case]:
    """The cases, each run's manifest modes next to each other (a serial run, ``-n 0``, then holds one
    simulated run at a time); otherwise in their order."""
    first: dict[lib.Case, int] = {}
    for c in cases:
        first.setdefault(_trace_of(c), len(first))
    return sorted(cases, key=lambda c: first[_trace_of(c)])  # stable: the modes keep lib.MODES' order


def _params():
    out = []
    # Every manifest mode (full, bare) and every barrier layout: the same roots in each; routes
    # recorded where expert ids are read on two seeds (bench/accuracy.py runs all five).
    at_read = [c for c in lib.cases(seeds=2, modes=lib.MODES, layouts=lib.LAYOUTS, routes=lib.ROUTES)
               if c.routes != "send"]
    for case in _side_by_side(lib.cases(modes=lib.MODES, layouts=lib.LAYOUTS) + at_read):
        why = _known(case)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        out.append(pytest.param(case, id=case.id, marks=[*marks, _one_worker(case)]))
    return out


def _one_worker(case: lib.Case, shape: str = "") -> pytest.MarkDecorator:
    """Under pytest-xdist (--dist loadgroup, pyproject.toml) every manifest mode of a run goes to one
    worker, so the ``simulated`` fixture simulates the run once there."""
    return pytest.mark.xdist_group(f"acc{shape}-{_trace_of(case).id}")


@pytest.fixture(scope="session")
def simulated(tmp_path_factory):
    """``get(case, shape)``: a directory holding the simulated run of ``case`` (lib.simulate_case).

    The full and the bare case of a run diagnose one trace (bare strips a copy of it), and the
    simulator is deterministic per seed, so each run is simulated once per test process, not once
    per manifest mode; each test diagnoses its own copy (lib.run_case(simulated=...)), and the
    directory goes once every mode has had it. Under pytest-xdist the modes of a run share one
    worker (``_one_worker``); were they split, each worker would simulate the run itself.
    """
    made: dict[tuple, tuple[Path, set[str]]] = {}

    def get(case: lib.Case, shape: dict | None = None) -> tuple[Path, Callable[[], None]]:
        key = (_trace_of(case), tuple(sorted((shape or lib.SHAPE).items())))
        if key not in made:
            d = tmp_path_factory.mktemp("sim")
            lib.simulate_case(case, d, shape)
            made[key] = (d, set())
        d, used = made[key]

        def done() -> None:
            used.add(case.mode)
            if used >= set(lib.MODES):
                del made[key]
                shutil.rmtree(d, ignore_errors=True)

        return d, done

    return get


# A second, larger shape: more ranks than cores per rank serve, top-4 routes, so barriers and flag
# syncs interleave differently. One seed, one routing: a smoke, not the matrix.
SHAPE2 = {**lib.SHAPE, "ranks": 8, "cores": 4, "tokens": 16, "topk": 4}
KNOWN2: list = []  # as KNOWN, for the second shape


def _params2():
    out = []
    for case in _side_by_side(lib.cases(seeds=1, routings=("skewed",), modes=lib.MODES)):
        case = lib.Case(case.protocol, case.fault, 1, case.routing, case.mode)  # seed 1: found MT202's order
        why = _known(case, KNOWN2)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        out.append(pytest.param(case, id="shape2-" + case.id, marks=[*marks, _one_worker(case, "2")]))
    return out


# The runs whose whole report must stay as stored (tests/_golden.py): every protocol x fault (and
# clean) once, in both manifest modes.
GOLDEN_CASES = frozenset(lib.cases(seeds=1, routings=("uniform",), modes=lib.MODES))


@pytest.mark.parametrize("case", _params2())
def test_accuracy_shape2(case: lib.Case, tmp_path, simulated):
    sim, done = simulated(case, SHAPE2)
    res = lib.run_case(case, tmp_path, SHAPE2, simulated=sim)
    done()
    _check(case, res)


@pytest.mark.parametrize("case", _params())
def test_accuracy(case: lib.Case, tmp_path, simulated):
    sim, done = simulated(case)
    res = lib.run_case(case, tmp_path, simulated=sim)
    done()
    if case in GOLDEN_CASES:
        _golden.check(f"accuracy-{case.id}", res.report)
    _check(case, res)


def _check(case: lib.Case, res) -> None:
    if case.fault is None:
        assert not res.reported, (f"clean {case.id} [{res.status}] gave error/warning findings:\n"
                                  + "\n".join(lib.describe(f) for f in res.reported))
        return
    assert res.faults, f"{case.id}: truth.json lists no injected fault"
    unstated = [sf.name for sf in res.faults if not sf.required and _skip_reason(sf) is None]
    assert not unstated, f"{case.id}: latent {unstated} skipped with no reason: add one to LATENT_SKIP"
    required = [sf for sf in res.faults if sf.required]
    if not required:
        pytest.skip("; ".join(f"{sf.name} not required (run {res.status}): {_skip_reason(sf)}"
                              for sf in res.faults))
    missed = [sf for sf in required if not sf.found]
    said = "\n".join(lib.describe(f) for f in (res.roots or res.reported)) or "(no error or warning finding)"
    assert not res.spurious, (f"{case.id} [{res.status}]: root causes that match no injected fault:\n"
                              + "\n".join(lib.describe(f) for f in res.spurious))
    assert not missed, (f"{case.id} [{res.status}]: " + "; ".join(
        f"{sf.name} [{sf.family}] at {sf.place}{' (latent, but its hazard is in the trace)' if sf.latent else ''}"
        f" not among the root causes" for sf in missed) + f"; reported instead:\n{said}")


def test_matcher_can_fail():
    """The place matcher rejects a finding at another rank, core or token: the matrix can miss."""
    from analyzer.finding import Evidence, Finding, Location

    f = Finding("F1", "MT501", "invalid-expert-id", "x", "error", "certain", "", Location(rank=1, core=0, launch=0),
                evidence=(Evidence("route", 1, 0, 3, "route", {"token": 2, "topk": 1}),))
    assert lib.at_place(f, {"rank": 1, "round": 0, "token": 2, "topk": 1})
    assert not lib.at_place(f, {"rank": 2, "round": 0, "token": 2, "topk": 1})
    assert not lib.at_place(f, {"rank": 1, "round": 0, "token": 3, "topk": 1})
    assert not lib.at_place(f, {"rank": 1, "core": 1})
    assert not lib.at_place(f, {"rank": 1, "round": 1})
    assert lib.at_place(f, {"rank": 1, "round": 0}, min_rounds=2)


def test_latent_policy():
    """A latent hazard that ran is required; a latent hang or a path that never ran is not."""
    def sf(family, latent=True, executed=True):
        return lib.Scored("f", family, {}, latent, False, executed=executed)

    assert sf("missing-drain").required and sf("stale-flag").required
    assert not sf("missing-drain", executed=False).required
    assert not sf("hang").required and sf("hang", latent=False).required
    assert sf("stale-flag").outcome == "missed-latent" and sf("hang").outcome == "skipped-latent"
    blind = lib.Scored("f", "missing-drain", {}, False, False, blind=True)
    assert not blind.required and blind.outcome == "skipped-blind"
