"""A command's output file (``-o``): written whole or not at all, and a device or pipe as the stream it is.

One writer for every command that writes a file (diagnose's report, query's
result, the timeline), so they all treat the path alike.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Callable


def write_output(path: Path | str, write: Callable[[Path], None]) -> None:
    """``write(target)`` so that ``path`` ends up holding what it wrote; OSError as the callers word it.

    A regular file, or one that does not exist yet, is written beside itself
    and renamed over: a CI step never reads half a report, and a failed write
    leaves the old one. Through a symlink, the file it names is replaced, not
    the link. Anything else that exists (``/dev/null``, a FIFO, the terminal
    or pipe behind ``/dev/stdout``) is a stream and is written in place: a
    rename would put a regular file where the device was (as root, in place
    of /dev/null itself, which then filled with every later run's output).
    """
    path = Path(path)
    try:
        mode = os.stat(path).st_mode  # through symlinks
    except OSError:
        mode = None  # not there yet (or unreadable: the write below says why, in the OS's words)
    if mode is not None and not stat.S_ISREG(mode):
        write(path)
        return
    target = Path(os.path.realpath(path)) if mode is not None else path
    tmp = target.with_name(f".{target.name}.tmp{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
