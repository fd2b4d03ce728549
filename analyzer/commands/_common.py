"""Helpers shared by the commands: errors, progress bars on stderr only on a terminal, help labels."""

from __future__ import annotations

import sys

import typer


def die(message: str, code: int = 2) -> "typer.Exit":
    """Print one line on stderr and return the Exit to raise."""
    typer.echo(f"moetrace: error: {message}", err=True)
    return typer.Exit(code)


# What the engine and ingest report (``progress(phase, n)``): phase -> (bar, whether n is the bar's total).
_PHASES = {"read": ("events read", False), "write": ("rows written", False),
           "windows": ("windows diagnosed", True), "window": ("windows diagnosed", False),
           "rules": ("rules run", True), "rule": ("rules run", False)}


class Bars:
    """Progress bars on stderr through ``rich.progress``, only when stderr is a terminal.

    On a pipe or a file nothing is written and rich is never imported: stdout
    stays machine-readable and a CI log gets no carriage returns.  Bars are
    transient (cleared when the work ends).  ``bars(phase, n)`` is the
    callback the engine and ingest take.
    """

    def __init__(self, enabled: bool = True, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and _isatty(self.stream)
        self._bars = None
        self._tasks: dict[str, int] = {}

    def __enter__(self) -> "Bars":
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._bars = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), console=Console(file=self.stream), transient=True)
            self._bars.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._bars is not None:
            self._bars.stop()
            self._bars = None

    def __call__(self, phase: str, n: int) -> None:
        if self._bars is None or phase not in _PHASES:
            return
        label, is_total = _PHASES[phase]
        task = self._tasks.get(label)
        if task is None:
            task = self._tasks[label] = self._bars.add_task(label, total=None)
        if is_total:
            self._bars.update(task, total=n)
        else:
            self._bars.advance(task, n)


def _isatty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption  # noqa: E402  (typer is loaded already)

from ._coerce import install  # noqa: E402


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

    def get_params(self, ctx):
        return _lean(super().get_params(ctx))


class Group(TyperGroup):
    """The root group: its --help converted as a command's parameters are (``_lean``)."""

    def get_params(self, ctx):
        return _lean(super().get_params(ctx))


def _lean(params):
    """``params``, each converted without pydantic where typer's adapter would give the same (``_coerce``).

    Here, not at construction: typer adds each command's --help on first use."""
    for p in params:
        install(p)
    return params


def _choices(p) -> str | None:
    try:
        desc = p.type_descriptor
    except AttributeError:
        return None
    if not getattr(desc, "is_choice", False):
        return None
    return "|".join(str(getattr(c, "value", c)) for c in desc.choices or ())
