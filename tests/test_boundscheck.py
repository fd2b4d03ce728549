"""The rule fixtures' diagnoses with numba's bounds checking on, in a subprocess.

Under NUMBA_BOUNDSCHECK=1 a kernel indexing past an array raises IndexError
instead of reading garbage (or crashing the process), so the fixtures' checks
also catch an out-of-bounds read that happened to give the right answer.
Every kernel compiles again with the flag (into its own cache,
tests/_boundscheck.py), so the default suite runs a representative subset:
each rule's first fire fixture and first quiet fixture, plus a probe that the
flag is in effect. ``MOETRACE_BOUNDSCHECK=all uv run pytest tests/test_boundscheck.py``
runs every fixture so.
"""

from __future__ import annotations

import os
import subprocess
import sys

from _boundscheck import ROOT, boundscheck_env
from _rule_cases import all_fixtures, cases, rule_codes


def _subset() -> list[str]:
    """Per rule, its first fire and first quiet case (as test_rule_fixtures ids)."""
    ids = []
    for code in rule_codes():
        for prefix in ("fire_", "quiet_"):
            first = next((name for name in sorted(cases(code)) if name.startswith(prefix)), None)
            if first is not None:
                ids.append(f"{code}/{first}")
    return ids


def test_rule_fixtures_under_boundscheck():
    every = os.environ.get("MOETRACE_BOUNDSCHECK") == "all"
    tests = ["tests/test_rule_fixtures.py"] if every else \
        [f"tests/test_rule_fixtures.py::test_rule_fixture[{i}]" for i in _subset()]
    # -n 0: one process (the suite around it already keeps every CPU busy; pyproject.toml's addopts).
    res = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0",
                          "tests/_boundscheck_probe.py", *tests],
                         env=boundscheck_env(), cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    # The probe ran, and every selected fixture: nothing deselected or skipped.
    want = 1 + (len(all_fixtures()) if every else len(tests))
    assert f"{want} passed" in res.stdout, res.stdout[-2000:]
