"""`moetrace --help` must stay fast: no heavy package may load just to print help."""

import subprocess
import sys

HEAVY = ("numpy", "numba", "pyarrow", "duckdb", "polars")


def test_help_imports_no_heavy_package():
    code = ("import sys; sys.argv = ['moetrace', '--help']\n"
            "from analyzer.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', [m for m in {HEAVY!r} if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "LOADED []" in out, out.splitlines()[-1]
    assert "diagnose" in out and "simulate" in out
