"""CPU time per step of a run: thread time, summed over the threads a step runs on.

``StepTimer.wrap(owner, name, key)`` replaces ``owner.name`` by a function that
adds the thread time of each call to ``acc[key]`` (a step may run on several
writer threads at once, hence the lock); ``restore`` puts the originals back.
Used by bench/ingest_bench.py in process and by bench/jsonl_bench.py inside
the process it starts for each checkout it compares.
"""

from __future__ import annotations

import threading
import time
from typing import Any


class StepTimer:
    def __init__(self, *keys: str):
        self.acc: dict[str, float] = dict.fromkeys(keys, 0.0)
        self._lock = threading.Lock()
        self._saved: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, key: str) -> None:
        fn = getattr(owner, name)

        def run(*a, **k):
            t = time.thread_time()
            try:
                return fn(*a, **k)
            finally:
                with self._lock:
                    self.acc[key] = self.acc.get(key, 0.0) + time.thread_time() - t

        self._saved.append((owner, name, fn))
        setattr(owner, name, run)

    def restore(self) -> None:
        for owner, name, fn in reversed(self._saved):
            setattr(owner, name, fn)
        self._saved.clear()
