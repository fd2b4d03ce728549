"""Shared test helpers."""

from __future__ import annotations

import io
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class CliResult:
    code: int
    stdout: str
    stderr: str


def run_cli(*args: str) -> CliResult:
    """Run ``moetrace ARGS`` in-process through the real entry point (exit codes included)."""
    from analyzer.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["moetrace", *map(str, args)]
    code = 0
    try:
        with redirect_stdout(out), redirect_stderr(err):
            main()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    finally:
        sys.argv = argv
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(autouse=True)
def _every_sarif_is_checked(monkeypatch):
    """Each SARIF document a test makes (through the CLI or the API) passes the schema and GitHub's rules."""
    from analyzer.report import sarif

    from _sarif_check import check_sarif

    made = sarif.to_sarif

    def checked(*args, **kwargs):
        doc = made(*args, **kwargs)
        check_sarif(doc)
        return doc

    monkeypatch.setattr(sarif, "to_sarif", checked)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """``--dist loadgroup`` (pyproject.toml's addopts) as pytest-xdist means it, on pytest 9 too.

    A worker tells the controller a test's group by appending ``@group`` to its node id. xdist 3.8
    writes that into ``item._nodeid``, which pytest 9 no longer reads (the id lives in ``item._id``,
    a ``NodeId``), so every group silently fell apart into single tests: a module's Ray cluster
    started once per worker, and each accuracy run simulated in both. Where xdist's own suffix is
    missing, this puts it where pytest reads it; and fails the collection if it cannot, rather than
    let the groups go unheeded again.
    """
    if not getattr(config.option, "loadgroup", False):  # set on xdist workers under --dist loadgroup
        return
    for item in items:
        names = {str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")}
        nodeid = item.nodeid
        if not names or nodeid.rfind("@") > nodeid.rfind("]"):  # no group, or xdist named it already
            continue
        want = f"{nodeid}@{'_'.join(sorted(names))}"
        if hasattr(item, "_id"):
            from _pytest.nodeid import NodeId

            item._id = NodeId.parse(want)
        if item.nodeid != want:
            raise pytest.UsageError(f"cannot put {item.nodeid}'s xdist_group into its node id: "
                                    "--dist loadgroup would not keep the group on one worker")
