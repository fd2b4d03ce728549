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
    "data-race": {"wrong_output", "lost_accumulation"},
    # An abort traps the rank (its peers hang, or nobody waited on it); no inline reduce loses sums;
    # a UDMA request cut at the engine's limit leaves the data short.
    "engine-limit": {"hung", "aborted", "lost_accumulation", "wrong_output"},
}
# Faults whose documented consequence spans two outcomes: a raw count hangs where it is 0 and
# hands its receiver no rows where it is n > 0; a receiver polling another channel's tail waits
# for rows that never come or reads rows not written yet.
FAULT_EXPECT = {"count-unencoded": {"hung", "wrong_output"}, "wrong-channel-poll": {"hung", "wrong_output"}}
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
            assert t.status in FAULT_EXPECT.get(fault, EXPECT[fam]), (seed, t.outcome)
            assert f["manifested"] and not f["latent"]
            if t.status == "hung":
                assert t.outcome["stuck"]
            elif t.status == "aborted":
                assert t.outcome["aborted"]
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


# ---- fused (dispatch_gmm_combine): the silent clamp and per-fault manifestation ----------

def _run(protocol, params, **kw):
    """simulate(), also handing back the kernel object (its inputs and computed output)."""
    from kernels import api
    holder, orig = {}, api._outcome

    def spy(kern, m, res):
        holder["k"] = kern
        return orig(kern, m, res)
    api._outcome = spy
    try:
        t = simulate(protocol, params, **kw)
    finally:
        api._outcome = orig
    return t, holder["k"]


@pytest.mark.parametrize("routing", ["uniform", "skewed"])
def test_capacity_skew_drops_exactly_the_rows_past_capacity(routing):
    import numpy as np

    from kernels.reference import capacity_keep, moe_combine
    p = P.with_(routing=routing)
    for seed in range(4):
        t, k = _run("fused", p, faults=["capacity-skew"], seed=seed)
        pl = t.faults[0]["place"]
        inp = k.inputs(pl["round"])
        keep = capacity_keep(inp.ids, p.num_experts, k.cap)
        dropped = np.argwhere(~keep)
        assert len(dropped), "the skew must really exceed the capacity"
        # Only the placed (receiver rank, local expert) overflows.
        assert set(inp.ids[~keep].tolist()) == {pl["rank"] * p.local_experts + pl["local_expert"]}
        lossy = moe_combine(inp.x, inp.ids, inp.scales, p.local_experts, capacity_keep=keep)
        for r in range(p.ranks):
            assert np.array_equal(k.got[(pl["round"], r)], lossy[r])  # the clamped rows are just missing
        wrong = {(w["rank"], w["row"]) for w in t.outcome["wrong_rows"]}
        assert t.status == "wrong_output" and wrong
        assert wrong <= {(int(r), int(tok)) for r, tok, _ in dropped}
        assert t.faults[0]["manifested"] and t.faults[0]["attributed"]


def test_fused_manifestation_is_per_fault():
    big = P.with_(capacity=P.ranks * P.tokens)  # room for every row: the skew cannot clamp
    t = simulate("fused", big, faults=["capacity-skew"], seed=1)
    assert t.status == "completed" and t.faults[0]["latent"] and t.faults[0]["executed"]
    t = simulate("fused", big, faults=["capacity-skew", "invalid-expert"], seed=1,
                 at=[{"rank": 2, "local_expert": 0, "round": 0}, {"rank": 1, "round": 0, "token": 3, "topk": 0}])
    assert t.status == "hung"
    skew, bad = t.faults
    assert skew["latent"] and not skew["manifested"]
    assert bad["manifested"] and bad["attributed"]
    assert any(s["rank"] == 1 and s["region"] == "combine_status" and s["slot"] == 3 * P.topk
               for s in t.outcome["stuck"])


def test_fused_small_capacity_without_fault_is_lossy_not_hung():
    t = simulate("fused", P.with_(capacity=2), seed=0)
    assert t.status == "wrong_output" and t.outcome["wrong_count"] > 0
