"""``--jobs N``: the windows of ``analyzer.windows`` in N local worker processes (spawned).

A worker's exception is raised in the parent as itself, its traceback as the cause (the pool
hands it on), so the CLI ends it as one internal-error line with that traceback in the crash
report (``analyzer.exits``). A failed window or Ctrl-C runs no more windows, and ``parallel``
returns only once the pool is gone: its workers ended and its manager thread joined.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator, Sequence

_stop = None  # a worker's: the parent's event "run no more windows" (multiprocessing.Event)
_in_window = False  # a worker's: a window is running (Ctrl-C ends the worker at once)
_interrupted = False  # a worker's: Ctrl-C came outside a window (it ends at the next one)


def parallel(job: Callable, dataset: Path, windows: Sequence, config, codes: list[str], jobs: int) -> Iterator[list]:
    """``job(dataset, window, config, codes)`` of each window, in window order, from ``jobs`` worker processes.

    Close the iterator (``contextlib.closing``) if it is left early: its cleanup ends the pool.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    # spawn, not fork: forking a process whose pyarrow and numba thread pools
    # are running can leave a worker holding a lock no thread will release.
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    pool = ProcessPoolExecutor(jobs, mp_context=ctx, initializer=_worker_started, initargs=(stop,))
    try:
        with _interrupts_ignored():  # the workers are spawned here, and keep Ctrl-C ignored (exec does)
            futures = [pool.submit(_window, job, str(dataset), w, config, codes) for w in windows]
        for f in futures:
            yield f.result()  # a worker's exception is raised here, its traceback as the cause
    except BaseException:
        # A window failed, Ctrl-C, or the caller left: the queued windows return at once, the
        # running ones end (or die of Ctrl-C).
        stop.set()
        raise
    finally:
        # Always waited for: a manager thread left running races the interpreter's exit (Python
        # 3.11's _python_exit writes to the wakeup pipe the thread is closing after its workers
        # died of Ctrl-C, and prints "Exception ignored ... Bad file descriptor").
        pool.shutdown(wait=True, cancel_futures=True)


def _window(job: Callable, *args) -> list | None:
    """A worker runs each window through here: none once the parent has stopped."""
    global _in_window

    if _stop.is_set():
        return None
    if _interrupted:  # and the parent not (yet) stopped: end as Ctrl-C would have in the window
        os._exit(130)
    _in_window = True
    try:
        return job(*args)
    finally:
        _in_window = False


def _worker_started(stop) -> None:
    """A worker ends silently on Ctrl-C (the terminal signals the whole process group).

    Its parent says "interrupted". With Python's KeyboardInterrupt, a worker interrupted outside a
    window (idle on the pool's queue) prints a traceback of its own, and once the parent was seen
    to wait on its workers for minutes after saying it.
    """
    import signal

    from ingest._jit import own_process

    global _stop
    _stop = stop
    signal.signal(signal.SIGINT, _on_interrupt)
    own_process()  # a window worker is moetrace's own process (ingest._jit.warm may freeze)


def _on_interrupt(signum, frame) -> None:
    """In a window, end now; outside one, at the next (or when the pool shuts down).

    Outside a window the worker may be sending a result: ended half-way, the message would leave
    the parent's pool reading a pipe that never completes, and its shutdown would hang.
    """
    global _interrupted

    if _in_window:
        os._exit(130)
    _interrupted = True


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
