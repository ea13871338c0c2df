"""Progress by default on a terminal (issue 31, point 1): certify and train draw a bar on stderr
when it is a terminal (a pseudo-terminal here) and print nothing there when it is not;
--no-progress silences them on a terminal, --progress forces the bar without one; --json stdout is
one JSON object in every case. sweep run, experiment, induction protocol and minmax search share
the option."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys

import pytest
import typer.main

from headcount.cli import app

CERTIFY = ["induction", "certify", "--layers", "2", "--n", "6", "--alphabet", "3", "--json"]
TRAIN = ["train", "induction", "--layers", "1", "--dim", "8", "--n", "6", "--steps", "30"]
TRAIN += ["--json"]


def _command(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "headcount.cli", *args]


def _on_a_terminal(args: list[str], tmp_path) -> tuple[str, dict]:
    """(what stderr, a pseudo-terminal, showed with its escape sequences removed; stdout's one JSON
    object). stdout goes to a file, so a long answer never waits on this reader."""
    main_fd, side = pty.openpty()
    env = dict(os.environ, TERM="xterm", COLUMNS="160")
    with open(tmp_path / "stdout", "wb") as out:
        proc = subprocess.Popen(_command(args), stdout=out, stderr=side, env=env)
        os.close(side)
        chunks = []
        while True:
            try:
                data = os.read(main_fd, 65536)
            except OSError:  # the terminal closed: the command ended
                break
            if not data:
                break
            chunks.append(data)
        assert proc.wait(timeout=600) == 0
    os.close(main_fd)
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode("utf-8", "replace"))
    return screen, json.loads((tmp_path / "stdout").read_text())


def _piped(args: list[str]) -> tuple[str, dict]:
    done = subprocess.run(_command(args), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stderr, json.loads(done.stdout)


def _verdict(answer: dict) -> dict:
    return {key: value for key, value in answer.items() if key != "seconds"}


def test_certify_shows_a_bar_on_a_terminal_and_nothing_without_one(tmp_path):
    screen, answer = _on_a_terminal(CERTIFY, tmp_path)
    assert re.search(r"certify .*\d+/729", screen)  # 3^6 inputs, counted
    assert answer["inputs_checked"] == 729
    silent, again = _on_a_terminal([*CERTIFY, "--no-progress"], tmp_path)
    assert silent == "" and _verdict(again) == _verdict(answer)
    stderr, piped = _piped(CERTIFY)
    assert stderr == "" and _verdict(piped) == _verdict(answer)
    stderr, forced = _piped([*CERTIFY, "--progress"])
    assert "729/729" in stderr  # the bar without a terminal: its last state
    assert _verdict(forced) == _verdict(answer)


def test_train_shows_a_bar_on_a_terminal_and_nothing_without_one(tmp_path):
    screen, answer = _on_a_terminal(TRAIN, tmp_path)
    assert re.search(r"\d+/30 loss", screen) and answer["steps"] == 30
    stderr, piped = _piped(TRAIN)
    assert stderr == "" and piped["steps"] == 30


@pytest.mark.parametrize(
    "command",
    [
        ["induction", "certify"],
        ["induction", "protocol"],
        ["minmax", "search"],
        ["train", "induction"],
        ["train", "minmax"],
        ["train", "boolean"],
        ["sweep", "run"],
        ["experiment"],
    ],
)
def test_every_command_with_progress_takes_both_spellings(command):
    found = typer.main.get_command(app)
    for name in command:
        found = found.commands[name]
    option = next(p for p in found.params if p.name == "progress")
    assert option.opts == ["--progress"] and option.secondary_opts == ["--no-progress"]
    assert option.default is None  # neither: on when stderr is a terminal (cli.common.progress_on)
