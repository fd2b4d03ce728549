"""``--jobs``'s pool (analyzer.pool): whichever way a run ends, ``parallel`` leaves no pool behind.

CI saw ``moetrace diagnose --jobs 2`` print "Exception ignored ... Bad file descriptor" after
"moetrace: interrupted": the pool's manager thread had been left running (``shutdown(wait=False)``
drops it, and the ``shutdown(wait=True)`` after it had nothing left to join), and Python's exit
raced it for its wakeup pipe. These tests ask for the pool's end directly, with no race to win.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from contextlib import closing

import pytest

import _pool_jobs
from analyzer.pool import parallel


def _managers() -> list[threading.Thread]:
    """The pools' manager threads still running in this process."""
    return [t for t in threading.enumerate() if type(t).__name__ == "_ExecutorManagerThread"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # a joined worker is reaped: no zombie answers
    except ProcessLookupError:
        return False
    return True


def _pids(folder) -> dict[int, int]:
    return {int(p.stem): int(p.read_text()) for p in folder.glob("*.pid")}


def test_a_failed_window_waits_for_the_running_one_and_runs_no_more(tmp_path):
    assert not _managers()
    with pytest.raises(RuntimeError, match="window 0 failed"):
        list(parallel(_pool_jobs.fail, tmp_path, range(40), None, [], 2))
    assert not _managers(), "parallel returned with its pool still running"
    pids = _pids(tmp_path)
    assert (tmp_path / "1.done").exists(), "the running window was not waited for"
    assert not [w for w, pid in pids.items() if _alive(pid)], "a worker outlived parallel"
    # The worker freed by window 0 may start queued windows until the parent has read the failure
    # (window 2, and 3 only if that took the parent over a second); none after parallel returned.
    assert set(pids) <= {0, 1, 2, 3}, sorted(pids)
    time.sleep(0.5)
    assert len(_pids(tmp_path)) == len(pids)


def test_a_caller_that_leaves_early_ends_the_pool(tmp_path):
    """Leaving (an interrupt between two windows closes the iterator): the running windows end,
    the queued ones never start, and no thread or worker of the pool is left."""
    (tmp_path / "0.release").touch()
    release = threading.Timer(0.5, lambda: [(tmp_path / f"{w}.release").touch() for w in range(10)])
    with closing(parallel(_pool_jobs.blocking, tmp_path, range(10), None, [], 2)) as each:
        assert next(each) == [0]
        release.start()  # the two running windows (1, and 2 on window 0's worker) end in half a second
    release.join()
    assert not _managers(), "the pool outlived the closed iterator"
    pids = _pids(tmp_path)
    assert not [w for w, pid in pids.items() if _alive(pid)], "a worker outlived the closed iterator"
    assert set(pids) <= {0, 1, 2}, sorted(pids)


def test_ctrl_c_outside_a_window_waits_for_the_next(tmp_path):
    """A worker that is not running a window may be sending a result: Ctrl-C must not end it
    half-way (the parent's pool would read a message that never completes, and hang)."""
    each = parallel(_pool_jobs.pair, tmp_path, range(2), None, [], 2)
    with closing(each):
        assert next(each) == [0]
        idle = _pids(tmp_path)[0]
        assert _pids(tmp_path)[1] != idle
        os.kill(idle, signal.SIGINT)
        time.sleep(0.5)
        assert _alive(idle), "Ctrl-C ended a worker outside a window"
        (tmp_path / "1.release").touch()
        assert next(each) == [1]
    assert not _managers() and not _alive(idle)
