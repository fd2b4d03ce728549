"""Every class of bad input: one line naming file and line, exit 2, nothing left behind."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from _trace_files import Core, manifest, write_trace


def _good():
    c = Core(0, 0)
    return [c("kernel_begin", name="k"), c("put", engine="mte", peer=1, region="payload", offset=0, nbytes=64)]


def _put(**over):
    ev = {"rank": 0, "core": 0, "seq": 10, "ts": 500, "launch": 0, "kind": "put", "engine": "mte", "peer": 1,
          "region": "payload", "offset": 0, "nbytes": 64}
    ev.update(over)
    return {k: v for k, v in ev.items() if v is not None}


CASES = {
    "unknown kind": (_put(kind="teleport"), ["unknown kind", "'teleport'"]),
    "missing kind": (_put(kind=None), ["'kind' is missing"]),
    "missing field": (_put(nbytes=None), ["required field 'nbytes' is missing"]),
    "missing envelope": (_put(ts=None), ["required field 'ts' is missing"]),
    "mistyped field": (_put(offset="12"), ["'offset' must be an integer", "'12'"]),
    "mistyped bool": (_put(nbytes=True), ["'nbytes' must be an integer"]),
    "mistyped float": (_put(seq=10.5), ["'seq' must be an integer"]),
    "unknown enum": (_put(engine="warp"), ["unknown engine 'warp'"]),
    "enum not allowed": (_put(engine="all"), ["'all' is not allowed", "engine"]),
    "enum as code": (_put(engine=0), ["'engine' must be a name"]),
    "extra field": (_put(cmp="eq"), ["'cmp' is not part of a put event"]),
    "unknown rank": (_put(rank=2), ["'rank' = 2 is not a rank", "0..1"]),
    "negative rank": (_put(rank=-1), ["'rank' = -1"]),
    "unknown peer": (_put(peer=5), ["'peer' = 5 is not a rank"]),
    "unknown core": (_put(core=9), ["'core' = 9 is not a core"]),
    "unknown region": (_put(region="heap"), ["unknown region 'heap'", "payload, flags, counts"]),
    "int too big": (_put(offset=2**63), ["'offset'", "does not fit int64"]),
    "small int too big": (_put(site=2**31), ["'site'", "does not fit int32"]),
    "not an object": ("[1, 2]", ["must be a JSON object"]),
    "not json": ('{"rank": 0,', ["not valid JSON"]),
    "seq repeats": (_put(seq=2), ["seq 2 of rank 0 core 0 does not increase past 2"]),
    "seq goes back": (_put(seq=1), ["seq 1 of rank 0 core 0 does not increase past 2"]),
}


def _check_failed(res, tmp_path, out, *needles):
    assert res.code == 2, (res.code, res.stdout, res.stderr)
    err = res.stderr.strip()
    assert "\n" not in err, err
    assert "Traceback" not in res.stderr
    assert err.startswith("moetrace: error: ")
    for n in needles:
        assert n in err, (n, err)
    assert not out.exists()
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(f".{out.name}")]
    assert leftovers == []


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_event(tmp_path, case):
    bad, needles = CASES[case]
    p = write_trace(tmp_path / "trace", _good() + [bad])
    out = tmp_path / "ds"
    res = run_cli("ingest", tmp_path / "trace", "-o", out)
    _check_failed(res, tmp_path, out, f"{p}:line 3: ", *needles)


def test_bad_event_in_compressed_file(tmp_path):
    p = write_trace(tmp_path / "trace", _good() + [_put(kind="teleport")], name="e.jsonl.gz", compression="gzip")
    out = tmp_path / "ds"
    _check_failed(run_cli("ingest", p, "-o", out), tmp_path, out, f"{p}:line 3: ", "teleport")


def test_seq_clash_across_files(tmp_path):
    d = tmp_path / "trace"
    write_trace(d, _good(), name="a.jsonl")
    write_trace(d, _good(), name="b.jsonl")
    out = tmp_path / "ds"
    _check_failed(run_cli("ingest", d, "-o", out), tmp_path, out, "line", "does not increase", "a.jsonl",
                  "b.jsonl")


@pytest.mark.parametrize("mutate, needles", [
    (lambda m: m.pop("ranks"), ["manifest.json", "'ranks' is missing"]),
    (lambda m: m.update(format="other/9"), ["manifest.json", "unsupported format"]),
    (lambda m: m["regions"][0].update(role="heap"), ["manifest.json", "regions[0].role"]),
    (lambda m: m.update(ranks="two"), ["manifest.json", "'ranks' must be an integer"]),
])
def test_bad_manifest(tmp_path, mutate, needles):
    doc = manifest()
    mutate(doc)
    write_trace(tmp_path / "trace", _good(), doc=doc)
    out = tmp_path / "ds"
    _check_failed(run_cli("ingest", tmp_path / "trace", "-o", out), tmp_path, out, *needles)


def test_manifest_not_json(tmp_path):
    write_trace(tmp_path / "trace", _good())
    (tmp_path / "trace" / "manifest.json").write_text("{ nope")
    out = tmp_path / "ds"
    _check_failed(run_cli("ingest", tmp_path / "trace", "-o", out), tmp_path, out, "manifest.json:line 1",
                  "not valid JSON")


def test_inputs_disagree_on_manifest(tmp_path):
    write_trace(tmp_path / "a", _good())
    c = Core(1, 0)
    write_trace(tmp_path / "b", [c("fence")], doc=manifest(ranks=4))
    out = tmp_path / "ds"
    _check_failed(run_cli("ingest", tmp_path / "a", tmp_path / "b", "-o", out), tmp_path, out,
                  "manifest differs")


@pytest.mark.parametrize("setup, needles", [
    (lambda d: None, ["no such file"]),
    (lambda d: d.mkdir(), ["no manifest.json"]),
    (lambda d: (d.mkdir(), (d / "manifest.json").write_text(json.dumps(manifest()))), ["no event files"]),
])
def test_bad_input_paths(tmp_path, setup, needles):
    d = tmp_path / "trace"
    setup(d)
    out = tmp_path / "ds"
    _check_failed(run_cli("ingest", d, "-o", out), tmp_path, out, str(d), *needles)


def test_jsonl_without_manifest_beside_it(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_text("")
    out = tmp_path / "ds"
    _check_failed(run_cli("ingest", p, "-o", out), tmp_path, out, "no manifest.json beside")


def test_existing_output_is_kept_without_force(tmp_path):
    write_trace(tmp_path / "trace", _good())
    out = tmp_path / "ds"
    assert run_cli("ingest", tmp_path / "trace", "-o", out).code == 0
    before = sorted(p.name for p in out.rglob("*"))
    res = run_cli("ingest", tmp_path / "trace", "-o", out)
    assert res.code == 2 and "already exists" in res.stderr
    assert sorted(p.name for p in out.rglob("*")) == before


def test_failed_forced_ingest_keeps_old_dataset(tmp_path):
    write_trace(tmp_path / "trace", _good())
    out = tmp_path / "ds"
    assert run_cli("ingest", tmp_path / "trace", "-o", out).code == 0
    write_trace(tmp_path / "bad", _good() + [_put(kind="teleport")])
    res = run_cli("ingest", tmp_path / "bad", "-o", out, "--force")
    assert res.code == 2
    assert (out / "ingest.json").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".ds")] == []
