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
from headcount.report.claims import INDUCTION_PAPER, ClaimResult, claim, unregister
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
        claim(cid, paper=INDUCTION_PAPER, source="§0", statement="a claim made for a test")(fn)
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


def _on_a_terminal(command: list[str]) -> tuple[str, str]:
    """Run `command` with stderr a pseudo-terminal (stdout a pipe): (what the terminal showed, its
    escape sequences removed; stdout)."""
    main, side = pty.openpty()
    env = dict(os.environ, TERM="xterm", COLUMNS="160")
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=side, env=env)
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
    return screen, out.decode()


def test_a_bar_with_an_eta_on_a_terminal(tmp_path):
    """stderr is a pseudo-terminal (stdout a pipe): rich draws the bar there, with the claim
    counter, the time elapsed and the time remaining (no M/N of recorded seconds)."""
    screen, out = _on_a_terminal(_cli("--out", str(tmp_path), "--json"))
    assert f"[1/1] {CHEAP}" in screen
    assert re.search(r"\d+:\d\d:\d\d \d+:\d\d:\d\d", screen)  # elapsed, then remaining
    assert " … PASS " not in screen  # the bar replaces the lines
    assert json.loads(out)["passed"] == 1


# A claim that reports counted steps through its context, as the learning, certifying and protocol
# claims do (library functions take ctx.step as their `progress`), registered in the child process.
STEPS_CLAIM = """
import sys, time
from headcount.common.progress import progress_bar
from headcount.report.claims import INDUCTION_PAPER, ClaimResult, claim
from headcount.report.reproduce import load_claims

load_claims()


def work():
    with progress_bar(STEP[0], "test work", 12, unit="run") as bar:
        for _ in range(12):
            time.sleep(0.02)
            bar.update(advance=1)
    time.sleep(0.5)  # the bar redraws (10 per second) while the last step shows


STEP = [None]


@claim("test.progress.steps", paper=INDUCTION_PAPER, source="§0", statement="a test claim")
def steps(ctx):
    STEP[0] = ctx.step
    ctx.cached("test-work", work, "test work")
    return ClaimResult({}, "PASS", "fine")


from headcount.cli import main

main(["reproduce", "--only", sys.argv[1] + ",test.progress.steps", "--out", sys.argv[2], "--json"])
"""


def test_the_bar_shows_the_claim_counter_and_its_own_steps(tmp_path):
    screen, out = _on_a_terminal([sys.executable, "-c", STEPS_CLAIM, CHEAP, str(tmp_path)])
    assert f"[1/2] {CHEAP}" in screen  # drawn first, however fast the claim
    assert "[2/2] test.progress.steps" in screen
    assert "test work: run 12/12" in screen  # the cached stage, then the claim's counted step
    assert re.search(r"test work: run [1-9]\d*/12", screen)
    assert json.loads(out)["passed"] == 2


def test_step_texts_are_throttled():
    """A loop updating on every item sends at most ~10 texts a second, plus the first and the
    last."""
    from headcount.common.progress import counted, progress_bar

    sent = []
    with progress_bar(sent.append, "work", 100_000, unit="step") as bar:
        for _ in range(100_000):
            bar.update(advance=1)
    assert sent[0] == "step 0/100000" and sent[-1] == "step 100000/100000"
    assert len(sent) < 30
    sent.clear()
    assert list(counted("abc", sent.append, "letters", unit="letter")) == ["a", "b", "c"]
    assert sent == ["letter 0/3", "letter 3/3"]
