"""``--jobs N``: the windows of ``analyzer.windows`` in N local worker processes (spawned).

A worker's exception is raised in the parent as itself, its traceback as the cause (the pool
hands it on), so the CLI ends it as one internal-error line with that traceback in the crash
report (``analyzer.exits``). A failed window or Ctrl-C runs no more windows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator, Sequence


def parallel(job: Callable, dataset: Path, windows: Sequence, config, codes: list[str], jobs: int) -> Iterator[list]:
    """``job(dataset, window, config, codes)`` of each window, in window order, from ``jobs`` worker processes."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: forking a process whose pyarrow and numba thread pools
    # are running can leave a worker holding a lock no thread will release.
    ctx = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_worker_started)
    try:
        with _interrupts_ignored():  # the workers are spawned here, and keep Ctrl-C ignored (exec does)
            futures = [pool.submit(job, str(dataset), w, config, codes) for w in windows]
        for f in futures:
            yield f.result()  # a worker's exception is raised here, its traceback as the cause
    except BaseException:
        # A window failed or Ctrl-C: run no more windows (only the running ones end, or die of it).
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        pool.shutdown(wait=True)


def _worker_started() -> None:
    """A worker ends at once, silently, on Ctrl-C (the terminal signals the whole process group).

    Its parent says "interrupted". With Python's KeyboardInterrupt, a worker interrupted outside a
    window (idle on the pool's queue) prints a traceback of its own, and once the parent was seen
    to wait on its workers for minutes after saying it.
    """
    import signal

    from ingest._jit import own_process

    signal.signal(signal.SIGINT, lambda signum, frame: os._exit(130))
    own_process()  # a window worker is moetrace's own process (ingest._jit.warm may freeze)


class _interrupts_ignored:
    """Ctrl-C ignored while workers are spawned: one interrupted while it imports prints a traceback."""

    def __enter__(self):
        import signal
        import threading

        self.old = None
        if threading.current_thread() is threading.main_thread():  # signal.signal works there only
            self.old = signal.signal(signal.SIGINT, signal.SIG_IGN)
        return self

    def __exit__(self, *exc) -> None:
        import signal

        if self.old is not None:
            signal.signal(signal.SIGINT, self.old)
