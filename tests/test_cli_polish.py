"""The command line's manners: one wording for a bad choice, one line per error, help without typer's internals."""

from __future__ import annotations

import re

import pytest

from _diag_helpers import make_dataset
from conftest import run_cli

CHOICE = re.compile(r"^moetrace: error: command line: (--[a-z-]+): '([^']*)' is not one of ('[^']+'(, '[^']+')*)"
                    r" \(see 'moetrace [a-z]+ --help'\)\n$")


@pytest.fixture(scope="module")
def ds(tmp_path_factory):
    return make_dataset(tmp_path_factory.mktemp("polish"))


@pytest.mark.parametrize("args, option", [
    (["diagnose", "DS", "--format", "yaml"], "--format"),
    (["diagnose", "DS", "--fail-on", "fatal"], "--fail-on"),
    (["query", "DS", "select 1", "--format", "xml"], "--format"),
    (["ingest", "DS", "-o", "OUT", "--format", "yaml"], "--format"),
    (["rules", "--format", "yaml"], "--format"),
    (["simulate", "--protocol", "nope", "-o", "OUT"], "--protocol"),
    (["simulate", "--protocol", "classic", "--routing", "zipf", "-o", "OUT"], "--routing"),
])
def test_one_wording_for_a_bad_choice(ds, tmp_path, args, option):
    args = [str(ds) if a == "DS" else str(tmp_path / "out") if a == "OUT" else a for a in args]
    r = run_cli(*args)
    assert r.code == 2 and r.stdout == ""
    m = CHOICE.match(r.stderr)
    assert m, r.stderr
    assert m.group(1) == option and m.group(2) == args[args.index(option) + 1]
    assert not (tmp_path / "out").exists()


def test_config_choice_speaks_the_same_words(ds, tmp_path):
    cfg = tmp_path / "moetrace.toml"
    cfg.write_text('[options.MT401]\nordered_engines = ["rocee"]\n')
    r = run_cli("diagnose", ds, "--config", cfg)
    assert r.code == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr == (f"moetrace: error: {cfg}: options.MT401.ordered_engines: 'rocee' is not one of 'mte', "
                        "'sdma', 'udma', 'roce', 'local', 'all', 'p2p', 'ibgda'\n")
    assert "internal error" not in r.stderr
    cfg.write_text('[options.MT401]\nordered_engines = ["roce", "udma"]\n')
    assert run_cli("diagnose", ds, "--config", cfg, "--fail-on", "never").code == 0


@pytest.mark.parametrize("at, text", [
    ("rank=99", "bad --at item 'rank=99': rank must lie in [0, 4) (--ranks 4)"),
    ("core=2", "bad --at item 'core=2': core must lie in [0, 2) (--cores 2)"),
    ("bogus=1", "bad --at item 'bogus=1': 'bogus' is not one of 'rank', 'core'"),
    ("rank=x", "bad --at item 'rank=x': 'x' is not an integer"),
    ("rank", "bad --at item 'rank': expected key=value"),
])
def test_simulate_placement_is_checked_before_running(tmp_path, at, text):
    out = tmp_path / "sim"
    r = run_cli("simulate", "--protocol", "classic", "--ranks", "4", "--cores", "2", "--fault", "invalid-expert",
                "--at", at, "-o", out)
    assert r.code == 2 and r.stderr.count("\n") == 1 and text in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


def test_simulate_refuses_an_existing_output_without_force(tmp_path):
    args = ["simulate", "--protocol", "classic", "--ranks", "2", "--cores", "1", "--tokens", "4"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert run_cli(*args, "-o", empty).code == 0  # an empty directory holds nothing to lose
    before = (empty / "truth.json").read_bytes()
    r = run_cli(*args, "--seed", "5", "-o", empty)
    assert r.code == 2 and r.stderr == f"moetrace: error: {empty}: output already exists (use --force to replace it)\n"
    assert (empty / "truth.json").read_bytes() == before
    assert run_cli(*args, "--seed", "5", "-o", empty, "--force").code == 0
    assert (empty / "truth.json").read_bytes() != before


def test_usage_errors_are_one_line():
    for args, text in ((["diagnose"], "Missing argument 'INPUT'"), (["diagnose", "x", "--bogus"], "--bogus"),
                       (["nocmd"], "No such command 'nocmd'")):
        r = run_cli(*args)
        assert r.code == 2 and r.stderr.count("\n") == 1 and text in r.stderr and "Usage:" not in r.stderr, r.stderr


COMMANDS = ("demo", "diagnose", "ingest", "query", "timeline", "simulate", "rules", "explain")
TYPER_LABEL = re.compile(r"<(?:list\[|str>|int|path>|float|text>|bool)|\{[A-Za-z_]+(?:\.\.\.)?\}|list\[Path\]")


@pytest.mark.parametrize("command", COMMANDS)
def test_help_has_no_typer_internals(command):
    r = run_cli(command, "--help")
    assert r.code == 0 and "Usage: moetrace " + command in r.stdout
    assert not TYPER_LABEL.search(r.stdout), TYPER_LABEL.search(r.stdout).group(0)


def test_help_only_lists_agree_with_the_kernels():
    from analyzer.commands import simulate as cli
    from analyzer.commands.simulate import PROTOCOL_HELP, ROUTINGS
    from kernels.base import ROUTE_LAYOUTS
    from kernels.sim.machine import BARRIER_LAYOUTS
    from kernels.api import PROTOCOLS
    from kernels.base import ROUTINGS as KERNEL_ROUTINGS

    assert set(PROTOCOL_HELP) == set(PROTOCOLS) and ROUTINGS == KERNEL_ROUTINGS
    assert cli.BARRIER_LAYOUTS == BARRIER_LAYOUTS and cli.ROUTE_LAYOUTS == ROUTE_LAYOUTS
