"""``--engine ray`` where Ray is not installed: one line naming the extra, exit 2 (runs without Ray)."""

from __future__ import annotations

import os
import sys


def test_engine_ray_without_ray_names_the_extra(tmp_path, cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    monkeypatch.delenv("RAY_ENABLE_UV_RUN_RUNTIME_ENV", raising=False)
    r = cli("diagnose", str(tmp_path), "--engine", "ray")
    assert r.code == 2 and not r.stdout
    assert r.stderr == "moetrace: error: --engine ray needs Ray: pip install 'moetrace[ray]'\n"
    # The uv working-directory upload is switched off before ray is even tried.
    assert os.environ["RAY_ENABLE_UV_RUN_RUNTIME_ENV"] == "0"
