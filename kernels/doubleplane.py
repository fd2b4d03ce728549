"""cann/shmem dispatch/combine doubleplane: big segments' payload over SDMA.

The same window and control protocol as classic (kernels/classic.py); a segment of
at least ``sdma_threshold`` rows sends its payload with SDMA put_nbi, an SDMA
quiet every 256 puts and once more before any control flag ("control signals are
emitted only after all SDMA payloads are visible"), small segments keep the MTE
put + per-token quiet. Combine: SDMA data, SDMA quiet, then MTE status puts.
"""

from __future__ import annotations

from .classic import Classic


class Doubleplane(Classic):
    name = "doubleplane"
    doc = "classic with big segments' payload over SDMA + SDMA quiet before the control flags"
    faults = Classic.faults + ("wrong-engine-quiet",)
    doubleplane = True
