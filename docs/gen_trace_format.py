"""Regenerate the tables of docs/trace-format.md from ingest/contract.py and ingest/manifest.py.

    python docs/gen_trace_format.py          # rewrite the generated blocks in place
    python docs/gen_trace_format.py --check  # exit 1 if the document is stale

Each generated block sits between ``<!-- gen:NAME:begin -->`` and
``<!-- gen:NAME:end -->``; everything outside those markers is hand-written.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "trace-format.md"
sys.path.insert(0, str(ROOT))

from ingest.contract import (ALLOWED, COLUMNS, COMMON_OPTIONAL, FIELDS, JSON_NAME, RANK_FIELDS, Kind, Role,  # noqa: E402
                             json_name)
from ingest.manifest import PLATFORMS, SLOT_INDEX, TRANSPORTS  # noqa: E402
from ingest.value_ranges import must_be_rank  # noqa: E402


def _columns() -> str:
    rows = ["| column | type | JSON form | meaning |", "|---|---|---|---|"]
    for c in COLUMNS:
        if c.enum is not None:
            form = f"name ({c.enum.__name__})"
        elif c.ref == "region":
            form = "region name"
        elif str(c.type) == "string":
            form = "string"
        else:
            form = "integer"
        env = " (every event)" if c.envelope else ""
        rows.append(f"| `{c.name}` | {c.type} | {form} | {c.doc}{env} |")
    return "\n".join(rows)


def _kinds() -> str:
    rows = ["| kind | required | optional |", "|---|---|---|"]
    for kind, (req, opt) in FIELDS.items():
        def names(cols):
            out = []
            for c in cols:
                jn = json_name(kind, c)
                allowed = ALLOWED.get((kind, c))
                text = f"`{jn}`"
                if jn != c:
                    text += f" (column `{c}`)"
                if allowed is not None:
                    enum = next(col.enum for col in COLUMNS if col.name == c)
                    text += " in {" + ", ".join(enum(a).wire for a in sorted(allowed)) + "}"
                out.append(text)
            return ", ".join(out) or "—"
        rows.append(f"| `{kind.wire}` | {names(req)} | {names(opt)} |")
    rows.append("")
    rows.append("Every kind may also carry " + ", ".join(f"`{c}`" for c in COMMON_OPTIONAL) + ".")
    if JSON_NAME:
        rows.append("JSON keys that differ from their column: " + ", ".join(
            f"`{k.wire}`.`{v}` is column `{c}`" for (k, c), v in JSON_NAME.items()) + ".")
    return "\n".join(rows)


def _enums() -> str:
    seen = []
    for c in COLUMNS:
        if c.enum is not None and c.enum not in seen:
            seen.append(c.enum)
    seen.append(Role)
    rows = ["| enum | names (code) |", "|---|---|"]
    for e in seen:
        rows.append(f"| {e.__name__} | " + ", ".join(f"`{m.wire}` ({int(m)})" for m in e) + " |")
    return "\n".join(rows)


def _slot_index() -> str:
    rows = ["| `index` | meaning |", "|---|---|"]
    rows += [f"| `{k}` | {v} |" for k, v in SLOT_INDEX.items()]
    return "\n".join(rows)


def _platforms() -> str:
    rows = ["| `platform` | what it supports |", "|---|---|"]
    rows += [f"| `{k}` | {v} |" for k, v in PLATFORMS.items()]
    rows.append("")
    rows.append("Transports (`transport` entries): " + ", ".join(f"`{e.wire}`" for e in TRANSPORTS) + ".")
    return "\n".join(rows)


def _rank_checks() -> str:
    """Which rank-valued fields every reader checks against the manifest (value_ranges.must_be_rank)."""
    checked, computed = [], []
    for col in RANK_FIELDS:
        kinds = [k for k in Kind if col in ("rank",) + FIELDS[k][0] + FIELDS[k][1]]
        yes = [k.wire for k in kinds if must_be_rank(k, col)]
        no = [k.wire for k in kinds if not must_be_rank(k, col)]
        if col == "rank":
            checked.append("`rank` (every event)")
            continue
        if yes:
            checked.append(f"`{col}` of " + ", ".join(yes))
        if no:
            computed.append(f"`{col}` of " + ", ".join(no))
    return ("- " + "; ".join(checked) + " lie in `[0, ranks)`, `core` in `[0, cores)`: they address memory.\n"
            "- " + "; ".join(computed) + " are what the kernel computed: a value outside the ranks is "
            "evidence for the rules (MT501, MT502), so ingest only checks that it fits its column type.")


BLOCKS = {"columns": _columns, "kinds": _kinds, "platforms": _platforms, "enums": _enums, "slot_index": _slot_index,
          "rank_checks": _rank_checks}


def render(text: str) -> str:
    for name, fn in BLOCKS.items():
        pat = re.compile(rf"(<!-- gen:{name}:begin -->\n).*?(<!-- gen:{name}:end -->)", re.S)
        if not pat.search(text):
            raise SystemExit(f"{DOC}: block {name} is missing")
        text = pat.sub(lambda m: m.group(1) + fn() + "\n" + m.group(2), text)
    return text


def main(argv: list[str]) -> int:
    text = DOC.read_text()
    new = render(text)
    if "--check" in argv:
        if new != text:
            print(f"{DOC} is stale: run python docs/gen_trace_format.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
