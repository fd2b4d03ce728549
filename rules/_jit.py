"""The lazy numba wrapper, kept importable from here for the rules (it lives in ``ingest._jit``)."""

from ingest._jit import kernel  # noqa: F401
