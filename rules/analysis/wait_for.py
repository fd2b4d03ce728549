"""Stage WAIT_FOR: the stuck waits and barriers, who should have released each, and the graph.

``_waitfor.analyze`` builds it (``_waitfor_build.Builder``: the tables the
verdicts are read from; ``_waitfor_producers``: each expected producer's
verdict; ``_waitfor_barriers``: stuck barriers); this module is its public face.
"""

from __future__ import annotations

from ._waitfor import Cycle, Misdirected, Node, Stop, WaitForGraph, analyze  # noqa: F401 - public here
from ._waitfor_build import stuck_words  # noqa: F401 - public here: the hang rules word their nodes with it


def wait_for(view) -> WaitForGraph:
    return analyze(view)
