"""Every report format renders every report the engine makes of the traces we have.

The traces: every corpus case (tests/corpus), every stored OpenSHMEM run
(tests/data/oshmem), and a handful of the accuracy matrix's simulated faulty runs
(bench/_accuracy_lib.py), one fault of each family with the full manifest and
bare, and the full ones again cut into one window per launch, so a symptom's cause
may sit in another window. Each trace is diagnosed once, in-process (a stored trace's
report is the one tests/test_corpus.py or tests/test_oshmem.py checks: _stored_reports), and its one
report rendered in all of analyzer.report.FORMATS (HTML with and without its trace
facts, text also capped and coloured), each output checked for what its consumer
needs: json parses and holds every finding, sarif passes the schema and GitHub's
rules, junit parses as XML, html is one self-contained, balanced document.
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from _diag_helpers import RULES, make_dataset
from _stored_reports import group, report_of
from _sarif_check import check_sarif
from analyzer.config import Config
from analyzer.report import FORMATS, render
from rules.base import Family, Rule, Severity

TESTS = Path(__file__).resolve().parent
sys.path.insert(0, str(TESTS.parent / "bench"))
import _accuracy_lib as lib  # noqa: E402

CORPUS = sorted(p for p in (TESTS / "corpus").iterdir() if (p / "expect.json").is_file())
OSHMEM = sorted(p for p in (TESTS / "data" / "oshmem").iterdir() if (p / "manifest.json").is_file())


def _sample() -> list[tuple[str, str, str]]:
    """(protocol, fault, mode): the first fault of each family in kernels' order, full and bare."""
    import kernels

    first: dict[str, tuple[str, str]] = {}
    for proto, cls in kernels.PROTOCOLS.items():
        for fault in cls.faults:
            first.setdefault(kernels.FAULTS[fault].family, (proto, fault))
    return [(p, f, m) for _, (p, f) in sorted(first.items()) for m in ("full", "bare")]


SAMPLE = _sample()


def _diagnosed(inputs: Path, config: Config):
    """The report and the HTML facts, as ``moetrace diagnose --format html`` gathers them."""
    from analyzer.engine import diagnose
    from analyzer.inputs import as_dataset
    from analyzer.report._html_facts import gather

    with as_dataset([inputs]) as ds:
        return diagnose([ds], config), gather(ds)


class _Balanced(HTMLParser):
    """Every element opened is closed, in order (void elements excepted); one html element."""

    VOID = {"meta", "br", "hr", "img", "input", "link", "wbr"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.htmls = 0
        self.problems: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.htmls += tag == "html"
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        if not self.stack or self.stack[-1] != tag:
            self.problems.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()


def check_every_format(report, facts) -> None:
    roots = report.roots
    root_classes = [c for c in report.classes if c.root]
    outputs = {fmt: render(report, fmt) for fmt in FORMATS}
    assert set(outputs) == {"text", "json", "sarif", "junit", "html"}

    text = outputs["text"]
    assert text.endswith("\n") and text.splitlines()[-1].startswith("summary: ")
    for c in root_classes[:200]:  # the default --max-findings: each root class printed, its first finding in full
        assert f"\n{c.members[0]} " in text, c.id
    capped = render(report, "text", max_findings=1, color=True)
    assert capped.splitlines()[-1].startswith("summary: ")

    doc = json.loads(outputs["json"])
    assert [f["id"] for f in doc["findings"]] == [f.id for f in report.findings]
    assert {f["id"] for f in doc["findings"] if f["root_cause"]} == {f.id for f in roots}
    assert len(doc["classes"]) == len(report.classes)

    sarif = check_sarif(outputs["sarif"])
    results = sarif["runs"][0]["results"]
    omitted = sarif["runs"][0]["properties"].get("resultsOmitted", 0)
    assert len(results) + omitted == len(root_classes)

    junit = ET.fromstring(outputs["junit"])
    cases = junit.findall("./testsuite/testcase")
    assert junit.tag == "testsuites" and int(junit.get("tests")) == len(cases)
    assert len(cases) == len(report.classes) + len({r.code for r in report.rules} - {c.code for c in report.classes})
    assert int(junit.get("failures")) == len([c for c in cases if c.find("failure") is not None])

    for page in (outputs["html"], render(report, "html", facts=facts)):
        assert page.startswith("<!DOCTYPE html>\n") and page.rstrip().endswith("</html>")
        assert "<script" not in page and "<link" not in page and "@import" not in page
        parser = _Balanced()
        parser.feed(page)
        parser.close()
        assert parser.htmls == 1 and not parser.stack and not parser.problems, (parser.stack, parser.problems[:5])
        for f in roots[:500]:
            assert f'id="root-{f.id}"' in page


@pytest.mark.parametrize("trace", [pytest.param(p, marks=group(p)) for p in CORPUS + OSHMEM],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_format_renders_a_stored_trace(trace):
    # The report test_corpus / test_oshmem check (one diagnose(trace) per process), with this
    # trace's HTML facts.
    from analyzer.inputs import as_dataset
    from analyzer.report._html_facts import gather

    with as_dataset([trace]) as ds:
        facts = gather(ds)
    check_every_format(report_of(trace), facts)


@pytest.mark.parametrize("protocol,fault,mode", SAMPLE, ids=lambda x: str(x))
def test_every_format_renders_a_simulated_faulty_run(protocol, fault, mode, tmp_path):
    from ingest.run import ingest
    from kernels import Params, simulate

    # Skewed routing: the one capacity fault only clamps rows when a receiver is over-subscribed.
    simulate(protocol, Params(routing="skewed", **lib.SHAPE), faults=[fault], seed=0, out=tmp_path)
    dataset = tmp_path / json.loads((tmp_path / "truth.json").read_text())["dataset"]
    if mode == "bare":
        lib.make_bare(dataset)
    check_every_format(*_diagnosed(dataset, Config()))
    if mode == "full":  # every launch a block and a window: causes and symptoms in different windows
        ingest([dataset], tmp_path / "blocked", block_events=1)
        check_every_format(*_diagnosed(tmp_path / "blocked", Config().with_overrides(window_events=1)))


def test_the_wrong_slot_handshake_draws_its_graph():
    """Issue 18 item 1: a symptom waiting on the root and on another symptom sorted the graph's
    edges over node ids of two types (the root's ('root',) against (depth, code, class))."""
    report, facts = _diagnosed(TESTS / "corpus" / "handshake_wrong_slot", Config())
    (root,) = report.roots
    assert root.code == "MT105" and any(root.id in by.caused_by and len(by.caused_by) > 1
                                        for by in report.findings), "the case no longer has a two-cause symptom"
    page = render(report, "html", facts=facts)
    svg = page[page.index('<svg class="graph"'):page.index("</svg>")]
    assert svg.count('<g class="node') == 3 and svg.count("marker-end=") == 3


class _Odd(Rule):
    """Test rule.

    What it does
    Hits the reporters must take as they come.

    Why it matters
    A reporter that crashes loses the whole diagnosis.

    Example
    A note with no place at all.

    Evidence
    None, or one event.
    """

    code, name, family, severity, summary = "MT597", "test-odd", Family.HANG, Severity.NOTE, "odd hits"

    def check(self, trace, ctx):
        yield self.hit("no place and no evidence")
        yield self.hit("extra of every shape", key=(1,), rows=(("first event", 0),),
                       extra={"mixed": {1, "a"}, "none": None, "nested": {(1, 2): [None, {3, 4}]},
                              "class": (None, None, None, None)})
        yield self.hit("its cause was not reported", key=(2,), caused_by=(("MT999", (0, 0, 0)),),
                       location={"rank": 3})


@pytest.mark.parametrize("rules", [(), (_Odd,), (_Odd, *RULES)], ids=["no-rules", "notes-only", "mixed"])
def test_every_format_renders_odd_reports(rules, tmp_path):
    """No finding at all; only notes, one with no location and no evidence, one with a set of
    mixed types in its extra (json sorted it), one whose named cause is not in the report."""
    from analyzer.engine import diagnose
    from analyzer.report._html_facts import gather

    ds = make_dataset(tmp_path)
    check_every_format(diagnose(ds, rules=list(rules)), gather(ds))


def test_control_characters_in_manifest_names(tmp_path):
    """A region and a kernel name with control characters (valid JSON, legal names): junit wrote
    them raw, which XML 1.0 cannot hold, and no parser read the file back."""
    src = TESTS / "corpus" / "handshake_wrong_slot"
    doc = json.loads((src / "manifest.json").read_text())
    doc["regions"][0]["name"], doc["names"] = "fl\x01ag", ["hand\x1bshake\x00"]
    (tmp_path / "manifest.json").write_text(json.dumps(doc))
    events = [json.loads(line) for line in (src / "events.jsonl").read_text().splitlines()]
    for e in events:
        e.update({k: doc["regions"][0]["name"] for k in ("region",) if k in e})
        e.update({"name": doc["names"][0]} if "name" in e else {})
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    report, facts = _diagnosed(tmp_path, Config())
    assert report.roots and "fl\x01ag" in report.roots[0].message
    check_every_format(report, facts)
    assert "fl\\x01ag" in render(report, "junit")
