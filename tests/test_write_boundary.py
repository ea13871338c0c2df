"""Writes at the boundary (issue 28, points 3 and 4): a write error (a full disk) is exit 2 naming
the file, a folder the command made and could not fill is removed, nothing being read is overwritten
(also through links or another name), a symbolic link planted inside --out is refused, and an empty
--out is refused everywhere. A full disk is emulated with RLIMIT_FSIZE (SIGXFSZ ignored: the write
fails with EFBIG), in a child process, so the test's own files are not limited."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from headcount.core.model.files import save_model
from headcount.induction.construction import two_layer_induction
from tests.cli_run import refused, run
from tests.core.gpt2_checkpoints import config, state_dict, write_folder

ZOO = "induction-2layer-n16-s4"
_CHILD = (
    "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
    "resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1]))); "
    "from headcount.cli import main; main(sys.argv[2:])"
)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _full_disk(cwd: Path, limit: int, *argv: str) -> str:
    """Run `headcount argv…` in `cwd` where no file may grow past `limit` bytes; assert exit 2 with
    one line naming the failure; that line."""
    argv = (sys.executable, "-c", _CHILD, str(limit), *argv)
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert "File too large" in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def model(tmp_path) -> Path:
    path = tmp_path / "D" / "model.safetensors"
    path.parent.mkdir()
    save_model(two_layer_induction(8, 3), path)
    return path


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE semantics: Linux")
def test_a_full_disk_is_exit_2_and_leaves_old_files_and_no_new_folder(tmp_path, model):
    old = tmp_path / "old.safetensors"
    old.write_bytes(b"the user's file")
    line = _full_disk(
        tmp_path,
        200,
        "induction",
        "construct",
        "--layers",
        "2",
        "--n",
        "8",
        "--alphabet",
        "3",
        "--out",
        str(old),
    )
    assert "old.safetensors" in line and old.read_bytes() == b"the user's file"
    _full_disk(
        tmp_path, 200, "export", "transformer-lens", "--model", str(model), "--out", "new/tl"
    )
    assert not (tmp_path / "new").exists()  # the folders it made, removed
    _full_disk(tmp_path, 200, "zoo", "export", ZOO, "--format", "transformer-lens", "--out", "zoo")
    assert not (tmp_path / "zoo").exists()
    _full_disk(
        tmp_path,
        100,
        "boolean",
        "construct",
        "--function",
        "xor",
        "--n",
        "4",
        "--degree",
        "2",
        "--heads",
        "2",
        "--out",
        "b.safetensors",
    )
    _full_disk(
        tmp_path,
        100,
        "boolean",
        "frontier",
        "--function",
        "xor",
        "--n",
        "4",
        "--degree",
        "2",
        "--heads",
        "2",
        "--out",
        "f.safetensors",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "D",
        "old.safetensors",
    ]  # no temporary left


def test_the_model_being_read_is_never_overwritten(capsys, tmp_path, model):
    before = _digest(model)
    refused(capsys, "export", "transformer-lens", "--model", str(model), "--out", str(model.parent),
            needles=("would overwrite",))  # fmt: skip
    (tmp_path / "link").symlink_to(model.parent)
    refused(capsys, "export", "transformer-lens", "--model", str(tmp_path / "link" / model.name),
            "--out", f"{model.parent}/../D", needles=("would overwrite",))  # fmt: skip
    os.link(model, tmp_path / "attention.png")  # another name of the same file
    refused(capsys, "analyze", "patterns", "--model", str(model), "--out", str(tmp_path),
            needles=("would overwrite",))  # fmt: skip
    assert _digest(model) == before
    tl = tmp_path / "tl"
    assert (
        run(capsys, "export", "transformer-lens", "--model", str(model), "--out", str(tl))[0] == 0
    )
    weights = _digest(tl / "model.safetensors")
    refused(capsys, "import", "transformer-lens", str(tl), "--out", str(tl / "model.safetensors"),
            needles=("would overwrite",))  # fmt: skip
    assert _digest(tl / "model.safetensors") == weights
    gpt2 = write_folder(tmp_path / "gpt2", state_dict(), config())
    for name in ("model.safetensors", "config.json"):
        before = _digest(gpt2 / name)
        refused(
            capsys,
            "import",
            "gpt2",
            str(gpt2),
            "--out",
            str(gpt2 / name),
            needles=("would overwrite",),
        )
        assert _digest(gpt2 / name) == before


def test_a_link_planted_inside_out_is_refused(capsys, tmp_path):
    out, target = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    target.mkdir()
    (out / ZOO).symlink_to(target)
    refused(capsys, "zoo", "export", ZOO, "--format", "transformer-lens", "--out", str(out),
            needles=("symbolic link",))  # fmt: skip
    assert list(target.iterdir()) == []


def test_an_empty_out_is_refused_everywhere(capsys, tmp_path, model, monkeypatch):
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    for argv in (
        ("export", "transformer-lens", "--model", str(model)),
        ("analyze", "patterns", "--model", str(model)),
        ("reproduce", "--only", "boolean.xor.DH_iff"),
        ("zoo", "export", ZOO),
        ("induction", "construct", "--layers", "2", "--n", "8", "--alphabet", "3"),
        ("import", "transformer-lens", str(tmp_path)),
    ):
        refused(capsys, *argv, "--out", "")
    assert sorted(os.listdir(tmp_path)) == before


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_FSIZE semantics: Linux")
def test_a_full_disk_is_not_blamed_on_a_healthy_database(tmp_path):
    from headcount.learn.store import ResultsStore

    with ResultsStore(tmp_path / "r.db"):
        pass
    before = _digest(tmp_path / "r.db")
    argv = (
        sys.executable,
        "-c",
        _CHILD,
        "1",
        "sweep",
        "table",
        "--db",
        "r.db",
        "--experiment",
        "e",
    )
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "disk full" in lines[0], done.stderr
    assert "not a usable" not in lines[0] and _digest(tmp_path / "r.db") == before


def test_files_and_folders_a_command_names_inside_its_target_are_never_links(tmp_path):
    """reproduce's results database inside --out, a sweep's model folder beside --db: a planted link
    there would send the writes elsewhere, so it is refused before any work."""
    from headcount.common.errors import InputError
    from headcount.learn.sweep.run import _model_folder
    from headcount.report.reproduce import RESULTS_DB, run_reproduce

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / RESULTS_DB).symlink_to(tmp_path / "elsewhere.sqlite")
    with pytest.raises(InputError, match="symbolic link"):
        run_reproduce(
            "quick", only="constant_dim", out_dir=tmp_path / "out", progress=lambda _: None
        )
    (tmp_path / "models").symlink_to(tmp_path / "out")
    with pytest.raises(InputError, match="symbolic link"):
        _model_folder(tmp_path / "models")
    assert (
        os.listdir(tmp_path / "out") == [RESULTS_DB]
        and not (tmp_path / "elsewhere.sqlite").exists()
    )
