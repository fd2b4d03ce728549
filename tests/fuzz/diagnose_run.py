"""Diagnose one trace in a bounded subprocess and classify what went wrong (for the diagnose fuzz).

``diagnose(trace)`` runs tests/fuzz/diagnose_child.py with NUMBA_BOUNDSCHECK=1
under a time and a resident-memory bound and answers None (every run exited
0 or 1) or a crash class: 'signal-N', 'hang', 'memory', 'internal-<Exc>-<rule>' (a rule
raised), 'internal-<Exc>' (elsewhere), 'exit-N'. ``shrink`` drops events while the same crash remains.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

from _boundscheck import boundscheck_env

from . import weird
from .diagnose_child import RUNS

ROOT = Path(__file__).resolve().parent.parent.parent


def diagnose(trace: Path, timeout: float) -> str | None:
    """The crash class of diagnosing ``trace`` (None when every run exits 0 or 1)."""
    env = boundscheck_env()  # its own numba cache: the shared one holds unchecked code
    res = run_bounded([sys.executable, "-m", "fuzz.diagnose_child", str(trace)], env, timeout * len(RUNS),
                      MEMORY_LIMIT)
    if isinstance(res, str):
        return res
    if res.returncode < 0:
        return f"signal-{-res.returncode}"
    for line in res.stdout.splitlines():
        run = json.loads(line)
        if run["code"] not in (0, 1):
            # analyzer.exits: "internal error: TYPE: MESSAGE; ...", a rule's MESSAGE "rule CODE raised EXC: ..."
            m = re.search(r"internal error: (\w+): (?:rule (\w+) raised (\w+))?", run["stderr"])
            if m:
                return f"internal-{m.group(3)}-{m.group(2)}" if m.group(2) else f"internal-{m.group(1)}"
            return f"exit-{run['code']}"
    if res.returncode != 0:
        return "child-" + (res.stderr.strip().splitlines() or ["?"])[-1][:80]
    return None


MEMORY_LIMIT = 4 << 30  # resident bytes a diagnose of a few hundred events may use; past it, a crash


def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_bounded(cmd, env, timeout: float, memory: int):
    """The finished process, or 'hang' / 'memory' when it ran past ``timeout`` s or ``memory`` bytes
    resident (it is killed: a runaway allocation must not take the shared machine down)."""
    import tempfile

    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, env=env, cwd=ROOT)
        deadline = time.monotonic() + timeout
        verdict = None
        while proc.poll() is None:
            if time.monotonic() > deadline:
                verdict = "hang"
            elif _rss(proc.pid) > memory:
                verdict = "memory"
            if verdict:
                proc.kill()
                proc.wait()
                return verdict
            time.sleep(0.1)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(cmd, proc.returncode, out.read(), err.read())


def shrink(d: Path, doc: dict, evs: list[dict], ring: bool, crash: str, timeout: float, budget: int) -> list[dict]:
    """Drop chunks of events while the same crash remains (at most ``budget`` diagnose runs)."""
    chunk = max(1, len(evs) // 2)
    while chunk >= 1 and budget > 0:
        i, changed = 0, False
        while i < len(evs) and budget > 0:
            trial = evs[:i] + evs[i + chunk:]
            budget -= 1
            if trial and diagnose(weird.write(d, doc, trial, ring), timeout) == crash:
                evs, changed = trial, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    weird.write(d, doc, evs, ring)
    return evs
