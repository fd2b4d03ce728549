"""The HTML report's stylesheet, inline in the page (a report must open with no network)."""

STYLE = """
:root { --ink:#1d2330; --muted:#5b6472; --line:#dde1e7; --bg:#f6f7f9; --card:#fff;
        --err:#c62828; --warn:#b26a00; --note:#1565c0; --ok:#2e7d32; }
* { box-sizing: border-box; }
body { margin:0; font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
       color:var(--ink); background:var(--bg); }
header { background:#1d2330; color:#eef1f5; padding:18px 28px 14px; }
header h1 { margin:0 0 4px; font-size:20px; letter-spacing:.3px; }
header p { margin:3px 0; color:#c5ccd6; }
header .inputs { font-family:ui-monospace,"DejaVu Sans Mono",monospace; font-size:12px; color:#9aa4b2; }
.verdict { display:inline-block; margin-top:8px !important; padding:6px 12px; border-radius:6px; font-weight:600; }
.verdict.fail { background:#5c1a1a; color:#ffd9d9 !important; }
.verdict.pass { background:#173d1f; color:#d6f5dc !important; }
.partial { color:#ffd48a !important; }
section { margin:18px 28px; }
h2 { font-size:16px; margin:22px 0 10px; padding-bottom:4px; border-bottom:2px solid var(--line); }
h3 { margin:0 0 6px; font-size:15px; } h4 { margin:14px 0 4px; font-size:13px; color:var(--muted); }
article.root { background:var(--card); border:1px solid var(--line); border-left:5px solid var(--err);
               border-radius:8px; padding:14px 18px; margin-bottom:14px; box-shadow:0 1px 2px #0001; }
.message { font-size:15px; margin:4px 0; }
.at, .legend, .links { color:var(--muted); margin:3px 0; font-size:13px; }
.fid { font-weight:700; } .code { font-family:ui-monospace,"DejaVu Sans Mono",monospace; font-weight:600; }
.family, .conf { color:var(--muted); }
.sev { display:inline-block; padding:0 7px; border-radius:9px; color:#fff; font-size:12px; font-weight:600; }
.sev.error { background:var(--err); } .sev.warning { background:var(--warn); } .sev.note { background:var(--note); }
table { border-collapse:collapse; }
table.evidence { margin:8px 0; font-size:12px; width:100%; }
table.evidence th, table.evidence td { border-bottom:1px solid var(--line); padding:3px 8px; text-align:left;
                                       vertical-align:top; }
table.evidence th { color:var(--muted); font-weight:600; }
td.vals { font-family:ui-monospace,"DejaVu Sans Mono",monospace; word-break:break-all; }
.graph-box { overflow-x:auto; background:#fafbfc; border:1px solid var(--line); border-radius:6px; padding:4px; }
svg.graph .node rect { fill:#fff; stroke:#8a94a3; stroke-width:1.4; }
svg.graph .node.root rect { fill:#fdecea; stroke:var(--err); stroke-width:2.2; }
svg.graph .node.error rect { stroke:var(--err); } svg.graph .node.warning rect { stroke:var(--warn); }
svg.graph .t1 { font:600 13px system-ui,"DejaVu Sans",sans-serif; fill:var(--ink); }
svg.graph .t2 { font:12px system-ui,"DejaVu Sans",sans-serif; fill:var(--muted); }
.cell { width:22px; height:20px; border:1px solid #fff; text-align:center; font-size:11px; font-weight:600;
        display:inline-block; vertical-align:middle; }
td.cell { display:table-cell; min-width:30px; padding:1px 3px; }
.cell.done { background:#cfe8d3; } .cell.wait { background:#e53935; color:#fff; }
.cell.barrier { background:#fb8c00; color:#fff; } .cell.other { background:#fdd835; }
.cell.missing { background:#9e9e9e; }
.cell.eq { background:#d7ecd9; } .cell.short { background:#e53935; color:#fff; }
.cell.over { background:#fb8c00; color:#fff; } .cell.none { background:#eef0f3; }
table.strip th, table.grid th { font-weight:500; color:var(--muted); font-size:11px; padding:0 6px; text-align:right; }
table.grid.dense td.cell { min-width:9px; height:9px; padding:0; }
.panels { display:flex; flex-wrap:wrap; gap:0 32px; margin:0 28px; }
.panels > section { flex:1 1 440px; min-width:0; margin:18px 0; }
.heat { display:inline-block; vertical-align:top; margin:0 24px 12px 0; }
ul.stuck { margin:8px 0; padding-left:18px; font-size:13px; }
details.finding { background:var(--card); border:1px solid var(--line); border-radius:6px; margin:6px 0;
                  padding:6px 12px; border-left:4px solid var(--note); }
details.finding.error { border-left-color:var(--err); } details.finding.warning { border-left-color:var(--warn); }
details.finding summary { cursor:pointer; }
details.finding .msg { color:var(--ink); margin-left:6px; }
ul.symptoms { margin:10px 0 0; padding-left:18px; } ul.symptoms li { margin-bottom:6px; }
.eg { color:var(--muted); font-size:13px; } .ids { font-size:12px; }
.none { color:var(--muted); font-style:italic; }
footer { margin:24px 28px; color:var(--muted); font-size:12px; }
"""
