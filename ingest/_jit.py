"""Lazy numba: kernels are plain functions until first called.

``moetrace --help`` must not pay numba's import (about a second), so a kernel
module only imports numba inside ``kernel``'s first call. Compiled code is
cached on disk (``cache=True``): a second run compiles nothing, but loading a
kernel from the cache still costs a few ms each, so each kernel is loaded
only when first called (``loaded()`` names those this process loaded). It
lives in ``ingest`` (the lowest layer that compiles kernels); ``rules._jit``
re-exports it.
"""

from __future__ import annotations

import functools
import gc
import os
from typing import Callable

_loaded: list[str] = []  # module.name of each kernel compiled or loaded here, in order
_warmed: list[bool] = []
_own: list[bool] = []  # set by own_process()


def kernel(fn: Callable) -> Callable:
    """Decorate a module-level function to be compiled with numba on first use."""
    compiled: list[Callable] = []

    @functools.wraps(fn)
    def call(*args):
        if not compiled:
            import numba

            _compile_helpers(fn, numba)
            compiled.append(numba.njit(cache=True, nogil=True)(fn))
            _loaded.append(f"{fn.__module__}.{fn.__name__}")
        try:
            return compiled[0](*args)
        except Exception as e:  # noqa: BLE001 - only a cache another version of the module wrote is handled
            if not _from_cache(e):
                raise
            import numba

            _forget_cache(compiled[0])
            compiled[0] = numba.njit(cache=True, nogil=True)(fn)
            return compiled[0](*args)

    call.py_func = fn  # the pure-Python original, for debugging and tests
    return call


def _from_cache(err: BaseException) -> bool:
    """Whether ``err`` was raised reading numba's on-disk cache.

    numba names a kernel's cache files by its module and line, and unpickles the index (the types of
    each cached signature) before it checks that the source is the one it was built from. A cache an
    older version of the module left (a source edit, a package upgrade: pip does not remove the files
    numba wrote) can then name a type that no longer exists: an AttributeError from the unpickling.
    """
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename.endswith(os.path.join("numba", "core", "caching.py")):
            return True
        tb = tb.tb_next
    return False


def _forget_cache(dispatcher) -> None:
    """Remove the kernel's cache index, so that it compiles afresh and writes a new one (numba's internals:
    where they are not as read here, the index stays and the kernel still compiles)."""
    try:
        os.remove(dispatcher._cache._cache_file._index_path)
    except (AttributeError, OSError):
        pass


def helper(fn: Callable) -> Callable:
    """Mark a module-level function that kernels call: compiled by numba when the first kernel calling it is.

    Numba calls only compiled functions from a kernel, and ``kernel`` is a Python
    wrapper; so a helper stays plain Python (numba not imported) until then, and
    is replaced in its module by its compiled form (still callable from Python).
    It is inlined into each kernel that calls it: a real call passes every array
    as a struct and counts references to it, which in the JSON-lines scanner's
    name lookup (12 arrays, ~5 calls a line) cost ~0.1 us an event.
    """
    fn._moetrace_helper = True
    return fn


def _compile_helpers(fn: Callable, numba) -> None:
    """Compile the helpers ``fn`` names (and those they name) in place in their module."""
    names = fn.__globals__
    for name in fn.__code__.co_names:
        h = names.get(name)
        # A helper an earlier kernel compiled is a dispatcher now (it carries the marker too): leave it.
        if getattr(h, "_moetrace_helper", False) and not hasattr(h, "py_func"):
            _compile_helpers(h, numba)
            names[name] = numba.njit(cache=True, nogil=True, inline="always")(h)


def loaded() -> tuple[str, ...]:
    """The kernels this process has compiled or loaded from the cache (``module.name``), in order."""
    return tuple(_loaded)


def own_process() -> None:
    """Say that this process is moetrace's own (the command line, a window worker it started).

    Only then does ``warm`` freeze: in someone else's process (a notebook using the
    Python API, a Ray worker) what is alive at that moment is theirs, and frozen
    objects that later become cyclic garbage are never collected. Only then, too,
    does the allocator keep freed memory for reuse, in small pages (``ingest._allocator``).
    """
    if not _own:
        from ._allocator import keep_freed_memory, small_pages

        keep_freed_memory()
        small_pages()
    _own.append(True)


def warm() -> None:
    """Import numba and build its compiler's tables once; in moetrace's own process, take them out of the cyclic GC.

    numba's import and its first compile (or cache load) create ~100,000
    objects that live as long as the process; every full collection after
    that walks them all (~70 ms each, measured: the engine collects once per
    window). ``gc.freeze`` moves the objects alive at this moment into the
    permanent generation, so call this before building a trace's tables
    (the engine does, before each window's view), when what is alive is long-lived:
    modules, rule classes, the open dataset; a kernel's first call does not freeze, since it
    runs amid a rule's tables. Called again, it does nothing.
    """
    if _warmed:
        return
    if not _own:
        _noop()  # numba's import, then its first load from the cache builds the typing and target tables
        _warmed.append(True)
        return
    # While they are made, the collector walks those objects again and again (~170 passes, one of them
    # full: ~0.05 s CPU, a tenth of a small diagnose's start-up) to find ~400 objects of garbage, which
    # the freeze keeps instead (a few tens of kB): the order gc.freeze's documentation gives.
    enabled = gc.isenabled()
    gc.disable()
    try:
        _noop()
        gc.freeze()
    finally:
        if enabled:
            gc.enable()
    _warmed.append(True)


def _noop_py(x):
    return x


@functools.cache
def _noop_kernel():
    import numba

    return numba.njit(cache=True, nogil=True)(_noop_py)


def _noop() -> None:
    _noop_kernel()(0)
