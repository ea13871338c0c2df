"""MkDocs hook: one text, two pages. A line `<!-- include PAGE#Heading -->` in a page is replaced
by the section of docs/PAGE under the heading `Heading` (up to the next heading of the same or a
higher level), so the glossary is written once, in ARCHITECTURE.md, and shown on glossary.md too.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

INCLUDE = re.compile(r"^<!-- include (?P<page>[^#\s]+)#(?P<heading>[^>]+?) -->$", re.MULTILINE)
HEADING = re.compile(r"^(?P<level>#{1,6})\s+(?P<title>.+?)\s*$")


def section(text: str, heading: str) -> str:
    """The body of the section titled `heading` in Markdown `text` (its heading line left out)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        match = HEADING.match(line)
        if match and match["title"] == heading:
            level = len(match["level"])
            body = []
            for rest in lines[i + 1 :]:
                other = HEADING.match(rest)
                if other and len(other["level"]) <= level:
                    break
                body.append(rest)
            return "\n".join(body).strip("\n")
    raise ValueError(f"no section {heading!r} to include")


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """MkDocs event: replace every include line of the page with the section it names."""

    def replace(match: re.Match[str]) -> str:
        source = Path(config["docs_dir"]) / match["page"]
        return section(source.read_text(encoding="utf-8"), match["heading"].strip())

    return INCLUDE.sub(replace, markdown)
