"""The documentation site (mkdocs.yml, docs/) builds with `mkdocs build --strict` — every warning is
an error: a broken link or anchor, a page missing from the nav, an API name mkdocstrings cannot
resolve — and its command-line reference, generated at build time by docs/hooks/cli_reference.py,
has a section for every command of the `headcount` command tree."""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

from headcount.cli import app

ROOT = Path(__file__).resolve().parents[1]
HEADING = re.compile(r"<h([1-6])[^>]*><code>([^<]+)</code>")


def command_paths(command, path: str = "headcount") -> list[str]:
    """Every visible command's full name, walked from the typer app (independently of the hook)."""
    paths = [path]
    for name, sub in (getattr(command, "commands", None) or {}).items():
        if not getattr(sub, "hidden", False):
            paths += command_paths(sub, f"{path} {name}")
    return paths


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site built once for this module, exactly as a person builds it."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    return out


def test_site_builds_strict(site: Path) -> None:
    assert (site / "index.html").is_file()
    pages = ["getting-started", "formal-model", "induction", "minmax", "boolean", "cli", "api"]
    for page in [*pages, "glossary", "ARCHITECTURE"]:
        assert (site / page / "index.html").is_file(), f"no page {page}"


def test_cli_reference_names_every_command(site: Path) -> None:
    page = (site / "cli" / "index.html").read_text(encoding="utf-8")
    assert "<!-- cli-reference -->" not in page
    headings = {html.unescape(name) for _, name in HEADING.findall(page)}
    expected = command_paths(typer.main.get_command(app))
    assert len(expected) > 20  # the tree was walked, not just its root
    missing = [path for path in expected if path not in headings]
    assert not missing, f"docs/cli.md's generated reference lacks {missing}"
    assert headings <= set(expected), f"sections for no command: {headings - set(expected)}"


def test_api_reference_renders_the_scenarios(site: Path) -> None:
    page = (site / "api" / "index.html").read_text(encoding="utf-8")
    for module in ("headcount.induction", "headcount.minmax", "headcount.boolean"):
        assert f'id="{module}"' in page, f"docs/api.md shows no section for {module}"


def test_glossary_is_the_architecture_glossary(site: Path) -> None:
    glossary = (site / "glossary" / "index.html").read_text(encoding="utf-8")
    assert "<!-- include" not in glossary
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("\n## Glossary\n", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| ")]
    assert table and glossary.count("<tr>") >= len(table)
