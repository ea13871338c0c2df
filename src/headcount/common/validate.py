"""The library's input checks, shared by the Python API and the CLI: each raises InputError with one
line that says what is wrong and what is allowed (the CLI prints it and exits 2)."""

from __future__ import annotations

import contextlib
import math
import os
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from headcount.common.errors import InputError, param


def check_int(name: str, value: Any, low: int | None = None, high: int | None = None) -> int:
    """`value` as an int if it is an integer (not a bool) in [low, high]; InputError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{param(name)} must be an integer, got {value!r}")
    if low is not None and value < low:
        raise InputError(f"{param(name)} must be ≥ {low}, got {value}")
    if high is not None and value > high:
        raise InputError(f"{param(name)} must be ≤ {high}, got {value}")
    return int(value)


def check_number(name: str, value: Any, low: float, what: str = "a number") -> float:
    """`value` as a float if it is a finite real number (not a bool) ≥ low; InputError naming
    `what` it must be otherwise."""
    real = isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
    if not (real and math.isfinite(value) and value >= low):
        shown = value if real else repr(value)[:40]
        raise InputError(f"{param(name)} must be {what} ≥ {low:g}, got {shown}")
    return float(value)


def check_choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """`value` if it is one of `allowed`; InputError naming the allowed values otherwise."""
    allowed = tuple(allowed)
    if value not in allowed:
        names = [str(a) for a in allowed]
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
        raise InputError(f"{param(name)} {value!r} is not available: use {listed}")
    return value


def check_writable(out: str | os.PathLike, option: str = "out") -> None:
    """InputError unless a file can be written at `out` (a path, not a folder, in a writable
    folder): checked before the work, so an unwritable `out` costs nothing."""
    text = str(out)
    parent = os.path.dirname(text) or "."
    if text == "" or os.path.isdir(text):
        raise InputError(f"{param(option)} {text[:200]!r} is empty or a folder: give a file path")
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(
            f"{param(option)} {text[:200]!r}: its folder does not exist or cannot be written"
        )


def writable_folder(out: str | os.PathLike, option: str = "out", follow: bool = True) -> Path:
    """`out` as a folder that exists and can be written (made with its parents if missing);
    InputError — empty, not a folder, cannot be made or written, or (`follow` False: a folder the
    command names inside the user's) a symbolic link, which would send the writes outside the named
    folder — before any work."""
    text = os.fsdecode(out)
    if text == "":
        raise InputError(f"{param(option)} is empty: give a folder (made if missing)")
    folder, shown = Path(text), repr(text[:200])
    if not follow and os.path.islink(folder):
        raise InputError(
            f"{param(option)} {shown} is a symbolic link: headcount writes only into real folders "
            "there"
        )
    if os.path.lexists(folder) and not folder.is_dir():
        raise InputError(f"{param(option)} {shown} exists and is not a folder: give a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(
            f"{param(option)} {shown}: the folder cannot be made ({err.strerror})"
        ) from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise InputError(f"{param(option)} {shown}: the folder cannot be written")
    return folder


@contextlib.contextmanager
def filling_folder(
    out: str | os.PathLike, option: str = "out", follow: bool = True
) -> Iterator[Path]:
    """writable_folder(out) for the writes inside the block; if the block fails, what it created —
    the folder, missing parents, the files written into them — is removed, so a command that could
    not fill a folder it made leaves none behind. A folder that existed stays (atomic writes keep
    its old files)."""
    text = os.fsdecode(out)
    missing = [p for p in (Path(text), *Path(text).parents) if text and not os.path.lexists(p)]
    folder = writable_folder(text, option, follow)
    try:
        yield folder
    except BaseException:
        if missing:
            shutil.rmtree(missing[-1], ignore_errors=True)
        raise


def check_not_read(
    outputs: Iterable[str | os.PathLike], inputs: Iterable[Any], option: str = "out"
) -> None:
    """InputError if a file the command would write is a file it reads (the same file, also through
    links or another name: os.path.samefile), found before any work, so nothing being read is
    replaced."""
    sources = [os.fsdecode(p) for p in inputs if p is not None]
    for target in outputs:
        for source in sources:
            try:
                same = os.path.samefile(target, source)
            except (
                OSError,
                ValueError,
            ):  # either missing (nothing to overwrite) or not a usable path
                continue
            if same:
                raise InputError(
                    f"{param(option)} would overwrite {os.fsdecode(source)[:200]!r}, which this "
                    "command "
                    "reads: write to another path"
                )
