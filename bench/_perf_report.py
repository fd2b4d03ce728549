"""The Diagnose section of bench/RESULTS.md: numbers, ratios and aims from one bench/perf.py run.

The profile and the plan for what is not reached are prose, kept in
bench/perf_notes.md (written by hand from a profile) and appended as is.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "RESULTS.md"
NOTES = ROOT / "bench" / "perf_notes.md"
BEGIN, END = "<!-- perf:begin -->", "<!-- perf:end -->"


def machine() -> str:
    mem = cpu = ""
    try:
        kb = int(next(x for x in open("/proc/meminfo") if x.startswith("MemTotal")).split()[1])
        mem = f", {kb / 2**20:.0f} GiB memory"
        cpu = next(x.split(":", 1)[1].strip() for x in open("/proc/cpuinfo") if x.startswith("model name"))
    except (OSError, StopIteration, ValueError):
        cpu = platform.machine()
    return f"{os.cpu_count()} cores ({cpu}){mem}, Python {platform.python_version()}"


def _t(s: dict) -> str:
    return f"{s['med']:.2f} s (min {s['min']:.2f}, max {s['max']:.2f}, n={s['n']})"


def _ok(flag: bool) -> str:
    return "met" if flag else "**NOT met**"


def render(r: dict) -> str:
    out = ["## Diagnose", "",
           f"`uv run python bench/perf.py --sizes {','.join(_size(s['events']) for s in r['sizes'])}` on "
           f"{machine()}; shared with other engineers' work while measured, so noisy: read min beside median.",
           "Each number is a fresh process on warm page cache; diagnose is process start to report "
           "written (`--format json -o FILE`), the others are timed inside their process.", ""]
    for s in r["sizes"]:
        n, t = s["events"], s["time"]
        rec = s["recipe"]
        out += [f"### {s['protocol']}, {n:,} events ({_size(n)})", "",
                f"Dataset `{s['dataset']}`: {len(rec['pieces'])} simulated pieces "
                f"({rec['params']['ranks']} ranks x {rec['params']['cores']} cores, top-{rec['params']['topk']}, "
                f"{rec['params']['rounds']} rounds each) laid end to end, the last with "
                f"faults {', '.join(rec['faults_last_piece'])}; {s['disk_bytes'] / n:.2f} bytes/event "
                f"parquet, {s['ring_bytes'] / 2**20:.0f} MiB of ring dumps. "
                f"Findings: {s['summary'].get('findings')} ({s['summary'].get('root_causes')} roots), "
                f"codes {', '.join(s['codes'])}.", "",
                "| measurement | time | events/s | peak RSS | bytes/event (RSS) |",
                "|---|---|---|---|---|"]
        for k, label in (("diagnose", "moetrace diagnose (end to end)"),
                         ("limit", f"limit: pyarrow read of the {len(r['columns'])} rule columns"),
                         ("baseline", "DuckDB baseline (bench/baseline.sql)"),
                         ("ingest", "ingest from binary ring dumps")):
            rss = s["rss"].get(k, 0)
            out.append(f"| {label} | {_t(t[k])} | {n / t[k]['med'] / 1e6:.2f} M | {rss / 2**30:.2f} GiB "
                       f"| {rss / n:.0f} |")
        out += ["", f"- limit as a whole process (interpreter start included): {_t(t['limit_process'])}; "
                    f"the columns alone hold {s['limit_nbytes'] / n:.1f} bytes/event",
                f"- diagnose / limit = **{t['diagnose']['med'] / t['limit']['med']:.2f}x** (aim <= 2x: "
                f"{_ok(t['diagnose']['med'] <= 2 * t['limit']['med'])})",
                f"- baseline / diagnose = **{t['baseline']['med'] / t['diagnose']['med']:.2f}x** (aim >= 5x: "
                f"{_ok(t['baseline']['med'] >= 5 * t['diagnose']['med'])}); baseline result rows "
                f"{s['baseline_results']}",
                f"- peak memory {s['rss']['diagnose'] / n:.0f} bytes/event (aim <= 48: "
                f"{_ok(s['rss']['diagnose'] / n <= 48)})",
                f"- ingest {n / t['ingest']['med'] / 1e6:.2f} M events/s (aim >= 5 M: "
                f"{_ok(n / t['ingest']['med'] >= 5e6)})",
                f"- numba: first diagnose with an empty cache {s['compile']['first']:.2f} s, second "
                f"{s['compile']['second']:.2f} s: compile ~{s['compile']['first'] - s['compile']['second']:.1f} s; "
                f"the second run wrote {s['compile']['written_by_second']} of {s['compile']['cache_files']} "
                f"cache files (aim 0: {_ok(s['compile']['written_by_second'] == 0)})", ""]
    if len(r["sizes"]) >= 2:
        a, b = r["sizes"][0], r["sizes"][-1]
        ev = b["events"] / a["events"]
        out.append("### Growth")
        out.append("")
        for k in ("diagnose", "limit", "baseline", "ingest"):
            g = b["time"][k]["med"] / a["time"][k]["med"]
            out.append(f"- {k}: {ev:.1f}x the events, {g:.1f}x the time"
                       + (f" (aim <= {1.1 * ev:.1f}x: {_ok(g <= 1.1 * ev)})" if k == "diagnose" else ""))
        out.append("")
    h = r["help"]
    out += [f"`moetrace --help`: {_t(h)} (aim < 0.5 s: {_ok(h['med'] < 0.5)})", ""]
    if NOTES.exists():
        out += [NOTES.read_text().strip(), ""]
    return "\n".join(out).rstrip() + "\n"


def _size(n: int) -> str:
    return f"{round(n / 1e6)}M"


def write_section(text: str) -> None:
    """Replace (or append) only this benchmark's delimited section."""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}"
    doc = RESULTS.read_text() if RESULTS.exists() else "# Benchmark results\n"
    if BEGIN in doc and END in doc:
        a, b = doc.index(BEGIN), doc.index(END) + len(END)
        doc = doc[:a] + block + doc[b:]
    else:
        doc = doc.rstrip("\n") + "\n\n" + block + "\n"
    RESULTS.write_text(doc)
