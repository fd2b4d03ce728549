"""Run diagnose on one trace in every report format (and one launch per window); one JSON line per run.

Run as a subprocess (``python -m fuzz.diagnose_child TRACE``, tests/ on the path) with
NUMBA_BOUNDSCHECK=1, so a kernel reading out of bounds raises instead of corrupting
memory, and a SIGSEGV or a hang kills only this process.
"""

from __future__ import annotations

import json
import sys

RUNS = (("-f", "text"), ("-f", "json"), ("-f", "sarif"), ("-f", "junit"), ("-f", "html"),
        ("-f", "json", "--window-events", "1"))


def main(trace: str) -> int:
    from conftest import run_cli

    for args in RUNS:
        res = run_cli("diagnose", trace, "--no-progress", *args)
        print(json.dumps({"args": args, "code": res.code, "stderr": res.stderr[-600:]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
