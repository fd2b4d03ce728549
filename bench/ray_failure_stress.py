"""Ray failure stress: a failing window, over and over, in one driver on a loaded machine.

`--engine ray` ends a run when a window fails. Each run here has 12 windows
on a local 2-CPU cluster, each ending after a random 0-50 ms, one of the
first four raising; `--load N` busy processes share the machine (CI's other
test worker). A driver that survives every run prints "N runs, driver alive";
one that Ray aborts (as 255034b's did: it cancelled the windows left, and a
cancel that meets a finishing task fails a check in Ray's C++) dies with
that check on stderr and a non-zero exit status.

    uv run --extra ray python bench/ray_failure_stress.py [--runs 150] [--load 2]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _window(dataset, window, config, codes):  # shipped by value: config is the window that fails
    import random
    import time

    time.sleep(random.random() * 0.05)
    if window == config:
        raise RuntimeError("this window fails")
    return [window]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the driver")
    args = parser.parse_args()

    import analyzer.ray_engine as engine

    ray = engine.import_ray()
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 2**20,
             _temp_dir=tempfile.mkdtemp(prefix="ray-stress-"), _node_ip_address="127.0.0.1",
             runtime_env=engine.RUNTIME_ENV, log_to_driver=False, configure_logging=False)
    engine._window_task = _window
    spin = f"import os\nwhile os.getppid() == {os.getpid()}: pass"  # ends with this driver, aborted or not
    busy = [subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.DEVNULL) for _ in range(args.load)]
    try:
        for run in range(args.runs):
            try:
                list(engine.RayWindows(max_retries=0)(Path("."), list(range(12)), random.randrange(4), []))
            except RuntimeError:
                pass
            print(f"run {run + 1}/{args.runs}", file=sys.stderr, end="\r")
    finally:
        for p in busy:
            p.kill()
        ray.shutdown()
    print(f"{args.runs} runs, driver alive")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
