"""The rule fixtures: where they live, the cases file that describes them, and their input.

``tests/fixtures/rules/<CODE>/<fire|quiet>_<what>/`` holds a fixture's events
(``events.jsonl``; ``lost.json`` where it stands in for a ring wrap or a
missing dump). Its manifest is one of the shared ones,
``tests/fixtures/rules/manifests/<name>.json``, named by its case, or, where
no other fixture has the same layout, its own ``manifest.json``.

``tests/fixtures/rules/<CODE>/cases.toml`` has one table per fixture
directory, named as it is::

    [fire_what]
    manifest = "dispatch_2x2"   # shared manifest; absent: the fixture's own manifest.json
    options = { name = 1 }      # rule options over the rule's defaults
    count = 1                   # how many hits; required for fire_*, 0 where absent

    [[fire_what.hits]]          # the first hits, in the rule's order
    key = [0, 0, 3]
    confidence = "certain"
    message = "..."             # a substring of the message
    roles = ["stuck wait"]      # the roles of its rows, in order
    caused_by = ["MT501"]       # the codes it names run with the rules it cites

Every field of a hit that is stated is asserted. ``gap`` (a substring of
``Hit.gap``), ``caused_by`` and ``severity`` are asserted also where absent
(no gap, no cause, the rule's default), so a hit that starts naming a gap or a
cause fails its case; ``blocks``, ``stalls`` and ``defect`` only where stated.
A quiet fixture may fire only where it holds ``lost.json`` and every hit names
the gap (``Hit.gap``); its count then says how many such notes it gives.
"""

from __future__ import annotations

import functools
import shutil
import tomllib
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).parent / "fixtures" / "rules"
MANIFESTS = FIXTURES / "manifests"
CASE_FIELDS = {"manifest", "options", "count", "hits"}
HIT_FIELDS = {"key", "confidence", "severity", "gap", "message", "roles", "caused_by", "blocks", "stalls",
              "defect"}
# What a fixture directory may hold besides its events (*.jsonl).
FIXTURE_FILES = {"manifest.json", "lost.json"}


def rule_codes() -> list[str]:
    """The codes that have a fixture directory (every directory here but the shared manifests)."""
    return sorted(d.name for d in FIXTURES.iterdir() if d.is_dir() and d != MANIFESTS)


@functools.cache
def cases(code: str) -> dict[str, dict[str, Any]]:
    """The rule's cases file, by fixture directory name ({} where there is none)."""
    path = FIXTURES / code / "cases.toml"
    if not path.is_file():
        return {}
    with path.open("rb") as f:
        return tomllib.load(f)


def fixture_dirs(code: str) -> list[Path]:
    """The rule's fixture directories on disk."""
    d = FIXTURES / code
    return sorted(p for p in d.iterdir() if p.is_dir()) if d.is_dir() else []


def all_fixtures() -> list[Path]:
    """Every fixture a cases file names, in code and name order."""
    return [FIXTURES / code / name for code in rule_codes() for name in sorted(cases(code))]


def case_of(fixture: Path) -> dict[str, Any]:
    return cases(fixture.parent.name)[fixture.name]


def manifest_of(fixture: Path) -> Path:
    """The manifest the fixture's trace is read with: the shared one its case names, or its own."""
    name = case_of(fixture).get("manifest")
    return MANIFESTS / f"{name}.json" if name else fixture / "manifest.json"


def fixture_input(fixture: Path, dest: Path) -> Path:
    """``dest``, made a trace directory the ingest reads as it reads any input: the fixture's
    manifest and its events side by side (``lost.json`` stays behind: ingest knows no such file)."""
    dest.mkdir(parents=True)
    shutil.copyfile(manifest_of(fixture), dest / "manifest.json")
    for p in fixture.iterdir():
        if p.name not in FIXTURE_FILES:
            shutil.copyfile(p, dest / p.name)
    return dest
