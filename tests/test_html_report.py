"""The HTML report: self-contained, roots first with their wait-for graph, the heatmap and the core strip.

The browser test loads the page in headless Chromium (Debian's ``chromium``):
no console message and no failed load, the root cause's text rendered
visible, and a screenshot written.  It is skipped where chromium is absent.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from _diag_helpers import RULES, make_dataset
from analyzer.engine import diagnose
from analyzer.report import render
from analyzer.report._html_facts import gather
from tests._trace_files import Core, manifest, write_trace


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    ds = make_dataset(tmp_path_factory.mktemp("html"))
    report = diagnose(ds, rules=RULES)
    return report, render(report, "html", facts=gather(ds))


def test_roots_first_with_a_grouped_wait_for_graph(page):
    report, html = page
    root = next(f for f in report.findings if f.code == "MT598")
    assert html.index('id="roots"') < html.index('id="stops"') < html.index('id="heat"') < html.index('id="findings"')
    roots = html[html.index('id="roots"'):html.index('id="stops"')]
    # Roots are the JSON report's: the plain write has no cause, so it is one too (after the route).
    assert "Root causes (2)" in roots and roots.index(root.message) < roots.index("MT498")
    svg = re.search(r"<svg class=\"graph\".*?</svg>", roots, re.S).group(0)
    nodes = re.findall(r'<g class="node (\w+)">', svg)
    assert nodes.count("root") == 1 and len(nodes) == 2, nodes  # four stuck waits, one class: one node
    assert "4 x MT198" in svg and "ranks 0-3" in svg
    assert svg.count("marker-end=") == 1  # one arrow, symptom class -> root
    # Every finding listed with its evidence, each linkable.
    for f in report.findings:
        assert f'id="{f.id}"' in html
        assert all(e.kind in html for e in f.evidence)


def test_self_contained(page):
    _, html = page
    assert "<script" not in html and "@import" not in html
    refs = re.findall(r'(?:src|href)="([^"]*)"', html) + re.findall(r"url\(([^)]*)\)", html)
    assert refs and all(r.startswith("#") for r in refs), [r for r in refs if not r.startswith("#")]


def test_core_strip_says_where_each_core_stopped(page):
    _, html = page
    strip = html[html.index('id="stops"'):html.index('id="heat"')]
    assert strip.count('<td class="cell wait"') == 4  # every rank's one core is stuck in its wait
    assert "rank 2 core 0: waiting on status[3] until eq 1 at kernels/combine.cc:120" in strip


def _counts_trace(d: Path) -> Path:
    """Rank 0 announces 5 rows to rank 1 and 2 to itself; rank 1 takes 3 of the 5; rank 0 reads 3 for its 2."""
    a, b = Core(0, 0), Core(1, 0)
    ev = [a("count", peer=1, local_expert=0, value=5, capacity=8), a("count", peer=0, local_expert=0, value=2),
          a("deliver", local_expert=0, src_rank=0, requested=3, delivered=2, capacity=8),
          b("deliver", local_expert=0, src_rank=0, requested=5, delivered=3, capacity=8)]
    return write_trace(d, ev, doc=manifest(ranks=2, cores=1)).parent


def test_heatmap_rows_announced_vs_delivered(tmp_path, cli):
    out = tmp_path / "r.html"
    r = cli("diagnose", _counts_trace(tmp_path / "t"), "--format", "html", "-o", out, "--fail-on", "never")
    assert r.code == 0, r.stderr
    html = out.read_text()
    heat = html[html.index('id="heat"'):html.index('id="findings"')]
    assert "launch 0: 1 pair where delivered differs from announced" in heat
    assert 'title="rank 0 -&gt; rank 1: announced 5, delivered 3">5/3</td>' in heat
    assert 'class="cell short"' in heat and 'class="cell eq" title="rank 0 -&gt; rank 0' in heat
    assert "rank 0 -&gt; rank 0: announced 2, delivered 2 (the receiver&#x27;s deliver says 3 requested)" in heat
    assert 'class="cell none" title="rank 1 -&gt; rank 0: announced none, delivered none"' in heat
    assert str(tmp_path / "t") in html  # the raw input, not the temporary dataset it was ingested into


_PROBE = """<script>
window.__errors = [];
window.addEventListener('error', e => window.__errors.push(String(e.message || (e.target && e.target.src))), true);
for (const k of ['error', 'warn']) { const f = console[k]; console[k] = (...a) => { window.__errors.push(a.join(' ')); f(...a); }; }
window.addEventListener('load', () => {
  const el = document.querySelector('article.root .message');
  const r = el ? el.getBoundingClientRect() : null, st = el ? getComputedStyle(el) : null;
  document.documentElement.dataset.probe = JSON.stringify({errors: window.__errors, text: el ? el.innerText : null,
    visible: !!(r && r.width > 0 && r.height > 0 && st.visibility === 'visible' && st.display !== 'none'
                && r.top < window.innerHeight)});
});
</script>"""


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install chromium; .ci/run does)")
def test_loads_in_headless_chromium(page, tmp_path):
    report, html = page
    root = next(f for f in report.findings if f.code == "MT598")
    path = tmp_path / "report.html"
    path.write_text(html)
    probed = tmp_path / "probed.html"
    probed.write_text(html.replace("<head>", "<head>" + _PROBE, 1))
    flags = [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             "--window-size=1280,1000", "--enable-logging=stderr", "--v=0"]
    plain = subprocess.run(flags + ["--dump-dom", path.as_uri()], capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0, plain.stderr[-2000:]
    console = [ln for ln in plain.stderr.splitlines() if ":CONSOLE" in ln]
    assert not console, console
    dom = subprocess.run(flags + ["--dump-dom", probed.as_uri()], capture_output=True, text=True, timeout=120)
    probe = json.loads(re.search(r'data-probe="([^"]*)"', dom.stdout).group(1).replace("&quot;", '"')
                       .replace("&amp;", "&"))
    assert probe["errors"] == [] and probe["visible"], probe
    assert probe["text"] == root.message
    shot = tmp_path / "report.png"
    snap = subprocess.run(flags + [f"--screenshot={shot}", path.as_uri()], capture_output=True, text=True, timeout=120)
    assert snap.returncode == 0 and shot.stat().st_size > 10_000, snap.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
