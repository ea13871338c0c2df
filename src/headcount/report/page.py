"""report.html: the report's outline (outline.py) as one self-contained page.

Read top-down like a paper's appendix: the totals, the summary table (each row links to its
claim's section), one section per paper, each claim with its statement, check, result, measured
tables, figures inline and cost, then the references and the machine. Inline CSS only, figures as
base64 PNG data URIs; no scripts, fonts or links outside the report's folder (an interactive
figure view is a page of its own beside it, linked by its file name).
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path
from typing import Any

from headcount.report.outline import (
    INTRO,
    TITLE,
    Entry,
    Section,
    check_text,
    claim_sentence,
    cost_text,
    left_out_text,
    reference_text,
    references,
    sections,
    totals_text,
)
from headcount.report.tables import MAX_TABLES, Table, measured_tables

e = html.escape
# PNG pixels: wider, and at the text column's ~1070 CSS px its 10 pt labels would shrink below 9 px
WIDE_PIXELS = 1800

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; font-size: 15px;
       line-height: 1.45; max-width: 1100px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #ccc; padding-bottom: 0.2em; }
h3 { margin-top: 1.6em; }
.totals { font-size: 1.1em; margin: 0.5em 0 1em; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { border: 1px solid #ccc; padding: 0.3em 0.5em; vertical-align: top; text-align: left; }
th { background: #f2f2f2; }
table.summary { width: 100%; }
table.measured { font-size: 13px; max-width: 100%; display: block; overflow-x: auto; }
table.measured caption { text-align: left; font-style: italic; padding: 0.2em 0; }
td.status, span.status { font-weight: bold; white-space: nowrap; }
.PASS td.status, span.PASS { background: #d8f3dc; color: #1b5e20; padding: 0 0.3em; }
.FAIL td.status, span.FAIL { background: #fddede; color: #8b0000; padding: 0 0.3em; }
tr.FAIL { background: #fff6f6; }
section.claim { border-top: 1px solid #eee; }
code { font-size: 0.92em; }
details pre { background: #f7f7f7; padding: 0.6em; overflow-x: auto; font-size: 12px; }
figure { margin: 1.2em 0; }
figure.wide { width: calc(100vw - 40px); margin-left: calc(50% - 50vw + 20px); }
figure img { max-width: 100%; height: auto; border: 1px solid #ddd; }
figcaption { font-size: 0.95em; color: #333; margin-top: 0.3em; }
.cost, .machine, .left-out { color: #555; font-size: 0.9em; }
ol.references li { margin: 0.4em 0; }
"""


def _table(table: Table) -> str:
    caption = f"<caption>{e(table.caption)}</caption>" if table.caption else ""
    head = "".join(f"<th>{e(h)}</th>" for h in table.header)
    rows = "".join(
        "<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in table.rows
    )
    more = ""
    if table.rows_left_out or table.columns_left_out:
        text = left_out_text(table.rows_left_out, table.columns_left_out)
        more = f'<p class="left-out">({e(text)})</p>'
    return f'<table class="measured">{caption}<tr>{head}</tr>{rows}</table>{more}'


def png_width(png: bytes) -> int:
    """The pixel width in a PNG's header (its IHDR chunk, bytes 16..20)."""
    return int.from_bytes(png[16:20], "big") if png[:8] == b"\x89PNG\r\n\x1a\n" else 0


def _figure(f: dict[str, Any], out_dir: Path) -> str:
    png = (out_dir / f["png"]).read_bytes()
    data = base64.b64encode(png).decode("ascii")
    # a figure wider than the text column at its 10 pt labels' legible size spans the window
    wide = ' class="wide"' if png_width(png) > WIDE_PIXELS else ""
    view = (
        f' <a href="{e(f["html"])}">Interactive view</a> (hover for token, position and weight).'
        if f.get("html")
        else ""
    )
    return (
        f'<figure id="{e(f["id"])}"{wide}>'
        f'<img alt="{e(f["id"])}" src="data:image/png;base64,{data}">'
        f"<figcaption>{e(f['caption'])}{view}</figcaption></figure>"
    )


def _account(detail: str, headline: str) -> str:
    """The claim's whole account, folded under its headline (nothing when the two are the same)."""
    if detail == headline:
        return ""
    return f"<details><summary>The claim's full account</summary><p>{e(detail)}</p></details>"


def _entry(entry: Entry, scale: str, out_dir: Path) -> str:
    c = entry.claim
    tables = measured_tables(c["measured"])
    shown = "".join(_table(t) for t in tables[:MAX_TABLES])
    if len(tables) > MAX_TABLES:
        shown += f'<p class="left-out">({len(tables) - MAX_TABLES} more tables in summary.json)</p>'
    measured_json = e(json.dumps(c["measured"], indent=1, ensure_ascii=False))
    return f"""<section class="claim {e(c["status"])}" id="{e(entry.anchor)}">
<h3>{e(entry.number)} <code>{e(c["id"])}</code>
<span class="status {e(c["status"])}">{e(c["status"])}</span></h3>
<p><strong>The paper</strong> ({e(c["source"])}): {e(c["statement"])}</p>
<p><strong>The check</strong>: {e(check_text(c))}</p>
<p><strong>Result</strong>: {e(entry.headline)}</p>
{_account(c["detail"], entry.headline)}
{shown}
{"".join(_figure(f, out_dir) for f in entry.figures)}
<p class="cost">Cost: {e(cost_text(c, scale))}.</p>
<details><summary>measured values (JSON)</summary><pre>{measured_json}</pre></details>
</section>"""


def _summary_rows(parts: list[Section]) -> str:
    rows = []
    for section in parts:
        for entry in section.entries:
            c = entry.claim
            rows.append(
                f'<tr class="{e(c["status"])}"><td class="status">{e(c["status"])}</td>'
                f'<td><a href="#{e(entry.anchor)}">{e(entry.number)} <code>{e(c["id"])}</code></a>'
                f"<br>{e(claim_sentence(c['statement']))}</td>"
                f"<td>{e(entry.headline)}</td><td>{c['seconds']:.1f}&nbsp;s</td></tr>"
            )
    return "\n".join(rows)


def _section(section: Section, scale: str, out_dir: Path) -> str:
    p = section.paper
    body = "\n".join(_entry(entry, scale, out_dir) for entry in section.entries)
    return (
        f'<section class="paper" id="{e(section.anchor)}">'
        f"<h2>{section.number} {e(p.title)}</h2>"
        f'<p>{e(p.cite)}; see <a href="#ref-{e(p.key)}">References</a>.</p>\n{body}</section>'
    )


def render_html(summary: dict[str, Any], figures: list[dict[str, Any]], out_dir: Path) -> str:
    parts = sections(summary, figures)
    scale = summary["scale"]
    refs = "\n".join(
        f'<li id="ref-{e(p.key)}"><strong>{e(p.cite)}</strong> {e(reference_text(p))}</li>'
        for p in references()
    )
    machine = " · ".join(f"{e(k)}: {e(str(v))}" for k, v in summary["machine"].items())
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(TITLE)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>{e(TITLE)}</h1>
<p class="totals"><strong>{e(totals_text(summary))}.</strong></p>
<p>{e(INTRO)}</p>
<h2 id="summary">Summary</h2>
<table class="summary">
<thead><tr><th>status</th><th>claim</th><th>result</th><th>cost</th></tr></thead>
<tbody>
{_summary_rows(parts)}
</tbody>
</table>
{"".join(_section(s, scale, out_dir) for s in parts)}
<h2 id="references">References</h2>
<ol class="references">
{refs}
</ol>
<h2 id="machine">Machine</h2>
<p class="machine">{machine}</p>
</body>
</html>
"""
