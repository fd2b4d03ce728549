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
