"""The command line under a hostile environment (issue 28, point 6): output encodable on any stdout
(⊥ as `_|_` in text and `\\u22a5` in JSON where stdout is not UTF-8), and HEADCOUNT_MAX_MEMORY named
as itself and checked by every command. Each case runs `python -m headcount.cli` in a child with its
own environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest


def _headcount(*argv: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "HEADCOUNT_MAX_MEMORY"} | env
    command = (sys.executable, "-m", "headcount.cli", *argv)
    return subprocess.run(command, capture_output=True, env=environment, timeout=300)


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_bottom_prints_on_a_stdout_that_cannot_encode_it(encoding):
    text = _headcount("induction", "solve", "--input", "0 1 2 0 1", PYTHONIOENCODING=encoding)
    assert (text.returncode, text.stderr) == (0, b"")
    assert text.stdout.decode(encoding).split() == ["_|_", "_|_", "_|_", "1", "2"]
    as_json = _headcount(
        "induction", "solve", "--input", "0 1 2", "--json", PYTHONIOENCODING=encoding
    )
    assert as_json.returncode == 0 and b"\\u22a5" in as_json.stdout
    assert json.loads(as_json.stdout)["outputs"] == ["⊥", "⊥", "⊥"]


def test_an_error_line_with_symbols_prints_on_an_ascii_stderr(tmp_path):
    done = _headcount("induction", "solve", "--input", "0 ⊥ 1", PYTHONIOENCODING="ascii")
    lines = done.stderr.decode("ascii").strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in lines[0]


@pytest.mark.parametrize("argv", [("zoo", "list"), ("induction", "solve", "--input", "0 1")])
def test_a_bad_memory_variable_is_named_as_itself_by_every_command(argv):
    done = _headcount(*argv, HEADCOUNT_MAX_MEMORY="abc")
    lines = done.stderr.decode().strip().splitlines()
    assert (done.returncode, done.stdout) == (2, b"") and len(lines) == 1
    assert (
        lines[0].startswith("error: HEADCOUNT_MAX_MEMORY 'abc'") and "--max-memory" not in lines[0]
    )
    assert _headcount(*argv, HEADCOUNT_MAX_MEMORY="4G").returncode == 0
