"""The installed wheel puts everything under moetrace.*: no top-level rules, kernels, ingest or analyzer package.

Builds the wheel (uv build, hatch_build.py's namespace hook), installs it
without dependencies into a fresh virtual environment in a tmp dir, lends it
this environment's third-party packages through a path entry (never the
repository), and runs the console script there: --help, a tiny diagnose,
and a listing of site-packages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from _diag_helpers import events, write_trace
from conftest import ROOT

sys.path.insert(0, str(ROOT))
from hatch_build import NamespaceError, rewrite  # noqa: E402

UV = shutil.which("uv")
# One worker runs this module under pytest-xdist: the wheel and its environment (the module fixture)
# are built once.
pytestmark = pytest.mark.xdist_group("wheel")


def test_rewrite_prefixes_our_imports_and_module_names_only():
    src = ("from ingest.contract import Kind\nfrom rules import registry\nimport ingest.rings as r\n"
           "def f():\n    from analyzer.report import (render,\n        FORMATS)\n"
           "a = 'ingest.json'\nb = f\"analyzer.commands.{name}\"\nc = \"ingest.rings\"\nd = f'kernels.{m}'\n"
           "from . import rules\nfrom .rules import x\ne = 'rules are fun'\nimport numpy as np\nf = ('demo', 'ingest')\n")
    out = rewrite(src, root=ROOT).splitlines()
    assert out[:3] == ["from moetrace.ingest.contract import Kind", "from moetrace.rules import registry",
                       "import moetrace.ingest.rings as r"]
    assert out[4] == "    from moetrace.analyzer.report import (render,"
    assert out[6:10] == ["a = 'ingest.json'", 'b = f"moetrace.analyzer.commands.{name}"',
                         'c = "moetrace.ingest.rings"', "d = f'moetrace.kernels.{m}'"]
    assert out[10:] == ["from . import rules", "from .rules import x", "e = 'rules are fun'", "import numpy as np",
                         "f = ('demo', 'ingest')"]
    with pytest.raises(NamespaceError, match="x.py:2: 'import ingest"):
        rewrite("x = 1\nimport ingest.rings\n", "x.py", ROOT)


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    if UV is None:
        pytest.fail("uv is needed to build the wheel (it builds this project)")
    tmp = tmp_path_factory.mktemp("wheel")
    build = [UV, "build", "--wheel", "-q", "-o", str(tmp / "dist"), str(ROOT)]
    # hatchling from uv's cache where it is there; else uv fetches it like any build would.
    if subprocess.run(build + ["--offline"], capture_output=True, timeout=600).returncode != 0:
        subprocess.run(build, check=True, capture_output=True, timeout=600)
    (wheel,) = (tmp / "dist").glob("moetrace-*.whl")
    env_dir = tmp / "venv"
    subprocess.run([UV, "venv", "-q", "-p", sys.executable, str(env_dir)], check=True, capture_output=True)
    python = env_dir / "bin" / "python"
    subprocess.run([UV, "pip", "install", "-q", "--offline", "--no-deps", "--python", str(python), str(wheel)],
                   check=True, capture_output=True, timeout=600)
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # Third-party packages from this environment: a plain path line, so this environment's own .pth
    # files (the editable install's repository root among them) are not processed.
    (site / "zz_moetrace_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env_dir, site, tmp


def _run(venv_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, env=env, timeout=600)


def test_site_packages_has_one_package_of_ours(venv):
    env_dir, site, _ = venv
    ours = {p.name for p in site.iterdir() if not p.name.endswith((".dist-info", ".pth")) and p.name != "__pycache__"}
    ours -= {"_virtualenv.py"}
    assert ours == {"moetrace"}, ours
    assert {p.name for p in (site / "moetrace").iterdir() if p.is_dir()} >= {"ingest", "rules", "analyzer", "kernels"}
    assert (site / "moetrace" / "kernels" / "device" / "moetrace.h").is_file()


def test_installed_command_runs_from_the_namespace(venv):
    env_dir, site, tmp = venv
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    r = _run(env_dir, env_dir / "bin" / "moetrace", "--help", cwd=work)
    assert r.returncode == 0 and "diagnose" in r.stdout, r.stderr
    raw = write_trace(work / "raw", events())
    r = _run(env_dir, env_dir / "bin" / "moetrace", "diagnose", raw, "--format", "json", cwd=work)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert doc["summary"]["findings"] > 0 and doc["rules"]
    code = ("import moetrace.analyzer.engine as e, moetrace.rules as r, importlib.util as u; "
            "print(e.__file__); print(len(r.registry())); "
            "print([n for n in ('rules', 'kernels', 'ingest', 'analyzer') if u.find_spec(n)])")
    r = _run(env_dir, env_dir / "bin" / "python", "-c", code, cwd=work)
    assert r.returncode == 0, r.stderr
    path, count, top = r.stdout.splitlines()
    assert Path(path).is_relative_to(site / "moetrace") and int(count) > 10 and top == "[]"
