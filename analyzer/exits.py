"""How a ``moetrace`` command ends when an exception reaches the command line: one line on stderr, an exit code.

- bad input (``ingest.errors.TraceError``): ``moetrace: error: ...``, exit 2;
- a usage error: the error in one line, exit 2; no command at all: the help;
- an interrupt (Ctrl-C): ``moetrace: interrupted``, exit 130;
- anything else is a bug in moetrace, an internal error: ``moetrace: internal error: TYPE:
  MESSAGE; please report it with the file written to PATH``, exit 3. PATH is a crash report
  (the traceback, the command line, the versions of moetrace, Python and its dependencies),
  written to ``$MOETRACE_CRASH_DIR``, else the system's temporary directory.

Never a traceback on stderr, and nothing here raises: where the crash report cannot be
written, or the exception cannot even be classified, the line says so and the exit is 3.

typer's exceptions are recognised through its public API and by shape, never through a
private module: typer 0.29 vendors click as ``typer._click``, without the names older
versions had there; older typers raise click's own. ``typer.Abort`` is public in both;
usage errors are the ``UsageError`` class ``typer.BadParameter`` derives from; any other
error typer or click means for the user has an ``exit_code`` and a ``format_message()``.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from pathlib import Path
from typing import TextIO

BAD_INPUT = 2
INTERNAL = 3
INTERRUPTED = 130
CRASH_DIR_VAR = "MOETRACE_CRASH_DIR"
_MAX_MESSAGE = 500  # characters of the exception's message on the one line; the crash report has all


def handle(e: BaseException, err: TextIO | None = None) -> int:
    """Print ``e`` as one line (the help, for a missing command) on ``err``; the exit code."""
    err = err if err is not None else sys.stderr
    try:
        code, line = _classified(e, err)
    except BaseException:  # noqa: BLE001  (classifying failed: that is a bug of ours too)
        code, line = INTERNAL, None
    if code == INTERNAL:
        line = internal_line(e)
    if line is not None:
        try:
            print(line, file=err)
            err.flush()
        except BaseException:  # noqa: BLE001  (stderr closed or gone: the exit code still tells)
            pass
    return code


def interrupted(err: TextIO | None = None) -> int:
    """The interrupt's one line; its exit code."""
    return handle(KeyboardInterrupt(), err)


def _classified(e: BaseException, err: TextIO) -> tuple[int, str | None]:
    import typer

    from ingest.errors import TraceError

    if isinstance(e, TraceError):
        return BAD_INPUT, f"moetrace: error: {e}"
    if isinstance(e, (KeyboardInterrupt, typer.Abort)):
        return INTERRUPTED, "moetrace: interrupted"
    if not _for_the_user(e):
        return INTERNAL, None
    if any(c.__name__ == "NoArgsIsHelpError" for c in type(e).__mro__):  # `moetrace` alone: the help
        e.show(file=err)
        return e.exit_code, None
    if isinstance(e, _usage_error(typer)):
        return e.exit_code, f"moetrace: error: {usage_line(e)}"
    return e.exit_code, f"moetrace: error: {_one_line(e.format_message())}"


def _usage_error(typer) -> type:
    """click's UsageError, as typer raises it: the class of that name ``typer.BadParameter`` derives from."""
    return next((c for c in typer.BadParameter.__mro__ if c.__name__ == "UsageError"), typer.BadParameter)


def _for_the_user(e: BaseException) -> bool:
    """An error typer or click raises to be shown (ClickException's shape), not a bug."""
    code = getattr(e, "exit_code", None)
    return (isinstance(code, int) and callable(getattr(e, "format_message", None))
            and any(c.__name__ in ("ClickException", "TyperException") for c in type(e).__mro__))


def usage_line(e) -> str:
    """A usage error in one line, worded as config errors are: 'command line: --format: 'x' is not one of ...'.

    No usage block: every error moetrace prints is one line (the help is one --help away).
    """
    where = e.ctx.command_path if getattr(e, "ctx", None) is not None else "moetrace"
    param = getattr(e, "param", None)
    if param is not None and getattr(e, "message", None):
        opts = [o for o in getattr(param, "opts", []) if o.startswith("--")] or [param.human_readable_name]
        text = e.message.replace("Value error, ", "").rstrip(".")
        return f"command line: {opts[0]}: {' '.join(text.split())} (see '{where} --help')"
    return f"{' '.join(e.format_message().split())} (see '{where} --help')"


def internal_line(e: BaseException) -> str:
    """The internal error's one line, after writing its crash report; never raises."""
    try:
        what = _one_line(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)
    except BaseException:  # noqa: BLE001  (a __str__ that raises)
        what = _safe_name(e)
    try:
        path = write_report(e)
    except BaseException as why:  # noqa: BLE001  (no space, no permission, a bad MOETRACE_CRASH_DIR)
        return f"moetrace: internal error: {what}; please report it (no crash report: {_reason(why)})"
    return f"moetrace: internal error: {what}; please report it with the file written to {path}"


def write_report(e: BaseException) -> Path:
    """Write the crash report of ``e``; its path."""
    where = Path(os.environ.get(CRASH_DIR_VAR) or _tempdir())
    where.mkdir(parents=True, exist_ok=True)
    now = time.gmtime()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", now)
    text = _report_text(e, time.strftime("%Y-%m-%dT%H:%M:%SZ", now))
    for n in range(100):  # two crashes of one process in one second get a file each
        path = where / f"moetrace-crash-{stamp}-{os.getpid()}{f'-{n}' if n else ''}.txt"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
        return path
    raise FileExistsError(f"{where}: 100 crash reports of this process in one second")


def _report_text(e: BaseException, when: str) -> str:
    import platform
    import shlex

    lines = ["moetrace crash report: please attach this file to the bug report", "",
             f"time: {when}", f"command: {_quietly(lambda: shlex.join(sys.argv))}",
             f"argv: {sys.argv!r}", f"cwd: {_quietly(os.getcwd)}",
             f"python: {sys.version.split()[0]} ({platform.python_implementation()}) {sys.executable}",
             f"platform: {_quietly(platform.platform)}", "", "versions:"]
    lines += [f"  {name} {version}" for name, version in _versions()]
    lines += ["", "traceback:", _quietly(lambda: "".join(traceback.format_exception(e))).rstrip("\n"), ""]
    return "\n".join(lines)


def _versions() -> list[tuple[str, str]]:
    """moetrace's and its dependencies' (extras too) versions, from its own metadata."""
    import re
    from importlib import metadata

    names = ["moetrace"]
    try:
        names += [m.group(0) for r in metadata.requires("moetrace") or ()
                  if (m := re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", r))]
    except metadata.PackageNotFoundError:  # a source tree never installed: what it imports at least
        names += ["typer", "numpy", "numba", "pyarrow", "duckdb", "polars"]
    out = []
    for name in dict.fromkeys(names):
        try:
            out.append((name, metadata.version(name)))
        except Exception:  # noqa: BLE001  (not installed: an extra, or a broken environment)
            out.append((name, "not installed"))
    return out


def _one_line(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE - 3] + "..."


def _quietly(fn) -> str:
    try:
        return str(fn())
    except BaseException as why:  # noqa: BLE001  (the report is written with what could be found)
        return f"(unknown: {_reason(why)})"


def _reason(why: BaseException) -> str:
    try:
        if isinstance(why, OSError) and why.strerror:
            return _one_line(f"{why.filename}: {why.strerror}" if why.filename else why.strerror)
        return _one_line(str(why) or type(why).__name__)
    except BaseException:  # noqa: BLE001
        return _safe_name(why)


def _safe_name(e: BaseException) -> str:
    try:
        return type(e).__name__
    except BaseException:  # noqa: BLE001
        return "an exception"


def _tempdir() -> str:
    import tempfile

    return tempfile.gettempdir()
