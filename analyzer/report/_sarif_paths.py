"""Where a SARIF location points: manifest source paths and trace files as repository-relative URIs.

Code scanning shows a result only on a file of the repository, named by a
path relative to its root.  The repository root is the current directory
(a CI step runs in its checkout); it is the ``SRCROOT`` base every relative
URI names (``uriBaseId``), declared in the run's ``originalUriBaseIds``.

A manifest's ``sites`` name files as the kernel's build saw them:
``--source-root DIR`` says where its relative paths sit in the repository
(``kernels/x.cc`` with ``--source-root csrc`` is ``csrc/kernels/x.cc``);
an absolute path inside the repository is made relative.  A location with
no site falls back to the trace given on the command line, line 1 (a
dataset directory: its manifest.json).  A path outside the repository stays
an absolute ``file:`` URI: valid SARIF, though code scanning cannot show it.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from typing import Any, Sequence
from urllib.parse import quote

from analyzer.finding import _split_source

SRCROOT = "SRCROOT"


class Paths:
    def __init__(self, inputs: Sequence[str], source_root: str | Path | None = None, root: Path | None = None):
        self.root = Path(os.path.abspath(root or Path.cwd()))
        self.source_root = Path(os.path.abspath(self.root / source_root)) if source_root else self.root
        self.inputs = list(inputs)

    def base(self) -> dict[str, Any]:
        return {"uri": self.root.as_uri().rstrip("/") + "/",
                "description": {"text": "the repository root (the directory moetrace ran in); "
                                        "result paths are relative to it"}}

    def artifact(self, path: str, *, relative_to: Path) -> dict[str, Any]:
        path = path.replace("\\", "/")
        full = Path(os.path.normpath(path if os.path.isabs(path) else relative_to / path))
        try:
            rel = PurePosixPath(full.relative_to(self.root).as_posix())
        except ValueError:
            return {"uri": full.as_uri()}
        return {"uri": quote(str(rel), safe="/:@-._~"), "uriBaseId": SRCROOT}

    def physical(self, source: str | None) -> dict[str, Any]:
        """The site's file:line, else the trace file, line 1: every location has one (GitHub requires it)."""
        if source:
            path, line = _split_source(source)
            return {"artifactLocation": self.artifact(path, relative_to=self.source_root),
                    "region": {"startLine": line if line is not None and line >= 1 else 1}}
        return {"artifactLocation": self.artifact(self.trace_file(), relative_to=Path.cwd()),
                "region": {"startLine": 1}}

    def trace_file(self) -> str:
        if not self.inputs:
            return "moetrace.trace"
        first = Path(self.inputs[0])
        manifest = first / "manifest.json"
        return str(manifest) if first.is_dir() and manifest.is_file() else str(first)
