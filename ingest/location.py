"""Where a dataset lives: a local path, or a URL that one of pyarrow's file systems reads.

A cluster run (``--engine ray``) has every task read its window's blocks
itself, so the dataset must sit where every node sees it: a shared mount (a
plain path) or an object store named by URL (``s3://bucket/trace``,
``gs://...``, ``hdfs://...``, ``abfs://...``, ``file:///...``), read through
``pyarrow.fs.FileSystem.from_uri``. Which schemes work is pyarrow's build and
the node's credentials; moetrace adds none of its own.

Local paths stay ``pathlib.Path`` everywhere (the common case, and what the
writer produces); a URL stays a string, because ``Path`` folds the ``//``
after the scheme away.

A dataset is often received (a dump copied off a cluster), so it is a
boundary: every file read from it is first resolved (symbolic links
followed) and refused unless it lies inside the dataset's own real path
(``inside``), and only that resolved path is handed on to a reader (pyarrow,
DuckDB), so no link can lead a reader out of the dataset.  The dataset itself
may be reached through a link (``/tmp/trace -> /data/trace``): the boundary is
where its root resolves to.  Object stores have no links; a ``file://`` URL is
checked as a path is.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs

from .errors import TraceError

# Raw traces are ingested where they lie; a URL must name a dataset already written.
URL_NOT_A_DATASET = "a URL must name a moetrace dataset (ingest raw traces to a dataset first)"

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(location: str | Path) -> bool:
    """A URL with a scheme (``s3://``, ``file://``), as opposed to a local path."""
    return isinstance(location, str) and bool(_URL.match(location))


def as_location(arg: str | Path) -> str | Path:
    """A command-line or API argument as a location: a URL kept as given, anything else a Path."""
    return arg if is_url(arg) else Path(arg)


def inside(real_root: str, path: str | Path, shown: str | Path | None = None) -> str:
    """``path`` resolved, where it lies inside ``real_root`` (a resolved directory); else a TraceError
    naming ``shown`` (default ``path``), the file as the user can find it, and where it leads."""
    real = os.path.realpath(path)
    if real != real_root and not real.startswith(real_root.rstrip(os.sep) + os.sep):
        raise TraceError(shown if shown is not None else path, "",
                         f"leads outside the dataset (to {real}, the dataset is {real_root}): "
                         "refused, a dataset is read only from inside itself")
    return real


class Remote:
    """A directory behind a URL, read through the pyarrow file system the URL names."""

    def __init__(self, url: str):
        self.url = url.rstrip("/")
        try:
            self.fs, self.base = pafs.FileSystem.from_uri(self.url)
        except (pa.ArrowException, OSError, ValueError) as e:
            raise TraceError(url, "", f"cannot open this URL: {reason(e)}") from None
        self.base = self.base.rstrip("/")
        # The local file system is the one with symbolic links: its paths are checked as a dataset's
        # local paths are (``inside``). An object store's keys lead nowhere else.
        self._real = os.path.realpath(self.base) if isinstance(self.fs, pafs.LocalFileSystem) else None

    def path(self, *parts: str) -> str:
        """The file system path of ``parts`` below the base (resolved, and refused outside it, on
        the local file system)."""
        joined = "/".join([self.base, *parts])
        if self._real is None or not parts:
            return joined
        return inside(self._real, joined, self.url_of(*parts))

    def url_of(self, *parts: str) -> str:
        """The URL of ``parts`` below the base, for messages."""
        return "/".join([self.url, *parts])

    def _info(self, *parts: str):
        try:
            return self.fs.get_file_info(self.path(*parts))
        except (pa.ArrowException, OSError) as e:
            raise TraceError(self.url_of(*parts), "", f"cannot read: {reason(e)}") from None

    def is_file(self, *parts: str) -> bool:
        return self._info(*parts).type == pafs.FileType.File

    def is_dir(self, *parts: str) -> bool:
        return self._info(*parts).type == pafs.FileType.Directory

    def read_bytes(self, *parts: str) -> bytes:
        try:
            with self.fs.open_input_stream(self.path(*parts)) as f:
                return f.read()
        except (pa.ArrowException, OSError) as e:
            raise TraceError(self.url_of(*parts), "", f"cannot read: {reason(e)}") from None

    def subdirs(self, *parts: str) -> list[str]:
        """Names of the directories directly below ``parts``, sorted."""
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(self.path(*parts), allow_not_found=True))
        except (pa.ArrowException, OSError) as e:
            raise TraceError(self.url_of(*parts), "", f"cannot list: {reason(e)}") from None
        return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory)


def reason(e: Exception) -> str:
    # pyarrow's messages can run to several lines (a cloud SDK's detail): the first says what failed.
    text = str(e).strip().splitlines()
    return text[0] if text else type(e).__name__
