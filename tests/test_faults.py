"""Every fault produces its consequence in the simulated run (asserted on the outcome).

The outcome is computed from the simulated memory against the numpy reference
(wrong rows / lost accumulation) or from the scheduler (hang); a fault that can
miss on an interleaving must bite on at least one of a few seeds and be marked
latent exactly when the outcome equals the clean one.
"""

from __future__ import annotations

import pytest

from kernels.api import PROTOCOLS, simulate
from kernels.base import Params
from kernels.faults import FAULTS

P = Params(ranks=4, cores=4, tokens=16, topk=2, hidden=4, local_experts=2)
SHAPES = {"doubleplane": P.with_(local_experts=1, tokens=24, sdma_threshold=2)}

EXPECT = {
    "hang": {"hung"},
    "invalid-expert-id": {"hung"},
    "stale-flag": {"hung", "wrong_output"},
    "missing-drain": {"wrong_output", "lost_accumulation"},
    "capacity-truncation": {"wrong_output"},
}
# A latent hazard on every interleaving of this protocol (see the fault's doc).
ALWAYS_LATENT = {("classic", "ready-not-reset"), ("doubleplane", "ready-not-reset")}

CASES = [(p, f) for p in sorted(PROTOCOLS) for f in PROTOCOLS[p].faults]


@pytest.mark.parametrize("protocol,fault", CASES)
def test_fault_consequence(protocol, fault):
    fam = FAULTS[fault].family
    outcomes = []
    for seed in range(6):
        t = simulate(protocol, SHAPES.get(protocol, P), faults=[fault], seed=seed)
        f = t.faults[0]
        assert f["family"] == fam
        if t.status == "completed":
            assert f["latent"] and not f["manifested"]
        else:
            assert t.status in EXPECT[fam], (seed, t.outcome)
            assert f["manifested"] and not f["latent"]
            if t.status == "hung":
                assert t.outcome["stuck"]
            else:
                assert t.outcome["wrong_count"] > 0
        outcomes.append(t.status)
    if (protocol, fault) in ALWAYS_LATENT:
        assert set(outcomes) == {"completed"}
    else:
        assert set(outcomes) - {"completed"}, f"{fault} never bit on {protocol}: {outcomes}"


def test_combined_stale_ready_and_count_bite():
    bad = [simulate("classic", P.with_(rounds=2), faults=["ready-not-reset", "count-not-reset"],
                    at={"rank": 1, "round": 0}, seed=s).status for s in range(6)]
    assert set(bad) - {"completed"}


def test_placement_from_at_is_honoured():
    t = simulate("classic", P, faults=["invalid-expert"], at={"rank": 2, "round": 0, "token": 3, "topk": 1}, seed=0)
    assert t.faults[0]["place"] == {"rank": 2, "round": 0, "token": 3, "topk": 1}
    assert t.status == "hung"
    assert {s["rank"] for s in t.outcome["stuck"]} == {2}
    assert t.outcome["stuck"][0]["slot"] == 3 * P.topk + 1


def test_unknown_or_inapplicable_fault_rejected():
    with pytest.raises(ValueError):
        simulate("classic", P, faults=["nope"])
    with pytest.raises(ValueError):
        simulate("classic", P, faults=["same-chunk"])
