"""One diagnosis per stored reference trace and test process, for the tests that each diagnosed it.

tests/test_corpus.py and tests/test_oshmem.py diagnose every stored trace (tests/corpus,
tests/data/oshmem) and compare the report to its expectation and golden file;
tests/test_report_all_formats.py diagnosed the same traces again to render the report in every
format. One trace alone (corpus/unusual_atomic_barrier_block_16) took about three minutes of CPU
per diagnosis. ``report_of`` runs ``diagnose(trace)`` (the default configuration, as each of them
did) once per process and hands every test the same report; nothing renders into or changes a
report. ``group`` names the pytest-xdist group that puts a trace's tests on one worker, so the
one diagnosis serves them all there too (pyproject.toml's --dist loadgroup).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.engine import Report


@functools.cache
def report_of(trace: Path) -> "Report":
    """``diagnose(trace)``, once per test process."""
    from analyzer.engine import diagnose

    return diagnose(trace)


def group(trace: Path) -> pytest.MarkDecorator:
    """The xdist_group of every test that diagnoses the stored trace ``trace``."""
    return pytest.mark.xdist_group(f"stored-{trace.parent.name}/{trace.name}")
