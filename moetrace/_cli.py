"""The ``moetrace`` console script's entry point, one name that resolves both in the repository and in a wheel.

In the repository the command line is ``analyzer.cli``; an installed wheel
has it at ``moetrace.analyzer.cli`` (hatch_build.py rewrites this import
with the others), so the script names this module, which exists in both.
"""

from __future__ import annotations


def main() -> None:
    from analyzer.cli import main as run

    run()
