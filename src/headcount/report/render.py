"""Write a reproduce run to its output folder: summary.json, report.md, report.html and the figures.

Both reports follow one outline (outline.py): the summary table first, a section per paper, each
claim with its statement, check, measured tables (tables.py), figures and cost, then references.
Every file is written atomically (a temporary file in the same folder, then os.replace), so a reader
never sees half a report. report.html (page.py) is self-contained: inline CSS, figures as base64
PNG data URIs, no scripts, fonts or links to anything outside its folder.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from headcount.common.files import atomic_write_bytes
from headcount.report.claims import ClaimResult
from headcount.report.figures import render_figures
from headcount.report.outline import (
    INTRO,
    TITLE,
    Entry,
    check_text,
    claim_sentence,
    cost_text,
    left_out_text,
    reference_text,
    references,
    sections,
    totals_text,
)
from headcount.report.page import render_html
from headcount.report.tables import MAX_TABLES, Table, measured_tables


def write_atomic(path: Path, data: bytes | str) -> None:
    """Write `data` to `path` atomically (common.files.atomic_write_bytes: a temporary file, then
    os.replace)."""
    payload = data.encode("utf-8") if isinstance(data, str) else data
    atomic_write_bytes(path, lambda tmp: Path(tmp).write_bytes(payload))


# ------------------------------------------------------------------------------------------------
# report.md: the outline in Markdown (anchors as HTML a-tags, which Markdown viewers keep)
def _md_cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _md_table(table: Table) -> list[str]:
    lines = [f"*{table.caption}*", ""] if table.caption else []
    lines += [
        "| " + " | ".join(_md_cell(h) for h in table.header) + " |",
        "|" + "---|" * len(table.header),
    ]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    if table.rows_left_out or table.columns_left_out:
        lines += ["", f"({left_out_text(table.rows_left_out, table.columns_left_out)})"]
    return lines + [""]


def _md_entry(entry: Entry, scale: str) -> list[str]:
    c = entry.claim
    lines = [
        f'<a id="{entry.anchor}"></a>',
        "",
        f"### {entry.number} `{c['id']}` — {c['status']}",
        "",
        f"**The paper** ({c['source']}): {c['statement']}",
        "",
        f"**The check**: {check_text(c)}",
        "",
        f"**Result**: {entry.headline}",
        "",
    ]
    if c["detail"] != entry.headline:  # the claim's whole account, folded under its headline
        lines += ["<details><summary>The claim's full account</summary>", "", c["detail"], ""]
        lines += ["</details>", ""]
    tables = measured_tables(c["measured"])
    for table in tables[:MAX_TABLES]:
        lines += _md_table(table)
    if len(tables) > MAX_TABLES:
        lines += [f"({len(tables) - MAX_TABLES} more tables in summary.json)", ""]
    for f in entry.figures:
        lines += [f"![{f['id']}]({f['png']})", "", f"*{f['caption']}* ([SVG]({f['svg']}))", ""]
        if f.get("html"):
            lines += [f"[Interactive view]({f['html']}) (a page of its own, no network).", ""]
    return lines + [f"*Cost*: {cost_text(c, scale)}.", ""]


def render_markdown(summary: dict[str, Any], figures: list[dict[str, Any]]) -> str:
    m = summary["machine"]
    parts = sections(summary, figures)
    lines = [f"# {TITLE}", "", f"**{totals_text(summary)}.**", "", INTRO, "", "## Summary", ""]
    lines += ["| status | claim | result | cost |", "|---|---|---|---|"]
    for section in parts:
        for e in section.entries:
            c = e.claim
            mark = "✅" if c["status"] == "PASS" else "❌"
            lines.append(
                f"| {mark} {c['status']} | [{e.number} `{c['id']}`](#{e.anchor}): "
                f"{_md_cell(claim_sentence(c['statement']))} | {_md_cell(e.headline)} | "
                f"{c['seconds']:.1f} s |"
            )
    lines.append("")
    for section in parts:
        p = section.paper
        lines += [f'<a id="{section.anchor}"></a>', "", f"## {section.number} {p.title}", ""]
        lines += [f"{p.cite}; see [References](#ref-{p.key}).", ""]
        for e in section.entries:
            lines += _md_entry(e, summary["scale"])
    lines += ['<a id="references"></a>', "", "## References", ""]
    for p in references():
        lines += [f'- <a id="ref-{p.key}"></a>**{p.cite}** {reference_text(p)}']
    lines += [
        "",
        "## Machine",
        "",
        f"{m['platform']}, {m['cpu_count']} CPUs · Python {m['python']} · numpy {m['numpy']} · "
        f"matplotlib {m['matplotlib']} · headcount {m['headcount']} · {m['date']}",
        "",
    ]
    return "\n".join(lines)


def render_report(
    summary: dict[str, Any], results: dict[str, ClaimResult], out_dir: Path
) -> list[dict[str, Any]]:
    """Write figures, summary.json (the summary plus its figure list), report.md and report.html
    into out_dir; return the figure list as summary.json records it."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    figures = render_figures(results, out_dir, summary["machine"], write_atomic)
    keys = ("id", "claim", "png", "svg", "caption", "html", "overlaps")  # html, overlaps: if any
    figures_json = [{k: f[k] for k in keys if k in f} for f in figures]
    summary = {**summary, "figures": figures_json}
    write_atomic(out_dir / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    write_atomic(out_dir / "report.md", render_markdown(summary, figures))
    write_atomic(out_dir / "report.html", render_html(summary, figures, out_dir))
    return figures_json


def print_to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
