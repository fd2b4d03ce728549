"""A dataset named by URL (pyarrow's file systems: file://, s3://, gs://, ...) reads as its path does.

``file://`` goes through the same pyarrow file-system code path an object
store does (listing, opening, reading by fs path), so findings and query
results by URL must equal those by path; a URL that cannot be opened, or that
names raw traces rather than a dataset, is a one-line error, exit 2.
"""

from __future__ import annotations

import json

import pytest

from analyzer.config import Config
from analyzer.engine import diagnose
from ingest.dataset import Dataset
from ingest.errors import TraceError
from ingest.location import as_location, is_url
from kernels import Params, simulate

SMALL = dict(ranks=4, cores=2, tokens=8, topk=2, hidden=4, local_experts=2)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    out = tmp_path_factory.mktemp("url") / "sim"
    simulate("classic", Params(**SMALL), faults=["invalid-expert"], seed=1, out=out)
    return out / "dataset"


def test_urls_are_told_from_paths():
    assert is_url("s3://bucket/trace") and is_url("file:///tmp/x") and is_url("gs://b/t")
    assert not is_url("/tmp/x") and not is_url("trace") and not is_url("C:/x")
    assert as_location("s3://bucket/trace") == "s3://bucket/trace"  # Path would fold the //


def test_a_dataset_by_url_reads_as_by_path(faulty):
    by_path, by_url = Dataset(faulty), Dataset(faulty.resolve().as_uri())
    assert by_url.ranks == by_path.ranks and by_url.num_rows() == by_path.num_rows()
    assert by_url.manifest == by_path.manifest
    cols = ["rank", "core", "seq", "kind", "offset", "value"]
    a, b = by_path.arrays(cols), by_url.arrays(cols)
    assert all((a[c] == b[c]).all() for c in cols)


def test_diagnose_by_url_finds_what_by_path_finds(faulty):
    by_path = diagnose(faulty, Config())
    by_url = diagnose(faulty.resolve().as_uri(), Config())
    assert [f.to_json() for f in by_url.findings] == [f.to_json() for f in by_path.findings]
    assert by_path.findings


def test_cli_diagnose_and_query_by_url(faulty, cli):
    url = faulty.resolve().as_uri()
    by_path = cli("diagnose", str(faulty), "--format", "json")
    by_url = cli("diagnose", url, "--format", "json")
    assert by_url.code == by_path.code == 1
    assert json.loads(by_url.stdout)["findings"] == json.loads(by_path.stdout)["findings"]
    q = cli("query", url, "select count(*) as n from events", "--format", "json")
    assert q.code == 0 and json.loads(q.stdout) == [{"n": Dataset(faulty).num_rows()}]


def test_query_by_url_keeps_the_sandbox(faulty, cli):
    r = cli("query", faulty.resolve().as_uri(), "select * from read_csv('/etc/passwd')")
    assert r.code == 2 and r.stderr.count("\n") == 1


@pytest.mark.parametrize("url,says", [
    ("nosuch://bucket/trace", "cannot open this URL"),
    ("file:///no/such/dataset", "must name a moetrace dataset"),
])
def test_a_bad_url_is_one_line_exit_2(cli, url, says):
    r = cli("diagnose", url)
    assert r.code == 2 and says in r.stderr and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr


def test_raw_traces_by_url_are_refused(tmp_path):
    with pytest.raises(TraceError, match="must name a moetrace dataset"):
        diagnose([(tmp_path / "a").as_uri(), (tmp_path / "b").as_uri()], Config())


def test_inside_is_the_dataset_not_a_sibling_sharing_its_name(tmp_path):
    """``ds-old/x`` is not inside ``ds`` though its path starts with it; a link to a file of the dataset,
    and one through a link to the dataset itself, are inside."""
    from ingest.location import inside

    ds, sib = tmp_path / "ds", tmp_path / "ds-old"
    ds.mkdir()
    sib.mkdir()
    (ds / "a").write_text("a")
    (sib / "x").write_text("x")
    (tmp_path / "alias").symlink_to(ds)
    real = str(ds.resolve())
    (ds / "to-sibling").symlink_to(sib / "x")
    (ds / "to-own").symlink_to(tmp_path / "alias" / "a")
    with pytest.raises(TraceError, match="outside the dataset"):
        inside(real, ds / "to-sibling")
    with pytest.raises(TraceError, match="outside the dataset"):
        inside(real, ds / ".." / "ds-old" / "x")
    assert inside(real, ds / "to-own") == str(ds / "a")
    assert inside(real, tmp_path / "alias" / "a") == str(ds / "a")
