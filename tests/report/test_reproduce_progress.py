"""reproduce's progress (issue 31, point 1): one line per claim started and finished without a
terminal, a bar over the claims with an ETA on one (run under a pseudo-terminal here), nothing with
--quiet; stdout stays the command's own output either way."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys

import pytest

from headcount.report.claim_costs import RECORDED_SECONDS, recorded_seconds
from headcount.report.claim_ids import CLAIM_IDS
from headcount.report.claims import ClaimResult, claim, unregister
from headcount.report.reproduce import load_claims, run_reproduce

CHEAP = "induction.two_layer.constant_dim"


@pytest.fixture
def two_claims():
    load_claims()
    ids = ("test.progress.first", "test.progress.second")

    def passes(ctx):
        ctx.progress("    a step of the first claim ...")
        return ClaimResult({}, "PASS", "fine")

    def fails(ctx):
        return ClaimResult({}, "FAIL", "deliberately wrong")

    for cid, fn in zip(ids, (passes, fails)):
        claim(cid, paper="test paper", source="§0", statement="a claim made for a test")(fn)
    yield ids
    for cid in ids:
        unregister(cid)


def test_one_line_per_claim_started_and_finished(tmp_path, two_claims):
    lines = []
    summary = run_reproduce(
        "quick", only="test.progress.*", out_dir=tmp_path, progress=lines.append
    )
    assert summary.failed == 1
    first, second = two_claims
    assert lines[0] == f"[1/2] {first} …"  # no recorded cost: no estimate
    assert re.fullmatch(rf"\[1/2\] {re.escape(first)} … PASS \d+ s", lines[1])
    assert re.fullmatch(rf"\[2/2\] {re.escape(second)} … FAIL \d+ s — deliberately wrong", lines[3])
    assert lines[4].startswith("1 passed, 1 failed in ") and len(lines) == 5  # no step lines


def test_a_recorded_cost_is_said_and_every_claim_has_one():
    assert set(RECORDED_SECONDS["quick"]) == set(CLAIM_IDS)
    assert all(0 < seconds < 3600 for seconds in RECORDED_SECONDS["quick"].values())
    assert 300 < sum(RECORDED_SECONDS["quick"].values()) < 900  # the README's "about 9 minutes"
    assert recorded_seconds(CHEAP, "quick") is not None
    assert recorded_seconds(CHEAP, "full") is None and recorded_seconds("no.such", "quick") is None


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "headcount.cli", "reproduce", "--only", CHEAP, *args]


def test_lines_without_a_terminal_and_silence_with_quiet(tmp_path):
    done = subprocess.run(
        _cli("--out", str(tmp_path / "a"), "--json"), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    json.loads(done.stdout)  # stdout: one JSON object
    assert f"[1/1] {CHEAP} … (about " in done.stderr and f"{CHEAP} … PASS " in done.stderr
    quiet = subprocess.run(
        _cli("--out", str(tmp_path / "b"), "--json", "--quiet"), capture_output=True, text=True
    )
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert json.loads(quiet.stdout)["passed"] == 1


def test_a_bar_with_an_eta_on_a_terminal(tmp_path):
    """stderr is a pseudo-terminal (stdout a pipe): rich draws the bar there, with the claim, the
    claims counted as recorded seconds, and a time remaining."""
    main, side = pty.openpty()
    env = dict(os.environ, TERM="xterm", COLUMNS="160")
    proc = subprocess.Popen(
        _cli("--out", str(tmp_path), "--json"), stdout=subprocess.PIPE, stderr=side, env=env
    )
    os.close(side)
    chunks = []
    while True:
        try:
            data = os.read(main, 65536)
        except OSError:  # the terminal closed: the command ended
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read()
    assert proc.wait(timeout=600) == 0
    os.close(main)
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    assert f"[1/1] {CHEAP}" in screen
    assert re.search(r"\d+:\d\d:\d\d", screen)  # rich's elapsed / remaining columns
    assert " … PASS " not in screen  # the bar replaces the lines
    assert json.loads(out)["passed"] == 1
