"""``moetrace simulate`` and ``moetrace demo`` through the real entry point."""

from __future__ import annotations

import json

from kernels.api import PROTOCOLS
from kernels.faults import FAULTS


def test_help_documents_every_protocol_and_fault(cli):
    r = cli("simulate", "--help")
    assert r.code == 0
    for name in PROTOCOLS:
        assert name in r.stdout
    for f in FAULTS.values():
        assert f.name in r.stdout and f.family in r.stdout


def test_help_text_agrees_with_kernel_docs():
    from analyzer.commands.simulate import PROTOCOL_HELP
    assert set(PROTOCOL_HELP) == set(PROTOCOLS)
    for name, cls in PROTOCOLS.items():
        assert PROTOCOL_HELP[name] == cls.doc


def test_simulate_writes_dataset_and_truth(cli, tmp_path):
    r = cli("simulate", "--protocol", "classic", "--ranks", "4", "--cores", "2", "--tokens", "8",
            "--fault", "invalid-expert", "--at", "rank=1,round=0,token=2,topk=0", "--format", "json",
            "-o", tmp_path)
    assert r.code == 0, r.stderr
    truth = json.loads(r.stdout)
    assert truth["outcome"]["status"] == "hung"
    assert json.loads((tmp_path / "truth.json").read_text()) == truth
    assert (tmp_path / "dataset" / "manifest.json").is_file()
    man = json.loads((tmp_path / "dataset" / "manifest.json").read_text())
    assert man["params"]["num_experts"] == 8 and man["sites"]
    assert {r["name"] for r in man["regions"]} >= {"ready", "count", "combine_status"}


def test_simulate_text_and_bad_input(cli, tmp_path):
    r = cli("simulate", "--protocol", "reduce_scatter", "--rounds", "2", "-o", tmp_path / "a")
    assert r.code == 0 and "completed" in r.stdout
    assert cli("simulate", "--protocol", "bogus", "-o", tmp_path / "b").code == 2
    assert cli("simulate", "--protocol", "classic", "--fault", "same-chunk", "-o", tmp_path / "c").code == 2
    assert cli("simulate", "--protocol", "classic", "--at", "rank", "-o", tmp_path / "d").code == 2


def test_demo_hangs_in_combine(cli, tmp_path):
    r = cli("demo", "-o", tmp_path)
    assert "hung" in r.stdout and "stuck wait" in r.stdout and "combine_status" in r.stdout
    assert r.code == 0 and r.stdout.rstrip().endswith("demo exit 0")


def test_fused_capacity_skew_is_diagnosed_at_its_receiver(cli, tmp_path):
    r = cli("simulate", "--protocol", "fused", "--ranks", "4", "--cores", "2", "--tokens", "8",
            "--fault", "capacity-skew", "--at", "rank=2,local_expert=1,round=0", "--format", "json",
            "-o", tmp_path)
    assert r.code == 0, r.stderr
    truth = json.loads(r.stdout)
    assert truth["outcome"]["status"] == "wrong_output" and truth["faults"][0]["manifested"]
    d = cli("diagnose", tmp_path / "dataset", "-f", "json")
    found = json.loads(d.stdout)["findings"]
    hits = [f for f in found if f["code"] == "MT301"]
    assert hits and all(f["root_cause"] for f in hits)
    assert {(f["location"]["rank"], f["extra"]["local_expert"]) for f in hits} == {(2, 1)}
