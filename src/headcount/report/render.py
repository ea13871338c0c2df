"""Write a reproduce run to its output folder: summary.json, report.md, report.html and the figures.

Every file is written atomically (a temporary file in the same folder, then os.replace), so a reader
never sees half a report. report.html is self-contained: inline CSS, figures as base64 PNG data
URIs, no scripts, fonts or links to anything outside the file.
"""

from __future__ import annotations

import base64
import html
import json
import sys
from pathlib import Path
from typing import Any

from headcount.common.files import atomic_write_bytes
from headcount.report.claims import ClaimResult
from headcount.report.figures import render_figures


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write `data` to `path` atomically (common.files.atomic_write_bytes: a temporary file, then
    os.replace)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    atomic_write_bytes(path, lambda tmp: Path(tmp).write_bytes(payload))


# ------------------------------------------------------------------------------------------------
# md
def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(summary: dict[str, Any], figures: list[dict[str, Any]]) -> str:
    m = summary["machine"]
    lines = [
        "# headcount reproduce report",
        "",
        f"**{summary['passed']} passed, {summary['failed']} failed** of {len(summary['claims'])} "
        "claims "
        f"(scale `{summary['scale']}`, {summary['wall_seconds']:.1f} s wall).",
        "",
        f"Machine: {m['platform']}, {m['cpu_count']} CPUs · Python {m['python']} · numpy "
        f"{m['numpy']} · "
        f"matplotlib {m['matplotlib']} · headcount {m['headcount']} · {m['date']}",
        "",
        "| status | claim | paper | source | statement | result |",
        "|---|---|---|---|---|---|",
    ]
    for c in summary["claims"]:
        mark = "✅ PASS" if c["status"] == "PASS" else "❌ FAIL"
        lines.append(
            f"| {mark} | `{c['id']}` | {_md_cell(c['paper'])} | {_md_cell(c['source'])} | "
            f"{_md_cell(c['statement'])} | {_md_cell(c['detail'])} |"
        )
    if figures:
        lines += ["", "## Figures", ""]
        for f in figures:
            lines += [f"![{f['id']}]({f['png']})", "", f"*{f['caption']}* ([SVG]({f['svg']}))", ""]
    lines += ["", "## Measured values", ""]
    for c in summary["claims"]:
        lines += [
            f"### {c['id']} — {c['status']} ({c['seconds']:.1f} s)",
            "",
            c["detail"],
            "",
            "```json",
            json.dumps(c["measured"], indent=1, ensure_ascii=False),
            "```",
            "",
        ]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# html
CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 15px;
       line-height: 1.45;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
.totals { font-size: 1.1em; margin: 0.5em 0 1em; }
table.claims { border-collapse: collapse; width: 100%; margin: 1em 0; }
table.claims th, table.claims td { border: 1px solid #ccc; padding: 0.4em 0.6em;
                                   vertical-align: top;
                                   text-align: left; }
table.claims th { background: #f2f2f2; }
td.status { font-weight: bold; white-space: nowrap; }
tr.PASS td.status { background: #d8f3dc; color: #1b5e20; }
tr.FAIL td.status { background: #fddede; color: #8b0000; }
tr.FAIL { background: #fff6f6; }
code { font-size: 0.92em; }
details pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 12px; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 0.95em; color: #333; margin-top: 0.3em; }
.machine { color: #555; font-size: 0.9em; }
"""


def render_html(summary: dict[str, Any], figures: list[dict[str, Any]], out_dir: Path) -> str:
    e = html.escape
    m = summary["machine"]
    rows = []
    for c in summary["claims"]:
        rows.append(
            f'<tr class="{e(c["status"])}"><td class="status">{e(c["status"])}</td>'
            f"<td><code>{e(c['id'])}</code></td>"
            f"<td>{e(c['paper'])}<br><small>{e(c['source'])}</small></td><td>{e(c['statement'])}</td>"
            f"<td>{e(c['detail'])}<details><summary>measured ({c['seconds']:.1f} s)</summary>"
            f"<pre>{e(json.dumps(c['measured'], indent=1, ensure_ascii=False))}</pre>"
            "</details></td></tr>"
        )
    figs = []
    for f in figures:
        data = base64.b64encode((out_dir / f["png"]).read_bytes()).decode("ascii")
        figs.append(
            f'<figure id="{e(f["id"])}"><img alt="{e(f["id"])}" src="data:image/png;base64,{data}">'
            f"<figcaption>{e(f['caption'])}</figcaption></figure>"
        )
    machine = " · ".join(f"{e(k)}: {e(str(v))}" for k, v in m.items())
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>headcount reproduce report</title>
<style>{CSS}</style>
</head>
<body>
<h1>headcount reproduce report</h1>
<p class="totals"><strong>{summary["passed"]} passed, {summary["failed"]} failed</strong>
of {len(summary["claims"])} claims
(scale <code>{e(summary["scale"])}</code>, {summary["wall_seconds"]:.1f} s wall).</p>
<table class="claims">
<thead><tr><th>status</th><th>claim</th><th>paper / source</th><th>statement</th>
<th>result</th></tr></thead>
<tbody>
{chr(10).join(rows)}
</tbody>
</table>
{"<h2>Figures</h2>" if figs else ""}
{chr(10).join(figs)}
<h2>Machine</h2>
<p class="machine">{machine}</p>
</body>
</html>
"""


def render_report(
    summary: dict[str, Any], results: dict[str, ClaimResult], out_dir: Path
) -> list[dict[str, Any]]:
    """Write figures, summary.json (the summary plus its figure list), report.md and report.html
    into out_dir; return the figure list as summary.json records it."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = render_figures(results, out_dir, summary["machine"], write_atomic)
    figures_json = [{k: f[k] for k in ("id", "claim", "png", "svg", "caption")} for f in figures]
    summary = {**summary, "figures": figures_json}
    write_atomic(out_dir / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    write_atomic(out_dir / "report.md", render_markdown(summary, figures))
    write_atomic(out_dir / "report.html", render_html(summary, figures, out_dir))
    return figures_json


def print_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
