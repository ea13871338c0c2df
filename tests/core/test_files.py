"""common/files.py: the atomic writer never replaces something that is not a regular file."""

from __future__ import annotations

import os

import pytest

from headcount.common.errors import InputError
from headcount.common.files import atomic_write_bytes


def _write_hello(tmp):
    with open(tmp, "wb") as f:
        f.write(b"hello")


def test_atomic_write_replaces_a_regular_file(tmp_path):
    target = tmp_path / "a.bin"
    target.write_bytes(b"old")
    atomic_write_bytes(target, _write_hello)
    assert target.read_bytes() == b"hello"


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_atomic_write_refuses_targets_that_are_not_regular_files(tmp_path, kind):
    target = tmp_path / "t"
    os.mkfifo(target) if kind == "fifo" else target.mkdir()
    with pytest.raises(InputError, match="exists and is not a regular file"):
        atomic_write_bytes(target, _write_hello)
    assert target.is_dir() if kind == "folder" else not target.is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["t"]  # no temporary file left behind
