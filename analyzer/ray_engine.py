"""``--engine ray``: the windows of ``analyzer.windows`` as Ray tasks, on a cluster the user runs.

The same windows ``--jobs N`` runs in local processes, one Ray task each.  A
task gets the dataset's *path* and its window, and reads its blocks itself:
the dataset must sit on storage every node sees (NFS, a shared mount), and no
trace data goes through Ray's object store (only the window plan in, the
window's findings out).  Findings come back in window order, so the report is
the one ``--jobs 1`` gives.  A task whose worker dies (killed, out of memory,
node lost) is run again by Ray (``max_retries``); a rule that raises is not
retried: the engine reports it as the internal error it is.

Ray's uv integration, on when the driver runs under ``uv run``, packages the
working directory and ships it to every worker; started beside datasets that
filled the disk.  So ``RAY_ENABLE_UV_RUN_RUNTIME_ENV=0`` is set before ray is
imported, and every cluster gets ``RUNTIME_ENV``: no working_dir, no uploads;
the workers use the moetrace installed where they run.
"""

from __future__ import annotations

import os
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
            refs = [task.remote(path, w, config, codes) for w in windows]
            read = 0
            try:
                for ref in refs:
                    found = _get(ray, ref)
                    read += 1
                    yield found
            except BaseException:  # a window failed, or Ctrl-C: the rest are not wanted
                _drop(ray, refs[read:])
                raise
        finally:
            if started:
                ray.shutdown()


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


def _drop(ray, refs: list) -> None:
    """Cancel the windows not read yet and read what they left, quietly: Ray prints an error nobody
    read, the worker's traceback and all, when its reference is freed (after the CLI's one line).

    A window still running is ended with its worker (``force``). Ray's default raises
    KeyboardInterrupt in the task and keeps the worker for the next one, in whatever state the
    interrupt left it: one caught importing numba failed every later window it ran with "module
    'numba' has no attribute 'core'". A queued window is just dropped; Ray starts a new worker.
    """
    for ref in refs:
        try:
            ray.cancel(ref, force=True)
        except Exception:  # noqa: BLE001  (done already, or the cluster is going: nothing to stop)
            pass
    try:
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=10)
    except Exception:  # noqa: BLE001
        return
    for ref in ready:
        try:
            ray.get(ref, timeout=0)
        except Exception:  # noqa: BLE001  (cancelled, or failed too: the first failure is the one told)
            pass


def _window_task(dataset: str, window, config, codes: list[str]) -> list:
    # Named for the worker's process title (ray::_window_task), which is how an operator finds it.
    from .window_run import window_job

    return window_job(dataset, window, config, codes)


__all__ = ["RayWindows", "RayUnavailable", "RUNTIME_ENV", "import_ray"]
