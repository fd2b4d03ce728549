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


def _module_deps(package: str) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports at run time (anywhere in the file, functions
    included; imports under ``if TYPE_CHECKING:`` never run and are left out)."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        mod = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        pkg_parts = list(parts[:-1])
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                       and getattr(node.test, "id", "") == "TYPE_CHECKING" for n in ast.walk(node)}
        deps = set()
        for node in ast.walk(tree):
            if id(node) in typing_only or not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = pkg_parts[:len(pkg_parts) - node.level + 1]
                names = [node.module] if node.module else [a.name for a in node.names]
                deps.update(".".join(base + [n]) for n in names)
            elif node.module and node.module.split(".")[0] == package:
                deps.add(node.module)
        out[mod] = deps
    return {m: {d for d in ds if d in out and d != m} for m, ds in out.items()}


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    cycles = []

    def visit(mod: str, path: list[str]) -> None:
        state[mod] = 1
        for dep in sorted(graph[mod]):
            if state.get(dep) == 1:
                cycles.append(" -> ".join(path[path.index(dep):] + [mod, dep]) if dep in path else f"{mod} -> {dep}")
            elif not state.get(dep):
                visit(dep, path + [mod])
        state[mod] = 2

    for mod in sorted(graph):
        if not state.get(mod):
            visit(mod, [])
    return cycles


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_import_cycle(package):
    """No import cycle among a package's modules, lazy imports included (a lazy import that
    closes a cycle only hides it until someone imports in the other order)."""
    cycles = _cycles(_module_deps(package))
    assert not cycles, "\n".join(cycles)


def test_no_rule_imports_another_rule():
    """The shared analyses build on one another one way; no rule reaches into another rule's module."""
    graph = _module_deps("rules")
    rules = [m for m in graph if m.split(".")[-1].startswith("mt")]
    assert not [(m, d) for m in rules for d in graph[m] if d in rules], "a rule imports another rule's module"


def test_rules_import_only_the_public_analysis():
    """A rule reads the shared analyses through their stage results (``rules.analysis`` and its
    public modules: ``codes``, ``regions``, ``groups``, the stage modules), never a private module
    of ``rules/analysis/`` (one whose name starts with ``_``)."""
    graph = _module_deps("rules")
    rule_modules = [m for m in graph if m.split(".")[-1].startswith("mt")]
    private = [(m, d) for m in rule_modules for d in graph[m]
               if d.startswith("rules.analysis.") and d.split(".")[-1].startswith("_")]
    assert not private, "\n".join(f"{m} imports {d}" for m, d in private)


def test_analyses_never_import_a_rule():
    """rules/analysis/ sits below the rules: no analysis module imports a rule's module or the runner."""
    graph = _module_deps("rules")
    above = {m for m in graph if m.split(".")[-1].startswith("mt")} | {"rules.runner"}
    bad = [(m, d) for m in graph if m.startswith("rules.analysis") for d in graph[m] if d in above]
    assert not bad, "\n".join(f"{m} imports {d}" for m, d in bad)


def test_every_stage_result_is_frozen():
    import dataclasses

    from rules.analysis import RESULTS, Stage

    assert set(RESULTS) == set(Stage)
    for stage, (result, _) in RESULTS.items():
        assert dataclasses.is_dataclass(result) and result.__dataclass_params__.frozen, result
        assert result.stage is stage, result
