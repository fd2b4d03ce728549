"""Our commands' arguments are converted without pydantic (analyzer.commands._coerce) exactly as
typer's own converter converts them: every value the lean converter decides gets the same result,
type included, as typer's pydantic adapter; every other value, errors among them, is left to typer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("typer._coercion")  # typer with its own click: it converts through pydantic

from typer._click import Context  # noqa: E402
from typer._coercion import build_runtime_param  # noqa: E402

from analyzer.cli import _command  # noqa: E402
from analyzer.commands._coerce import _DEFER, _convert  # noqa: E402
CORPUS = Path(__file__).parent / "corpus"

STRINGS = ["text", "json", "sarif", "TEXT", "jsn", "error", "warning", "local", "ray", "MT501", "MT1,MT2", "",
           "1", "0", "-1", "-0", "7", "007", "+3", " 4", "4 ", "1_000", "3.0", "1e3", "x", "99999999999999999999",
           ".", "-", "a//b/", "missing/dir", str(CORPUS), str(CORPUS / "README.md"), "~", "\N{SNOWMAN}"]
VALUES = [None, True, False, 0, 1, 5, Path("x"), [], (), *STRINGS, *[(s,) for s in STRINGS], ("a", "b"),
          ["1", "2"], ("1", "x")]


def _params():
    group = _command(None)
    for name, cmd in [("", group), *group.commands.items()]:
        for p in cmd.get_params(Context(cmd)):
            yield name, cmd, p


@pytest.mark.parametrize("name,cmd,param", list(_params()), ids=lambda x: x if isinstance(x, str) else getattr(x, "name", "x"))
def test_lean_conversion_is_typers(name, cmd, param):
    ctx = Context(cmd)
    typers = build_runtime_param(param.type_descriptor)
    decided = 0
    for value in VALUES:
        got = _convert(param, value, ctx)
        if got is _DEFER:
            continue
        decided += 1
        want = typers.coerce(value, param=param, ctx=ctx)
        assert (type(got), got) == (type(want), want), (value, got, want)
    assert decided  # None at least: an option not given


def _run(*args: str) -> tuple[list[str], str]:
    """(the modules a command imported, what it printed on stderr before them)."""
    code = ("import json, os, sys\n"
            f"sys.argv = ['moetrace', *{list(args)!r}]\n"
            "sys.stdout = open(os.devnull, 'w')\n"
            "from analyzer.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print(json.dumps(sorted(sys.modules)), file=sys.stderr)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    *said, modules = r.stderr.strip().splitlines()
    return json.loads(modules), "\n".join(said)


def _modules(*args: str) -> list[str]:
    return _run(*args)[0]


def test_a_diagnose_converts_its_arguments_without_pydantic(tmp_path):
    trace = str(CORPUS / "classic_invalid_expert_9")
    modules, said = _run("diagnose", trace, "--format", "json", "--fail-on", "warning", "--select", "MT5",
                         "--max-findings", "3", "-j", "1", "-o", str(tmp_path / "r.json"), "--config", "/dev/null")
    assert "analyzer.commands.diagnose" in modules and "pydantic" not in modules
    assert (tmp_path / "r.json").is_file(), said  # once, under a loaded suite, it was not: say why
    assert json.loads((tmp_path / "r.json").read_text())["findings"]


@pytest.mark.parametrize("args", [["--help"], ["diagnose", "--help"], ["simulate", "--help"]])
def test_help_converts_without_pydantic(args):
    """A command's --help flag went through a pydantic adapter too (~0.3 s CPU for `diagnose --help`)."""
    modules = _modules(*args)
    assert "typer" in modules and "pydantic" not in modules


def test_a_value_typer_refuses_is_refused_in_typers_words():
    trace = str(CORPUS / "classic_invalid_expert_9")
    code = ("import sys\n"
            f"sys.argv = ['moetrace', 'diagnose', {trace!r}, '--max-findings', '0']\n"
            "from analyzer.cli import main\nmain()")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 2
    assert r.stderr == ("moetrace: error: command line: --max-findings: Input should be greater than or equal to 1 "
                        "(see 'moetrace diagnose --help')\n")
