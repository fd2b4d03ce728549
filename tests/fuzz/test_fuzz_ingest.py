"""A bounded run of the ingest fuzzer (bench/fuzz_campaign.py runs it for millions).

Every generated trace (JSON lines plain / gzip / zstd, binary ring dumps, with
manifests and bytes mangled now and then) must be ingested with
events_in == rows readable, also through `moetrace query`, or rejected with one
located line, exit 2, nothing written; the readers alone must agree.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fuzz import gen, oracle
from fuzz.cases import FORMATS, make_case, write_case

_SETTINGS = dict(deadline=None, suppress_health_check=list(HealthCheck), database=None, derandomize=True)


def cases(fmt=None):
    return st.randoms(use_true_random=False).map(lambda rng: make_case(gen.Chooser(rng), fmt))


@settings(max_examples=150, **_SETTINGS)
@given(cases())
def test_readers_accept_or_reject_in_one_line(tmp_path_factory, files):
    d = write_case(tmp_path_factory.mktemp("fz") / "t", files)
    oracle.readers(d)


@settings(max_examples=60, **_SETTINGS)
@given(st.sampled_from(FORMATS).flatmap(lambda f: cases(f)))
def test_ingest_reads_back_whole_or_fails_in_one_line(tmp_path_factory, files):
    base = tmp_path_factory.mktemp("fz")
    d = write_case(base / "t", files)
    oracle.ingest_and_read_back(d, base / "ds")
