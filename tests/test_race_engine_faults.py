"""The data-race and engine-limit faults end to end: the simulated defect really happens, and
the diagnosis names it as the one root (the symptoms it causes cite it)."""

from __future__ import annotations

import json

import pytest

from analyzer.engine import diagnose
from kernels import Params, simulate

SHAPE = Params(ranks=4, cores=2, tokens=8, topk=2, hidden=4, local_experts=2)


def _roots(tmp_path, protocol, fault, seed=0):
    truth = simulate(protocol, SHAPE, faults=[fault], seed=seed, out=tmp_path)
    report = diagnose(tmp_path / json.loads((tmp_path / "truth.json").read_text())["dataset"])
    loud = [f for f in report.findings if f.severity in ("error", "warning")]
    return truth, loud, [f for f in loud if f.is_root]


@pytest.mark.parametrize("protocol, fault, codes", [
    ("reduce_scatter_staged", "missing-pre-barrier", {"MT601"}),
    ("reduce_scatter_staged", "missing-post-barrier", {"MT602"}),
    ("udma_atomic", "concurrent-rma-amo", {"MT603"}),
    ("sdma_fallback", "same-chunk", {"MT604"}),
    ("unified_atomic", "float-atomic-roce", {"MT701"}),
    ("sdma_fallback", "sdma-get-in-atomic", {"MT702"}),
    ("unified_atomic", "half-atomic-udma", {"MT703"}),
    ("udma_bulk", "udma-put-unchunked", {"MT704"}),
    ("unified_atomic", "int64-atomic-a2", {"MT705"}),
])
def test_fault_is_the_only_root(tmp_path, protocol, fault, codes):
    truth, loud, roots = _roots(tmp_path, protocol, fault)
    assert truth.status != "completed", truth.outcome
    assert roots and {f.code for f in roots} <= codes, [(f.code, f.message) for f in roots]


def test_abort_is_the_root_of_the_trapped_ranks_and_their_waiters(tmp_path):
    """A RoCE float atomic traps the rank: MT103 (stopped) and the stuck waits cite MT701."""
    truth, loud, roots = _roots(tmp_path, "unified_atomic", "float-atomic-roce", seed=0)
    assert truth.status in ("hung", "aborted")
    stopped = [f for f in loud if f.code == "MT103"]
    assert stopped and all(f.caused_by for f in stopped)
    assert {f.code for f in roots} == {"MT701"}


def test_int64_atomic_on_a2_aborts_at_the_mte_peer(tmp_path):
    """On A2 (named by the manifest, no RoCE in its map) an int64 add traps at the first MTE peer;
    MT103 on every stopped rank cites MT705."""
    truth, loud, roots = _roots(tmp_path, "unified_atomic", "int64-atomic-a2", seed=0)
    manifest = json.loads((tmp_path / "dataset" / "manifest.json").read_text())
    assert manifest["platform"] == "A2" and "roce" not in {e for row in manifest["transport"] for e in row}
    assert truth.status == "aborted" and len(truth.outcome["aborted"]) == SHAPE.ranks
    stopped = [f for f in loud if f.code == "MT103"]
    assert stopped and all(f.caused_by for f in stopped)
    assert {f.code for f in roots} == {"MT705"}


def test_clean_unified_atomic_stays_on_ascend950(tmp_path):
    t = simulate("unified_atomic", SHAPE, seed=0, out=tmp_path)
    manifest = json.loads((tmp_path / "dataset" / "manifest.json").read_text())
    assert t.status == "completed" and manifest["platform"] == "Ascend950"
    assert "roce" in {e for row in manifest["transport"] for e in row}


def test_udma_engine_cuts_a_request_at_256_mb():
    """The simulated UDMA engine moves a request's first 256 MB; MTE, and UDMA requests within the
    limit, move whole. The window is kept in 4 MB blocks."""
    from kernels.sim.machine import Machine, RegionSpec
    from kernels.sim.memory import UDMA_MAX_REQUEST
    from ingest.contract import Engine, Role

    block = 1 << 20  # int32 elements: 4 MB
    m = Machine(2, 1, [RegionSpec("buf", Role.PAYLOAD, 3 * 96 * block, block=block)], seed=0)
    c = m.core(0, 0)
    over = UDMA_MAX_REQUEST // 4 + 32 * block  # 384 MB
    m.put(c, Engine.UDMA, 1, 0, [0], 7, over)
    m.put(c, Engine.UDMA, 1, 0, [96 * block], 8, UDMA_MAX_REQUEST // 4)
    m.put(c, Engine.MTE, 1, 0, [192 * block], 9, over)
    m.heap.complete(c, Engine.ALL)
    buf = m.heap.mem[0][1]
    assert len(buf) == 3 * 96
    assert (buf[:64] == 7).all() and (buf[64:96] == 0).all()
    assert (buf[96:160] == 8).all() and (buf[160:192] == 0).all()
    assert (buf[192:] == 9).all()


def test_sdma_get_writes_plainly_under_atomic_mode():
    """The simulator: only MTE gets accumulate in atomic mode (no inline reduce elsewhere)."""
    clean = simulate("sdma_fallback", SHAPE, seed=1)
    bad = simulate("sdma_fallback", SHAPE, faults=["sdma-get-in-atomic"], seed=1)
    assert clean.status == "completed" and bad.status == "lost_accumulation"


def test_engine_drops_an_amo_concurrent_with_a_put():
    from kernels.sim.machine import Machine, RegionSpec
    from ingest.contract import Engine, Op, Role

    m = Machine(2, 1, [RegionSpec("acc", Role.OUTPUT, 4), RegionSpec("stage", Role.PAYLOAD, 4)], seed=0)
    c = m.core(0, 0)
    m.put(c, Engine.UDMA, 1, 1, [0], 5, 1)
    m.amo(c, Engine.UDMA, 1, 0, [0], Op.ADD, 3)
    m.heap.complete(c, Engine.UDMA, 1)
    assert int(m.heap.mem[0][1][0]) == 0 and int(m.heap.mem[1][1][0]) == 5
    m.amo(c, Engine.UDMA, 1, 0, [0], Op.ADD, 3)  # alone: lands
    m.heap.complete(c, Engine.UDMA, 1)
    assert int(m.heap.mem[0][1][0]) == 3
