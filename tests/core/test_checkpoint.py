"""Resumable certificates (core.certify.checkpoint): a run stopped after any chunk, or killed with
SIGKILL at five points, resumes from its file and ends with the certificate an uninterrupted run
gives (apart from seconds); a file written for another identity, or damaged, is refused in one line
and left as it was."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from headcount.common.errors import InputError
from headcount.core.certify import Checkpoint
from tests.core import checkpoint_run
from tests.core.checkpoint_run import certificate

ROOT = Path(__file__).resolve().parents[2]


def stored(path) -> int:
    """Chunks finished in the file (its one state is the one after chunk idx)."""
    try:
        with sqlite3.connect(path) as conn:
            rows = conn.execute("SELECT idx FROM chunks").fetchall()
    except sqlite3.Error:
        return 0
    assert len(rows) <= 1, "the file keeps one state"
    return rows[0][0] + 1 if rows else 0


class Stop(Exception):
    pass


@pytest.mark.parametrize("name", ["right", "wrong"])
@pytest.mark.parametrize("after", [0, 1, 7, 20, 33])
def test_a_run_stopped_after_any_chunk_resumes_to_the_same_certificate(
    tmp_path, monkeypatch, name, after
):
    whole = certificate(name, None)
    path = tmp_path / "c.sqlite"
    real = checkpoint_run.stream

    def stopping(block_at):
        chunks = real(block_at)

        def replay():
            for index, chunk in enumerate(chunks()):
                if index > after and stored(path) > after:
                    raise Stop  # the run dies before chunk after + 1 is finished
                yield chunk

        return replay

    monkeypatch.setattr(checkpoint_run, "stream", stopping)
    with pytest.raises(Stop):
        certificate(name, str(path))
    assert stored(path) == after + 1
    monkeypatch.setattr(checkpoint_run, "stream", real)
    assert certificate(name, str(path)) == whole
    assert certificate(name, str(path)) == whole  # a finished file: resumed at its end


def test_killed_at_five_points_and_resumed_ends_identical(tmp_path):
    """The child stops before chunk target + 1 and waits: the kill lands while it works on chunk
    `target` or waits after it, and it can never finish first, however busy the machine."""
    whole = certificate("wrong", None)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for point, target in enumerate((1, 5, 12, 21, 30)):
        path = tmp_path / f"k{point}.sqlite"
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.core.checkpoint_run", str(path), "wrong",
             str(target + 1)],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        deadline = time.monotonic() + 600  # a hang guard only, never reached by a working run
        while stored(path) < target and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert child.returncode == -signal.SIGKILL, child.stderr.read().decode()[-2000:]
        assert target <= stored(path) <= target + 1
        assert certificate("wrong", str(path)) == whole, f"killed after {target} chunks"


def test_another_identity_or_a_damaged_file_is_refused(tmp_path):
    path = tmp_path / "c.sqlite"
    certificate("right", str(path))
    before = path.read_bytes()
    with pytest.raises(InputError, match=r"another model or other arguments \(test: stored"):
        certificate("wrong", str(path))
    assert path.read_bytes() == before
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE chunks SET state = replace(state, '\"errors\": 0', '\"errors\": 1')")
    with pytest.raises(InputError, match="damaged"):
        certificate("right", str(path))
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(InputError, match="SQLite file of something else"):
        Checkpoint(other, {})
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    with pytest.raises(InputError, match="not a checkpoint file"):
        Checkpoint(text, {})
    assert text.read_text() == "not a database"
    with pytest.raises(InputError, match="is a directory"):
        Checkpoint(tmp_path, {})
    (tmp_path / "link").symlink_to(tmp_path / "missing")
    with pytest.raises(InputError, match="symbolic link to a missing file"):
        Checkpoint(tmp_path / "link", {})
    assert not (tmp_path / "missing").exists()


def test_the_induction_command_resumes_and_refuses(tmp_path, capsys):
    from tests.cli_run import refused, run

    path = str(tmp_path / "c.sqlite")
    args = ["induction", "certify", "--layers", "2", "--n", "5", "--alphabet", "3", "--json"]
    first = run(capsys, *args, "--checkpoint", path)
    again = run(capsys, *args, "--checkpoint", path)
    assert first[0] == again[0] == 0

    def strip(out: str) -> dict:
        return {k: v for k, v in json.loads(out).items() if k != "seconds"}

    assert strip(first[1]) == strip(again[1])
    other = [*args[:7], "4", "--json", "--checkpoint", path]
    refused(capsys, *other, needles=("another model or other arguments",))


def test_a_sampled_induction_certificate_resumes_to_the_same_one(tmp_path, monkeypatch):
    """Sampled inputs are drawn in stream order from one seed: the chunks before the stored one are
    drawn again (not evaluated), so the resumed run sees the same inputs."""
    from headcount.core.certify import checkpoint as module
    from headcount.induction.certification import certify_induction
    from headcount.induction.construction import two_layer_induction

    def run(path=None):
        result = certify_induction(
            two_layer_induction(12, 4), 12, 4, samples=1500, seed=5, dtypes=False,
            checkpoint=path,
        )  # fmt: skip
        record = result.to_json()
        record.pop("seconds")
        return record

    whole = run()
    path = tmp_path / "s.sqlite"
    real = module.Checkpoint.save

    def dying(self, index, state):
        real(self, index, state)
        if index == 4:
            raise Stop

    monkeypatch.setattr(module.Checkpoint, "save", dying)
    with pytest.raises(Stop):
        run(path)
    monkeypatch.setattr(module.Checkpoint, "save", real)
    assert stored(path) == 5 and run(path) == whole
