"""Reporters: one module per output format, each a pure function of a Report.

``render(report, fmt, fail_on=..., color=...)`` returns the whole output as
text; the formats import lazily so the CLI pays only for the one it prints.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from analyzer.engine import Report

FORMATS = ("text", "json", "sarif", "junit", "html")


def render(report: "Report", fmt: str, *, fail_on: str | None = None, color: bool = False, **extra) -> str:
    """``extra`` goes to the format that takes it (html: ``facts``, what it reads from the trace)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    module = importlib.import_module(f"{__name__}.{fmt}")
    return module.render(report, fail_on=fail_on or report.config.fail_on, color=color, **extra)
