"""Helpers shared by the commands: errors, progress on stderr only on a terminal."""

from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import Iterator

import typer


def die(message: str, code: int = 2) -> "typer.Exit":
    """Print one line on stderr and return the Exit to raise."""
    typer.echo(f"moetrace: error: {message}", err=True)
    return typer.Exit(code)


class Progress:
    """A minimal progress line on stderr; silent unless stderr is a terminal."""

    def __init__(self, label: str, total: int | None = None, enabled: bool = True):
        self.label = label
        self.total = total
        self.done = 0
        self.enabled = enabled and sys.stderr.isatty()
        self._last = 0.0

    def __call__(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1:
            return
        self._last = now
        if self.total:
            pct = 100.0 * self.done / self.total
            sys.stderr.write(f"\r{self.label}: {self.done:,}/{self.total:,} ({pct:.0f}%)")
        else:
            sys.stderr.write(f"\r{self.label}: {self.done:,}")
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


@contextmanager
def progress(label: str, total: int | None = None, enabled: bool = True) -> Iterator[Progress]:
    p = Progress(label, total, enabled)
    try:
        yield p
    finally:
        p.close()


from typer.core import TyperArgument, TyperCommand, TyperOption  # noqa: E402  (typer is loaded already)


class Command(TyperCommand):
    """A command whose help reads as people write it: ``INPUT...``, ``--seed SEED``, ``--format text|json``.

    typer labels every parameter with its Python type (``INPUT <list[Path]>``,
    ``{INPUT}...``, ``--ranks <int range>``); those labels are replaced here
    by the parameter's name, or its choices.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for p in self.params:
            if isinstance(p, TyperArgument):
                many = p.nargs != 1
                name = p.display_name_raw.removesuffix("...").upper() + ("..." if many else "")
                usage = name if p.required else f"[{name}]"
                p.display_type_rich = lambda ctx: None
                p._rich_display_name = lambda name=name: name
                p._usage_display_name = lambda usage=usage: usage
            elif isinstance(p, TyperOption) and p.metavar is None and not p.is_flag:
                label = _choices(p) or p.name.upper()
                p.display_type_rich = lambda ctx, label=label: label


def _choices(p) -> str | None:
    try:
        desc = p.type_descriptor
    except AttributeError:
        return None
    if not getattr(desc, "is_choice", False):
        return None
    return "|".join(str(getattr(c, "value", c)) for c in desc.choices or ())
