"""Shared fixtures of the fuzz suite, and its per-group counts in pytest's terminal summary."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from tests.fuzz import harness
from tests.fuzz.files import Fixtures


def _remove(root: Path) -> None:
    for folder, dirs, _ in os.walk(root):
        for name in dirs:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, 0o755)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def fuzz_fixtures():
    """The valid files every file variant starts from (models of each kind, a results database), in
    a folder anyone may read (some cases run as `nobody`)."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the fuzz harness needs Linux (fork, RLIMIT_AS, /proc)")
    root = Path(tempfile.mkdtemp(prefix="headcount-fuzz-files-"))
    os.chmod(root, 0o755)
    try:
        yield Fixtures.make(root)
    finally:
        _remove(root)


def pytest_terminal_summary(terminalreporter):
    if harness.SUMMARIES:
        terminalreporter.section("fuzz counts per command group")
        for summary in harness.SUMMARIES:
            terminalreporter.write_line(summary)
