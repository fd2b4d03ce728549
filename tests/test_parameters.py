"""No function takes more than 8 parameters: a kernel bundles the columns it reads (a NamedTuple of
arrays), the glue takes an options value. Counted as written: positional, keyword-only, *args and
**kwargs, without the leading ``self``/``cls`` of a method."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("analyzer", "rules", "ingest", "kernels", "moetrace")
LIMIT = 8
# Typer builds the CLI from the command function's signature: one parameter per option, so the
# command functions of analyzer/commands take as many as the command has options.
EXEMPT = {
    ("analyzer/commands/diagnose.py", "diagnose_cmd"): "typer command: one parameter per CLI option",
    ("analyzer/commands/simulate.py", "simulate"): "typer command: one parameter per CLI option",
}


def _count(fn: ast.FunctionDef | ast.AsyncFunctionDef, in_class: bool) -> int:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    if in_class and positional and positional[0].arg in ("self", "cls"):
        positional = positional[1:]
    return len(positional) + len(a.kwonlyargs) + (a.vararg is not None) + (a.kwarg is not None)


def _functions(tree: ast.AST):
    """(function, defined directly in a class) for every function of the module, nested ones too."""
    in_class = {id(f) for node in ast.walk(tree) if isinstance(node, ast.ClassDef) for f in node.body}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node, id(node) in in_class


def _too_many() -> list[tuple[str, str, int, int]]:
    out = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            for fn, in_class in _functions(ast.parse(path.read_text(), rel)):
                n = _count(fn, in_class)
                if n > LIMIT:
                    out.append((rel, fn.name, fn.lineno, n))
    return out


def test_at_most_eight_parameters():
    bad = [f"{rel}:{line} {name} takes {n}" for rel, name, line, n in _too_many() if (rel, name) not in EXEMPT]
    assert not bad, f"more than {LIMIT} parameters (bundle them):\n" + "\n".join(bad)


def test_exemptions_still_needed():
    """An exemption whose function is gone or back under the limit is dropped, not kept."""
    over = {(rel, name) for rel, name, _, _ in _too_many()}
    assert not set(EXEMPT) - over, sorted(set(EXEMPT) - over)
