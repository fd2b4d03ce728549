"""Input errors: one line that names the file and the place."""

from __future__ import annotations

from pathlib import Path


class TraceError(Exception):
    """Bad input. ``where`` is 'line 12', 'byte 4096', a JSON path, or empty.

    The CLI prints ``str(err)`` and exits 2; no traceback, no partial output.
    """

    def __init__(self, path: str | Path | None, where: str, message: str):
        self.path = None if path is None else str(path)
        self.where = where
        self.message = message
        super().__init__(self.__str__())

    def __reduce__(self):  # it crosses process boundaries (parallel diagnose windows)
        return type(self), (self.path, self.where, self.message)

    def __str__(self) -> str:
        place = self.path or "<input>"
        if self.where:
            place = f"{place}:{self.where}"
        return f"{place}: {self.message}"
