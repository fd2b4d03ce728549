"""Typer's conversion of a command's arguments, for the values our commands take, without pydantic.

typer (0.2x with its own click) converts each parameter's value through a
pydantic ``TypeAdapter`` it builds on first use: parsing ``moetrace diagnose
TRACE`` imported pydantic and built 15 adapters (the --help flags among them),
0.1-0.15 s of CPU in a start-up whose aim is 1 s (bench/RESULTS.md, Start-up).
typer has no public way around it (``parser=`` builds an adapter too), so
``install`` seeds the parameter's lazy converter, the slot typer fills on first
use, with ``_Lean``: for the types and values our commands are given (str, int,
Path, choices of str, and lists of them) it returns what typer's adapter
returns; anything else, and every value typer would reject, goes to typer's own
converter, so errors and unusual input read exactly as typer says them.
tests/test_cli_coerce.py checks both agree.
"""

from __future__ import annotations

import os
import re
import typing
from pathlib import Path

_DEFER = object()  # not decided here: typer's own converter decides
# What pydantic reads as an int without question: no sign, spaces, underscores or leading zeros to interpret.
_INT = re.compile(r"-?(0|[1-9][0-9]{0,17})")


def install(param) -> None:
    """Give ``param`` the lean converter, where typer is the one that converts lazily through pydantic."""
    if "_runtime_param" in vars(param) and param._runtime_param is None and hasattr(param, "type_descriptor"):
        param._runtime_param = _Lean()


class _Lean:
    """Stands in typer's slot for its converter (``RuntimeParam``): ``coerce(value, param, ctx)``."""

    def coerce(self, value, param, ctx):
        got = _convert(param, value, ctx)
        if got is _DEFER:  # from now on typer's own: it builds its converter into the slot
            param._runtime_param = None
            return param.get_runtime_param().coerce(value, param=param, ctx=ctx)
        return got


def _convert(param, value, ctx):
    desc = param.type_descriptor
    info = desc.parameter_info
    if desc.file_annotation is not None or info.parser is not None:
        return _DEFER
    if param.multiple or param.nargs == -1:
        if value is None:
            return ()
        if typing.get_origin(desc.annotation) is not list or not isinstance(value, (list, tuple)):
            return _DEFER
        (item,) = typing.get_args(desc.annotation)
        out = [_leaf(item, info, v, ctx) for v in value]
        return _DEFER if any(v is _DEFER for v in out) else out
    if value is None:
        return None
    return _leaf(desc.annotation, info, value, ctx)


def _leaf(annotation, info, value, ctx):
    if typing.get_origin(annotation) is typing.Literal:
        choices = typing.get_args(annotation)
        if (not isinstance(value, str) or not info.case_sensitive or getattr(ctx, "token_normalize_func", None)
                or not all(isinstance(c, str) for c in choices)):
            return _DEFER
        return next((c for c in choices if c == value), _DEFER)
    if annotation is str:
        return value if type(value) is str else _DEFER
    if annotation is bool:
        return value if type(value) is bool else _DEFER
    if annotation is int:
        if type(value) is str and _INT.fullmatch(value):
            value = int(value)
        if type(value) is not int or info.clamp:
            return _DEFER
        if (info.min is not None and value < info.min) or (info.max is not None and value > info.max):
            return _DEFER  # typer's message for it
        return value
    if annotation is Path:
        if (not (type(value) is str and value or isinstance(value, Path)) or info.exists or info.resolve_path or info.allow_dash
                or info.writable or not (info.file_okay and info.dir_okay)
                or info.path_type not in (None, Path)):
            return _DEFER
        path = value if isinstance(value, Path) else Path(value)
        if info.readable:  # typer refuses an existing path it cannot read
            try:
                os.stat(path)
            except OSError:
                return path
            if not os.access(path, os.R_OK):
                return _DEFER
        return path
    return _DEFER
