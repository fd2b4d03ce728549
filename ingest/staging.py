"""Where a dataset is staged, how it replaces an old one, and what a killed ingest left behind.

A dataset is written into a hidden sibling ``.NAME.stage-PID-XXXX`` and
renamed into place at the end; with ``--force`` an existing dataset is first
renamed aside to ``.NAME.old-PID-XXXX``, then removed. A process killed
mid-write (kill -9, OOM) leaves its staging directory; the next ingest to the
same output removes every one whose process is gone. The PID in the name is
what tells a dead writer's directory from a live concurrent one's.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from pathlib import Path

from .dataset import is_dataset
from .errors import TraceError

_STAGE, _OLD = "stage", "old"


def os_error(path: Path, e: OSError, doing: str) -> TraceError:
    """One line for an OSError while writing (disk full, a file where a directory must be, ...)."""
    why = e.strerror or str(e)
    if e.errno == errno.ENOSPC:
        why = "no space left on the device"
    elif e.errno in (errno.EEXIST, errno.ENOTDIR):
        why = f"a part of the path is a file, not a directory ({e.strerror})"
    return TraceError(path, "", f"cannot {doing}: {why}")


def check_replaceable(out: Path, overwrite: bool) -> None:
    """``out`` may be written: it does not exist, or it is a dataset and ``overwrite`` is set."""
    if not (out.exists() or out.is_symlink()):
        return
    if not overwrite:
        raise TraceError(out, "", "output already exists (use --force to replace it)")
    if out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
        return  # an empty directory: nothing of the user's to lose
    if out.is_symlink() or not is_dataset(out):
        raise TraceError(out, "", "output exists and is not a moetrace dataset; --force replaces only a "
                                  "dataset (remove it yourself if it should go)")


def check_not_an_input(out: Path, inputs) -> None:
    """--force must never replace an input or a directory holding one."""
    target = out.resolve()
    for p in inputs:
        src = Path(p).resolve()
        if src == target or target in src.parents:
            raise TraceError(out, "", f"output would replace the input {p}; write the dataset elsewhere")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # somebody else's live process
    return True


def clean_stale(out: Path) -> list[Path]:
    """Remove the staging and set-aside directories of ``out`` whose writer process is gone."""
    removed = []
    pat = re.compile(rf"^\.{re.escape(out.name)}\.(?:{_STAGE}|{_OLD})-(\d+)-")
    try:
        entries = list(out.parent.iterdir())
    except OSError:
        return removed
    for p in entries:
        m = pat.match(p.name)
        if m is None or not p.is_dir() or p.is_symlink():
            continue
        pid = int(m.group(1))
        if pid == os.getpid() or _alive(pid):
            continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


def make_stage(out: Path, what: str = _STAGE) -> Path:
    return Path(tempfile.mkdtemp(prefix=f".{out.name}.{what}-{os.getpid()}-", dir=out.parent))


def swap_in(stage: Path, out: Path) -> None:
    """Rename ``stage`` to ``out``; an old dataset there is set aside first and removed last,
    and put back if the new one cannot take its place."""
    if not out.exists():
        os.replace(stage, out)
        return
    aside = make_stage(out, _OLD)
    os.replace(out, aside / "old")
    try:
        os.replace(stage, out)
    except BaseException:
        os.replace(aside / "old", out)
        shutil.rmtree(aside, ignore_errors=True)
        raise
    shutil.rmtree(aside, ignore_errors=True)
