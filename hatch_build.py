"""Build hook: the wheel installs every package of the repository under one namespace, ``moetrace``.

In the repository the layers are top-level folders (``ingest``, ``rules``,
``analyzer``, ``kernels``, and ``moetrace`` for the Python API) and import
each other by those names; that is how the tests, ``uv run`` and the editable
install see them.  An installed wheel must not put a ``rules`` or ``kernels``
package into a user's site-packages, so this hook writes the wheel's copy of
each package to ``moetrace/<name>/`` with the imports of our packages
prefixed: ``from ingest.contract import X`` becomes ``from
moetrace.ingest.contract import X``, and a string naming one of our modules
(``f"analyzer.commands.{name}"`` for importlib) gets the same prefix.  Only
import statements and string tokens that start with ``<package>.`` are
touched, found with ``tokenize``, so code, comments and layout stay as they
are.  An ``import ingest.x`` without ``as`` cannot keep its meaning under a
prefix and fails the build with the file and line.  Editable installs are
left alone (the repository root is on sys.path there).

Why at build time and not in the sources: a source rewrite to ``moetrace.``
imports would touch every module of every layer at once; the repository
layout, its tests and its layering check stay exactly as they are.
"""

from __future__ import annotations

import io
import re
import shutil
import tempfile
import tokenize
from pathlib import Path

try:
    from hatchling.builders.hooks.plugin.interface import BuildHookInterface
except ImportError:  # the tests import rewrite() without hatchling installed; a build always has it
    BuildHookInterface = object

NAMESPACE = "moetrace"
PACKAGES = ("ingest", "rules", "analyzer", "kernels")  # top-level in the repo, under moetrace/ in the wheel
_SKIP = ("__pycache__", ".pytest_cache")
_STRING = re.compile(r"^(?P<prefix>[rRbBuUfF]*)(?P<quote>'''|\"\"\"|'|\")(?P<path>(?:" + "|".join(PACKAGES)
                     + r")(?:\.[A-Za-z_]\w*)*)(?P<rest>\.\{|['\"])")


class NamespaceError(Exception):
    pass


def names_module(dotted: str, root: Path) -> bool:
    """Does ``a.b.c`` name a module or package of the repository (not a file name like 'ingest.json')?"""
    path = root.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def rewrite(source: str, where: str = "<source>", root: Path | None = None) -> str:
    """``source`` with our packages' imports and module-name strings under ``moetrace.``.

    A string is a module name when it is one of our modules' dotted path,
    whole (``"ingest.rings"``) or followed by an f-string field
    (``f"kernels.{mod}"``); ``"ingest.json"`` (a file name) is left alone.
    """
    root = root or Path(__file__).resolve().parent
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    edits: list[tuple[tuple[int, int], tuple[int, int], str]] = []  # (start, end, new text)
    for i, tok in enumerate(tokens):
        if tok.type == tokenize.NAME and tok.string in PACKAGES and i > 0:
            prev = _previous(tokens, i)
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            if prev is not None and prev.string == "from" and nxt is not None and nxt.string in (".", "import"):
                edits.append((tok.start, tok.end, f"{NAMESPACE}.{tok.string}"))
            elif prev is not None and prev.string in ("import", ",") and _in_import(tokens, i):
                if not _has_alias(tokens, i):
                    raise NamespaceError(f"{where}:{tok.start[0]}: 'import {tok.string}...' without 'as' "
                                         f"cannot move under {NAMESPACE}.; write 'from {tok.string}... import ...'")
                edits.append((tok.start, tok.end, f"{NAMESPACE}.{tok.string}"))
        elif tok.type == tokenize.STRING:
            m = _STRING.match(tok.string)
            dotted = m and (m.group("rest") == ".{" or "." in m.group("path"))  # "ingest" alone is a word
            if dotted and names_module(m.group("path"), root):
                at = (tok.start[0], tok.start[1] + m.start("path"))
                edits.append((at, at, f"{NAMESPACE}."))
        elif getattr(tokenize, "FSTRING_MIDDLE", None) == tok.type and tokens[i - 1].type == tokenize.FSTRING_START:
            m = re.match(r"((?:" + "|".join(PACKAGES) + r")(?:\.[A-Za-z_]\w*)*)(\.?)$", tok.string)
            if m and (m.group(2) or "." in m.group(1)) and names_module(m.group(1), root):  # Python 3.12+: f-strings are split into parts
                edits.append((tok.start, tok.start, f"{NAMESPACE}."))
    return _apply(source, edits)


def _previous(tokens, i):
    j = i - 1
    while j >= 0 and tokens[j].type in (tokenize.NL, tokenize.COMMENT):
        j -= 1
    return tokens[j] if j >= 0 else None


def _statement_start(tokens, i) -> int:
    j = i
    while j > 0 and tokens[j - 1].type not in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) \
            and tokens[j - 1].string != ";":
        j -= 1
    return j


def _in_import(tokens, i) -> bool:
    return tokens[_statement_start(tokens, i)].string == "import"


def _has_alias(tokens, i) -> bool:
    j = i + 1
    while j < len(tokens) and (tokens[j].type == tokenize.NAME and tokens[j].string != "as" or tokens[j].string == "."):
        j += 1
    return j < len(tokens) and tokens[j].string == "as"


def _apply(source: str, edits) -> str:
    lines = source.splitlines(keepends=True)
    for (row, col), (erow, ecol), text in sorted(edits, reverse=True):
        line = lines[row - 1]
        assert row == erow
        lines[row - 1] = line[:col] + text + line[ecol:]
    return "".join(lines)


def build_tree(root: Path, out: Path) -> dict[str, str]:
    """Write the namespaced copy of every package under ``out``; returns {file written: path in the wheel}."""
    mapping: dict[str, str] = {}
    for pkg in (NAMESPACE, *PACKAGES):
        for src in sorted((root / pkg).rglob("*")):
            rel = src.relative_to(root)
            if not src.is_file() or any(part in _SKIP for part in rel.parts) or src.suffix in (".pyc", ".so"):
                continue
            dest_rel = rel if pkg == NAMESPACE else Path(NAMESPACE) / rel
            dest = out / dest_rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if src.suffix == ".py":
                dest.write_text(rewrite(src.read_text(), str(rel), root))
            else:
                shutil.copyfile(src, dest)
            mapping[str(dest)] = dest_rel.as_posix()
    return mapping


class NamespaceHook(BuildHookInterface):
    PLUGIN_NAME = "moetrace-namespace"

    def initialize(self, version: str, build_data: dict) -> None:
        if version == "editable":
            return
        self._tmp = tempfile.mkdtemp(prefix="moetrace-wheel-")
        build_data["force_include"].update(build_tree(Path(self.root), Path(self._tmp)))

    def finalize(self, version: str, build_data: dict, artifact_path: str) -> None:
        tmp = getattr(self, "_tmp", None)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
