"""``--engine ray``: the windows of ``analyzer.windows`` as Ray tasks, on a cluster the user runs.

The same windows ``--jobs N`` runs in local processes, one Ray task each.  A
task gets the dataset's *path* and its window, and reads its blocks itself:
the dataset must sit on storage every node sees (NFS, a shared mount), and no
trace data goes through Ray's object store (only the window plan in, the
window's findings out).  Findings come back in window order, so the report is
the one ``--jobs 1`` gives.  A task whose worker dies (killed, out of memory,
node lost) is run again by Ray (``max_retries``); a rule that raises is not
retried: the engine reports it as the internal error it is.  A failed window,
or Ctrl-C, ends the run at once: the windows not submitted yet (at most two
per CPU are at any time) never run, and those running end on their own,
uncancelled (``_abandon`` says why).

Ray's uv integration, on when the driver runs under ``uv run``, packages the
working directory and ships it to every worker; started beside datasets that
filled the disk.  So ``RAY_ENABLE_UV_RUN_RUNTIME_ENV=0`` is set before ray is
imported, and every cluster gets ``RUNTIME_ENV``: no working_dir, no uploads;
the workers use the moetrace installed where they run.
"""

from __future__ import annotations

import os
from collections import deque
from itertools import islice
from pathlib import Path
from typing import Iterator

from ingest.location import is_url

UV_RUNTIME_ENV_FLAG = "RAY_ENABLE_UV_RUN_RUNTIME_ENV"
RUNTIME_ENV = {"env_vars": {UV_RUNTIME_ENV_FLAG: "0"}}
MAX_RETRIES = 3  # per window, for a worker or node that dies under it


class RayUnavailable(Exception):
    """``--engine ray`` without the ``ray`` extra installed."""


def import_ray():
    """``ray``, imported with its uv working-directory upload switched off."""
    os.environ[UV_RUNTIME_ENV_FLAG] = "0"
    try:
        import ray
    except ImportError:
        raise RayUnavailable("--engine ray needs Ray: pip install 'moetrace[ray]'") from None
    return ray


class RayWindows:
    """A window executor for ``analyzer.engine``: ``self(dataset, windows, config, codes)`` yields
    each window's findings in window order.

    ``address`` None joins the cluster ``ray.init`` finds (``RAY_ADDRESS``, else a
    new local one); a cluster this object started is shut down when the run ends.
    One already initialised in this process (a test's, a notebook's) is used as it is.
    """

    def __init__(self, address: str | None = None, max_retries: int = MAX_RETRIES):
        self.address = address
        self.max_retries = max_retries

    def __call__(self, dataset: Path, windows, config, codes: list[str]) -> Iterator[list]:
        ray = import_ray()
        started = not ray.is_initialized()
        if started:
            ray.init(address=self.address, runtime_env=RUNTIME_ENV, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        try:
            task = ray.remote(_window_task).options(max_retries=self.max_retries, retry_exceptions=False,
                                                    num_cpus=1)
            path = dataset if is_url(dataset) else str(Path(dataset).resolve())  # every node reads it itself
            todo, submitted = iter(windows), deque()

            def submit(count: int) -> None:
                submitted.extend(task.remote(path, w, config, codes) for w in islice(todo, count))

            submit(_ahead(ray))
            try:
                while submitted:
                    found = _get(ray, submitted.popleft())
                    submit(1)
                    yield found
            except BaseException:  # a window failed, or Ctrl-C: submit no more windows
                _abandon(ray, submitted, cluster_ends=started)
                raise
        finally:
            if started:  # ends the windows still running with the workers running them
                ray.shutdown()


def _ahead(ray) -> int:
    """How many windows to keep submitted: two per CPU of the cluster, so that none waits for work.

    Not all of them at once: a window still running when the run fails is left to end on its own
    (``_abandon``), and a window never submitted costs nothing.
    """
    return max(2, 2 * int(ray.cluster_resources().get("CPU", 1)))


def _get(ray, ref) -> list:
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError as e:  # the task's own exception: a rule bug, a bad dataset
        cause = getattr(e, "cause", None)
        if isinstance(cause, Exception) and not isinstance(cause, ray.exceptions.RayError):
            # Raised as itself (its one line is the CLI's); Ray's error, which holds the worker's
            # traceback as text, rides along as the cause for the crash report (analyzer.exits).
            raise cause from e
        raise


def _abandon(ray, refs, cluster_ends: bool) -> None:
    """Leave the windows submitted and not read to end on their own, and read what they leave,
    quietly: Ray prints an error nobody read, the worker's traceback and all, when its reference
    is freed (after the CLI's one line, or in the caller's notebook).

    Never ``ray.cancel``. It races with a task's completion: a cancel that arrives while the reply
    of a task that is just finishing is handled (the one whose error was just read, say) aborts the
    driver in Ray's C++ ("Check failed: ... Tried to complete task that was not pending"; Ray 2.60,
    once in 30 to 110 runs on a loaded machine: bench/ray_failure_stress.py). Its default form also
    interrupts a task with KeyboardInterrupt and keeps the worker for the next, in whatever state
    the interrupt found it.

    A window left running holds its CPU until it ends. Where this run started the cluster
    (``cluster_ends``) the shutdown that follows ends it; on a cluster the caller runs, a daemon
    thread reads the windows as they end, so their errors are read and nothing waits for them.
    """
    refs = list(refs)
    if not refs:
        return
    try:
        ended, running = ray.wait(refs, num_returns=len(refs), timeout=0)
    except Exception:  # noqa: BLE001  (the cluster is going: nothing to read)
        return
    _read_quietly(ray, ended)
    if running and not cluster_ends:
        import threading

        threading.Thread(target=_read_quietly, args=(ray, running), name="moetrace-abandoned-windows",
                         daemon=True).start()


def _read_quietly(ray, refs) -> None:
    for ref in refs:
        try:
            ray.get(ref)
        except Exception:  # noqa: BLE001  (failed too: the first failure is the one told)
            pass


def _window_task(dataset: str, window, config, codes: list[str]) -> list:
    # Named for the worker's process title (ray::_window_task), which is how an operator finds it.
    from .window_run import window_job

    return window_job(dataset, window, config, codes)


__all__ = ["RayWindows", "RayUnavailable", "RUNTIME_ENV", "import_ray"]
