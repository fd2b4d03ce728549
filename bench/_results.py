"""bench/RESULTS.md is shared by every benchmark: each rewrites only its own delimited section."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("RESULTS.md")


def write_section(block: str, begin: str, end: str, before: str | None = None) -> None:
    """Put ``block`` (which starts with ``begin`` and ends with ``end``) in place of the section
    between those markers; where there is none yet, before the marker ``before`` if the file
    has it, else at the end. Every other section stays as it is."""
    block = block.strip("\n")
    doc = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    if begin in doc and end in doc:
        a, b = doc.index(begin), doc.index(end) + len(end)
        doc = doc[:a] + block + doc[b:]
    elif before is not None and before in doc:
        doc = doc.replace(before, block + "\n\n" + before, 1)
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(doc)
