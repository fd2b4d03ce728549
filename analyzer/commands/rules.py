"""``moetrace rules`` (the registry as a table or JSON) and ``moetrace explain CODE``."""

from __future__ import annotations

import json
import textwrap
from typing import Annotated, Any, Literal

import typer

from ._common import Command, die


def _v(x: Any) -> str:
    return getattr(x, "value", x)


def rules_listing(fmt: str = "text") -> str:
    from rules import registry

    reg = registry()
    if fmt == "json":
        doc = [{"code": r.code, "name": r.name, "family": _v(r.family), "severity": _v(r.severity),
                "summary": r.summary, "options": dict(r.options)} for r in reg.values()]
        return json.dumps(doc, indent=2) + "\n"
    rows = [(r.code, r.name, _v(r.family), _v(r.severity), r.summary) for r in reg.values()]
    head = ("CODE", "NAME", "FAMILY", "SEVERITY", "SUMMARY")
    widths = [max(len(x[i]) for x in [head, *rows]) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:4], widths)) + "  " + row[4] for row in [head, *rows]]
    if not rows:
        lines.append("(no rules registered)")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def explain_text(code: str) -> str | None:
    """The rule's documentation for people: metadata, options, then the four docstring sections."""
    from rules import registry
    from rules.base import DOC_SECTIONS

    rule = registry().get(code.strip().upper())
    if rule is None:
        return None
    out = [f"{rule.code} {rule.name}", "",
           f"family:           {_v(rule.family)}",
           f"default severity: {_v(rule.severity)}",
           f"summary:          {rule.summary}"]
    if rule.options:
        out.append("options:          " + ", ".join(f"{k} = {json.dumps(v)}" for k, v in rule.options.items()))
        out.append(f"                  (set under [tool.moetrace.options.{rule.code}])")
    from analyzer.report._fmt import doc_sections

    sections = doc_sections(rule)
    for name in DOC_SECTIONS:
        body = sections.get(name)
        if body is None:
            continue
        out += ["", name, "-" * len(name), textwrap.indent(body, "  ")]
    return "\n".join(out) + "\n"


def register(app: typer.Typer) -> None:
    @app.command("rules", cls=Command)
    def rules_cmd(
        fmt: Annotated[Literal["text", "json"], typer.Option("--format", "-f", help="output format")] = "text",
    ) -> None:
        """List the rules: code, name, family, default severity, summary."""
        typer.echo(rules_listing(fmt), nl=False)

    @app.command("explain", cls=Command)
    def explain_cmd(
        code: Annotated[str, typer.Argument(help="A rule code, e.g. MT101.", show_default=False,
                                      metavar="CODE")],
    ) -> None:
        """Print a rule's documentation: what it does, why it matters, an example, its evidence."""
        text = explain_text(code)
        if text is None:
            raise die(f"unknown rule code {code!r} (moetrace rules lists them)")
        typer.echo(text, nl=False)
