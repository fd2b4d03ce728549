"""Write every corpus trace: ``python tests/corpus/gen/make.py [OUT_DIR]`` (default tests/corpus).

Each case's directory gets manifest.json, its events (events.jsonl, or rank*.mtr ring dumps for
the cases that ask for rings) and expect.json. Deterministic: the same bytes on every run.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "gen"

from . import cases_classic, cases_wrong_slot, deepep, fused, generation, reduce_scatter, udma_counts  # noqa: E402,F401  (registering)
from . import cases_engines  # noqa: E402,F401  (registering)
from . import cases_roots, split_generation  # noqa: E402,F401  (registering)
from . import cases_unusual, cases_unusual2  # noqa: E402,F401  (issue 18: unusual but legal)
from . import cases_two_faults  # noqa: E402,F401  (issue 18: two independent defects)
from ._trace import dump_json, write_jsonl  # noqa: E402
from .registry import CASES  # noqa: E402

CORPUS = Path(__file__).resolve().parent.parent


def build(name: str, out: Path) -> Path:
    got = CASES[name]()
    trace, expect = got[0], got[1]
    options = got[2] if len(got) > 2 else {}
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    for old in d.iterdir():
        old.unlink()
    if "ring" in options:
        from ._rings import write_rings

        write_rings(trace, d, options["ring"])
    else:
        write_jsonl(trace, d, options.get("cut_before"))
    doc = dict(expect)
    doc["trace"] = (CASES[name].__doc__ or "").strip().split("\n\n")[0].replace("\n    ", " ")
    (d / "expect.json").write_text(dump_json(doc))
    return d


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else CORPUS
    for name in sorted(CASES):
        build(name, out)
    print(f"{len(CASES)} traces written under {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
