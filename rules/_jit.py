"""The lazy numba wrappers, kept importable from here for the rules (they live in ``ingest._jit``)."""

from ingest._jit import helper, kernel  # noqa: F401
