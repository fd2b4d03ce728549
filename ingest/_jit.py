"""Lazy numba: kernels are plain functions until first called.

``moetrace --help`` must not pay numba's import (about a second), so a kernel
module only imports numba inside ``kernel``'s first call. Compiled code is
cached on disk (``cache=True``): a second run compiles nothing. It lives in
``ingest`` (the lowest layer that compiles kernels); ``rules._jit`` re-exports it.
"""

from __future__ import annotations

import functools
from typing import Callable


def kernel(fn: Callable) -> Callable:
    """Decorate a module-level function to be compiled with numba on first use."""
    compiled: list[Callable] = []

    @functools.wraps(fn)
    def call(*args):
        if not compiled:
            import numba

            compiled.append(numba.njit(cache=True, nogil=True)(fn))
        return compiled[0](*args)

    call.py_func = fn  # the pure-Python original, for debugging and tests
    return call
