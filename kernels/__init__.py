"""moetrace reference kernels on a simulated symmetric-memory machine.

``kernels.simulate(protocol, Params(...), faults=[...], seed=S, out=DIR) -> Truth``;
``kernels.PROTOCOLS`` maps a protocol name to its kernel class (``.doc``, ``.faults``);
``kernels.FAULTS`` maps a fault name to its spec (family, consequence).
"""

from __future__ import annotations


def __getattr__(name):  # lazy: `import kernels` stays cheap for the CLI
    if name in ("simulate", "Recording", "Truth", "PROTOCOLS"):
        from . import api
        return getattr(api, name)
    if name == "Params":
        from .base import Params
        return Params
    if name == "FAULTS":
        from .faults import FAULTS
        return FAULTS
    raise AttributeError(name)
