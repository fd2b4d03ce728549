"""docs/trace-format.md's generated tables match ingest/contract.py."""

from __future__ import annotations

import importlib.util

from conftest import ROOT


def test_trace_format_doc_is_up_to_date():
    spec = importlib.util.spec_from_file_location("gen_trace_format", ROOT / "docs" / "gen_trace_format.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    text = gen.DOC.read_text()
    assert gen.render(text) == text, "run: uv run python docs/gen_trace_format.py"
    assert text.count("<!-- binary:begin -->") == 1 and text.count("<!-- binary:end -->") == 1
