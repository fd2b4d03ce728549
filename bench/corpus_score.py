"""Score the hand-written corpus (tests/corpus/) per family: roots expected, found, extra.

    uv run python bench/corpus_score.py            # diagnose every corpus trace
    uv run python bench/corpus_score.py --golden   # read the stored reports (tests/golden/) instead

A root is an error or warning root-cause class (the classes the text report and SARIF show);
an expected root (expect.json) is found when some reported root class matches it by code, rank
and core (tests/test_corpus.py's matching); a reported root class that matches no expected root
is extra. Non-optional expected roots only count as expected; optional ones count as found when
reported and are never extra.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

CORPUS = ROOT / "tests" / "corpus"
GATING = ("error", "warning")


def _matches(item: dict, code: str, rank, core) -> bool:
    codes = item["code"] if isinstance(item["code"], list) else [item["code"]]
    return code in codes and item["rank"] in (None, rank) and (item["core"] is None or item["core"] == core)


def _root_classes_from_report(name: str, golden: bool) -> list[list[tuple]]:
    """Per reported error/warning root class: its findings' (code, rank, core)."""
    if golden:
        lines = (ROOT / "tests" / "golden" / f"corpus-{name}.jsonl").read_text().splitlines()
        findings = [json.loads(x)["finding"] for x in lines[1:] if x.startswith('{"finding"')]
    else:
        from analyzer.engine import diagnose
        from analyzer.report.json import to_json

        findings = to_json(diagnose(CORPUS / name))["findings"]
    classes: dict[str, list[tuple]] = {}
    for f in findings:
        if f["root_cause"] and f["severity"] in GATING:
            loc = f["location"]
            classes.setdefault(f["class"], []).append((f["code"], loc["rank"], loc["core"]))
    return list(classes.values())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--golden", action="store_true", help="read tests/golden/ instead of diagnosing")
    args = ap.parse_args()
    import rules

    family_of = {code: rule.family.value for code, rule in rules.registry().items()}
    expected, found, extra = Counter(), Counter(), Counter()
    traces = clean = exact = 0
    for d in sorted(p for p in CORPUS.iterdir() if (p / "expect.json").is_file()):
        traces += 1
        exp = json.loads((d / "expect.json").read_text())
        clean += bool(exp["clean"])
        classes = _root_classes_from_report(d.name, args.golden)
        ok = True
        for item in exp["roots"]:
            codes = item["code"] if isinstance(item["code"], list) else [item["code"]]
            fam = family_of.get(codes[0], "?")
            hit = any(any(_matches(item, *m) for m in cls) for cls in classes)
            if not item.get("optional"):
                expected[fam] += 1
                found[fam] += hit
                ok &= hit
        for cls in classes:
            if not any(_matches(item, *m) for item in exp["roots"] for m in cls):
                extra[family_of.get(cls[0][0], "?")] += 1
                ok = False
        exact += ok
    print(f"{traces} traces ({clean} clean), {exact} with exactly the expected roots")
    print("| family | expected | found | extra |\n|---|---|---|---|")
    for fam in sorted(set(expected) | set(extra)):
        print(f"| {fam} | {expected[fam]} | {found[fam]} | {extra[fam]} |")
    print(f"| all | {sum(expected.values())} | {sum(found.values())} | {sum(extra.values())} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
