"""The accuracy matrix as tests: every protocol x applicable fault x 5 seeds x 2 routings.

Each case simulates a small run (bench/_accuracy_lib.py: shape and matching
rules), diagnoses it in-process, and checks that every injected fault that
manifested is found by its family at its place among the root causes; a clean
run must give no error or warning finding. A fault latent on its interleaving
(truth.json says the run completed correctly) is skipped: there is nothing in
the trace to find. Generic over kernels.PROTOCOLS and each kernel's .faults.

Known analyzer / simulator defects are listed in KNOWN as strict xfails, so
the suite stays green, the defect stays visible, and the case flips to a
failure (XPASS) the moment it is fixed: then delete its line.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import _accuracy_lib as lib  # noqa: E402

# (protocol, fault, seeds or None for all, routings or None for all) -> why it fails.
_GET_QUIET = ("no rule checks an SDMA get's destination being used before a quiet of the get's engine: "
              "get(engine=sdma, ub) -> quiet(engine=mte) -> write d_out (the add of the UB chunk); "
              "MT401 only covers signal-after-put and MT404 only atomics, so the lost accumulation gets "
              "no finding at all")
KNOWN = [
    ("sdma_fallback", "wrong-engine-quiet", {1, 2, 3, 4}, None, _GET_QUIET),
]


def _known(case: lib.Case) -> str | None:
    for proto, fault, seeds, routings, why in KNOWN:
        if (case.protocol, case.fault) == (proto, fault) and (seeds is None or case.seed in seeds) \
                and (routings is None or case.routing in routings):
            return why
    return None


def _params():
    out = []
    for case in lib.cases():
        why = _known(case)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        out.append(pytest.param(case, id=case.id, marks=marks))
    return out


@pytest.mark.parametrize("case", _params())
def test_accuracy(case: lib.Case, tmp_path):
    res = lib.run_case(case, tmp_path)
    if case.fault is None:
        assert not res.reported, (f"clean {case.id} [{res.status}] gave error/warning findings:\n"
                                  + "\n".join(lib.describe(f) for f in res.reported))
        return
    assert res.faults, f"{case.id}: truth.json lists no injected fault"
    manifested = [sf for sf in res.faults if not sf.latent]
    if not manifested:
        pytest.skip(f"{case.fault} latent on this interleaving (run {res.status})")
    missed = [sf for sf in manifested if not sf.found]
    said = "\n".join(lib.describe(f) for f in (res.roots or res.reported)) or "(no error or warning finding)"
    assert not missed, (f"{case.id} [{res.status}]: " + "; ".join(
        f"{sf.name} [{sf.family}] at {sf.place} not among the root causes" for sf in missed)
        + f"; reported instead:\n{said}")


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
