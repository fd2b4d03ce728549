"""Count the work a diagnosis does, to test its complexity without timing it.

Work is (a) elements touched by numpy in the rules and the analyzer: every
array those modules create or read from the trace is a ``Counted`` view, so
each ufunc (a whole-array mask ``g == gid`` included), fancy index and numpy
function on it adds the sizes of its array operands; and (b) Python lines
executed in rules/ and analyzer/ (a loop over findings or nodes per finding).
The numba kernels are opaque: they are loops written once over their inputs,
and their outputs are counted as soon as Python touches them.
"""

from __future__ import annotations

import sys
import types
from contextlib import contextmanager
from pathlib import Path

import numpy

import analyzer
import rules

ROOT = Path(__file__).resolve().parent.parent
# The packages as imported (a checkout on PYTHONPATH may stand in for this one).
_WATCHED = tuple(str(Path(p.__file__).parent) + "/" for p in (rules, analyzer))


class Tally:
    elements = 0
    lines = 0

    @property
    def total(self) -> int:
        return self.elements + self.lines


_tally: Tally | None = None


def _add(n: int) -> None:
    if _tally is not None:
        _tally.elements += int(n)


def _plain(x):
    return x.view(numpy.ndarray) if isinstance(x, Counted) else x


def _wrap(x):
    if type(x) is numpy.ndarray:
        return x.view(Counted)
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    if isinstance(x, list):
        return [_wrap(v) for v in x]
    return x


def _sizes(args) -> int:
    n = 0
    for a in args:
        if isinstance(a, numpy.ndarray):
            n += a.size
        elif isinstance(a, (list, tuple)):
            n += sum(v.size for v in a if isinstance(v, numpy.ndarray))
    return n


class Counted(numpy.ndarray):
    def __array_ufunc__(self, ufunc, method, *inputs, **kw):
        _add(_sizes(inputs))
        if "out" in kw:
            kw["out"] = tuple(_plain(o) for o in kw["out"])
        return _wrap(getattr(ufunc, method)(*(_plain(i) for i in inputs), **kw))

    def __array_function__(self, func, types_, args, kwargs):
        # A binary search touches log(n) of the sorted array: count the needles only.
        _add(_sizes(args[1:] if func is numpy.searchsorted else args))
        args = tuple(_plain(a) if not isinstance(a, (list, tuple)) else type(a)(_plain(v) for v in a)
                     for a in args)
        kwargs = {k: _plain(v) for k, v in kwargs.items()}
        return _wrap(func(*args, **kwargs))

    def __getitem__(self, index):
        if isinstance(index, numpy.ndarray):
            _add(index.size)
        elif isinstance(index, tuple):
            _add(_sizes(index))
        return _wrap(numpy.ndarray.__getitem__(self.view(numpy.ndarray), _unwrap_index(index)))


def _unwrap_index(index):
    if isinstance(index, tuple):
        return tuple(_plain(i) for i in index)
    return _plain(index)


class _CountingNumpy(types.ModuleType):
    """``numpy`` as a module sees it: functions return ``Counted`` arrays."""

    def __init__(self):
        super().__init__("numpy")

    def __getattr__(self, name):
        attr = getattr(numpy, name)
        if callable(attr) and not isinstance(attr, (type, numpy.ufunc)):
            def call(*a, **k):
                _add(_sizes(a[1:] if attr is numpy.searchsorted else a))
                return _wrap(attr(*a, **k))
            return call
        return attr


def _tracer(frame, event, arg):
    if not frame.f_code.co_filename.startswith(_WATCHED):
        return None

    def local(frame, event, arg):
        if event == "line" and _tally is not None:
            _tally.lines += 1
        return local
    return local


@contextmanager
def counting(monkeypatch):
    """Count the work done inside the block into the ``Tally`` yielded."""
    global _tally
    import rules.trace as rt

    fake = _CountingNumpy()
    for name, mod in list(sys.modules.items()):
        if (name.startswith(("rules", "analyzer")) and mod is not None
                and getattr(mod, "np", None) is numpy):
            monkeypatch.setattr(mod, "np", fake)
    col = rt.TraceView.col
    monkeypatch.setattr(rt.TraceView, "col", lambda self, name: _wrap(col(self, name)))
    _tally = tally = Tally()
    sys.settrace(_tracer)
    try:
        yield tally
    finally:
        sys.settrace(None)
        _tally = None
