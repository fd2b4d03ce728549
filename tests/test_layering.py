"""Data flows one way: kernels -> ingest -> sql/rules -> analyzer. A lower layer never imports a higher one."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# What each package may import of ours (besides itself).
ALLOWED = {
    "ingest": set(),
    "kernels": {"ingest"},
    "rules": {"ingest"},
    "analyzer": {"ingest", "rules", "kernels"},
    "moetrace": {"ingest", "rules", "kernels", "analyzer"},  # the Python API, above everything
}
OURS = set(ALLOWED)


def _imports(path: Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split(".")[0]


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_upward_imports(package):
    bad = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, top in _imports(path):
            if top in OURS and top != package and top not in ALLOWED[package]:
                bad.append(f"{path.relative_to(ROOT)}:{line} imports {top}")
    assert not bad, "\n".join(bad)
