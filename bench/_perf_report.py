"""The Diagnose section of bench/RESULTS.md: numbers, ratios and aims from one bench/perf.py run.

The profile and the plan for what is not reached are prose, kept in
bench/perf_notes.md (written by hand from a profile) and appended as is.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from _results import write_section as write_results_section

ROOT = Path(__file__).resolve().parent.parent
NOTES = ROOT / "bench" / "perf_notes.md"
BEGIN, END = "<!-- perf:begin -->", "<!-- perf:end -->"
BASELINE_AIM = 2  # diagnose this many times faster than bench/baseline.sql (issue 19; an earlier issue asked 5)


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
           f"`uv run python bench/perf.py --sizes {r.get('sizes_arg') or ','.join(_size(s['events']) for s in r['sizes'])} "
           f"--protocols {','.join(r['columns'])}` on "
           f"{machine()}; shared with other engineers' work while measured, so noisy: read min beside median.",
           "Each number is a fresh process on warm page cache; diagnose is process start to report "
           "written (`--format json -o FILE`), the others are timed inside their process.", ""]
    for s in r["sizes"]:
        out += _size_section(s, r["columns"][s["protocol"]])
    out += _growth(r["sizes"])
    h = r["help"]
    out += [f"`moetrace --help`: {_t(h)} (aim < 0.5 s: {_ok(h['med'] < 0.5)})", ""]
    if NOTES.exists():
        out += [NOTES.read_text().strip(), ""]
    return "\n".join(out).rstrip() + "\n"


LABELS = {"diagnose": "moetrace diagnose (end to end)", "diagnose_j2": "moetrace diagnose --jobs 2",
          "limit": "limit: pyarrow read of the rule columns",
          "baseline": "DuckDB baseline (bench/baseline.sql)", "ingest": "ingest from binary ring dumps"}


def _size_section(s: dict, columns: list[str]) -> list[str]:
    n, t, rec = s["events"], s["time"], s["recipe"]
    p = rec["params"]
    out = [f"### {s['protocol']}, {n:,} events ({_size(n)})", "",
           f"Dataset `{s['dataset']}`: {len(rec['pieces'])} simulated piece(s) ({p['ranks']} ranks x "
           f"{p['cores']} cores, {p['tokens']} tokens, top-{p['topk']}, {p['rounds']} rounds each) laid end "
           f"to end, the last with faults {', '.join(rec['faults_last_piece'])}; {s['disk_bytes'] / n:.2f} "
           f"bytes/event parquet, {s['ring_bytes'] / 2**20:.0f} MiB of ring dumps."]
    if "summary" in s:
        out[-1] += (f" Findings: {s['summary'].get('findings')} ({s['summary'].get('root_causes')} roots), "
                    f"codes {', '.join(s['codes'])}.")
    if s.get("windows"):
        w = s["windows"]
        out[-1] += (" Diagnosed as one window." if len(w) == 1 else
                    f" Diagnosed in {len(w)} windows, each reading {min(w) / 1e6:.1f}-{max(w) / 1e6:.1f} M events "
                    f"({sum(w) / n:.2f}x the trace: one block of context each side).")
    out += ["", "| measurement | time | events/s | peak RSS | bytes/event (RSS) |", "|---|---|---|---|---|"]
    for k, label in LABELS.items():
        if k in s["skipped"]:
            out.append(f"| {label} | not run: {s['skipped'][k]} | | | |")
            continue
        rss = s["rss"][k]
        out.append(f"| {label} | {_t(t[k])} | {n / t[k]['med'] / 1e6:.2f} M | {rss / 2**30:.2f} GiB | {rss / n:.0f} |")
    out.append("")
    if "limit" in t:
        out.append(f"- limit: {len(columns)} columns; as a whole process (interpreter start included) "
                   f"{_t(t['limit_process'])}; the arrow columns hold {s['limit_nbytes'] / n:.1f} bytes/event")
    for d, tag in (("diagnose", "diagnose"), ("diagnose_j2", "diagnose -j2")):
        if d in t and "limit" in t:
            q = t[d]["med"] / t["limit"]["med"]
            out.append(f"- {tag} / limit = **{q:.2f}x** (min/min {t[d]['min'] / t['limit']['min']:.2f}x; "
                       f"aim <= 2x: {_ok(q <= 2)})")
        if d in t and "baseline" in t:
            q = t["baseline"]["med"] / t[d]["med"]
            out.append(f"- baseline / {tag} = **{q:.2f}x** (min/min {t['baseline']['min'] / t[d]['min']:.2f}x; "
                       f"aim >= {BASELINE_AIM}x: {_ok(q >= BASELINE_AIM)})")
        if d in t:
            out.append(f"- {tag} peak memory {s['rss'][d] / n:.0f} bytes/event (aim <= 48: "
                       f"{_ok(s['rss'][d] / n <= 48)})")
    if "baseline" in t:
        out.append(f"- baseline result rows {s['baseline_results']} (missing producers, stuck waits, "
                   f"unquiesced signals)")
    if "compile" in s:
        c = s["compile"]
        out += [f"- numba: first diagnose with an empty NUMBA_CACHE_DIR {c['first']:.2f} s, second {c['second']:.2f} s: "
                f"compile ~{c['first'] - c['second']:.1f} s; the second run wrote {c['written_by_second']} of "
                f"{c['cache_files']} cache files (aim 0: {_ok(c['written_by_second'] == 0)})"]
    if s.get("profile"):
        out += ["", "Top stages of one diagnose (`MOETRACE_PROFILE=1`; seconds, peak RSS so far):", ""]
        out += [f"    {sec:7.2f} s  {gib:5.2f} GiB  {what}" for sec, gib, what in s["profile"][:8]]
        out.append("")
    if "ingest" in t:
        out.append(f"- ingest {n / t['ingest']['med'] / 1e6:.2f} M events/s (aim >= 5 M: "
                   f"{_ok(n / t['ingest']['med'] >= 5e6)})")
    return out + [""]


def _growth(sizes: list[dict]) -> list[str]:
    out = []
    for a, b in zip(sizes, sizes[1:]):
        if a["protocol"] != b["protocol"]:
            continue
        ev = b["events"] / a["events"]
        lines = []
        for k in LABELS:
            if k in a["time"] and k in b["time"]:
                g = b["time"][k]["med"] / a["time"][k]["med"]
                lines.append(f"- {k}: {g:.1f}x the time" + (
                    f" (aim <= 1.1 x {ev:.1f} = {1.1 * ev:.1f}x: {_ok(g <= 1.1 * ev)})"
                    if k.startswith("diagnose") else ""))
        if lines:
            out += [f"### Growth, {a['protocol']} {_size(a['events'])} -> {_size(b['events'])} ({ev:.1f}x the events)",
                    "", *lines, ""]
    return out


def _size(n: int) -> str:
    return f"{n / 1e6:.3g}M"


def write_section(text: str) -> None:
    """Replace (or append) only this benchmark's delimited section."""
    write_results_section(f"{BEGIN}\n{text.rstrip()}\n{END}", BEGIN, END)
