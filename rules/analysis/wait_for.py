"""Stage WAIT_FOR: the stuck waits and barriers, who should have released each, and the graph.

``_waitfor.analyze`` builds it (``_waitfor_build.Builder``: the tables the
verdicts are read from; ``_waitfor_producers``: each expected producer's
verdict; ``_waitfor_barriers``: stuck barriers); this module is its public face.
"""

from __future__ import annotations

from ._waitfor import Cycle, Node, WaitForGraph, analyze, class_of  # noqa: F401 - public here
from ._waitfor_stale import aliased_routes as _aliased_routes


def wait_for(view) -> WaitForGraph:
    return analyze(view)


def aliased_routes(graph: WaitForGraph, rank: int, launch: int, limit: int = 8) -> list[tuple]:
    """Routes of ``rank`` in ``launch`` whose slots another route of it also took (a wrong slot index)."""
    return _aliased_routes(graph.builder, rank, launch, limit)
