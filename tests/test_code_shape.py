"""The house's shape (issue 12): no source file over 500 lines. Lint, format, complexity (ruff, C901
≤ 20) and the import layers (import-linter) run as their own steps in .ci/run."""

from __future__ import annotations

from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "headcount"
MAX_LINES = 500


def test_no_source_file_over_500_lines():
    long = {
        str(p.relative_to(SRC)): n
        for p in SRC.rglob("*.py")
        if (n := len(p.read_text().splitlines())) > MAX_LINES
    }
    assert long == {}
