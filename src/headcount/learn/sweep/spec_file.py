"""A sweep file on disk → its TOML tables, bounded (hostile or careless files must not hang or
exhaust memory): read only if it is a regular file (never a FIFO or device: reading one could
block), at most MAX_SPEC_BYTES, in UTF-8; nesting beyond what the TOML reader manages is refused in
one line. What the tables mean is spec.py's (spec_from_toml, spec_from_dict).
"""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path
from typing import Any

from headcount.learn.sweep.errors import SpecError

# A sweep file is a few hundred bytes to a few KB; 1 MiB is far beyond any real grid and small
# enough to read and parse at once.
MAX_SPEC_BYTES = 1 << 20


def _read_text(path: Path) -> str:
    """The text of a sweep file: a regular file of at most MAX_SPEC_BYTES, in UTF-8."""
    name = repr(str(path))
    name = name if len(name) <= 200 else name[:199] + "…"
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise SpecError(
            f"sweep file {name} does not exist: give a TOML file with [sweep], [fixed] and [grid] "
            "tables"
        ) from None
    except OSError as err:
        raise SpecError(f"sweep file {name} cannot be read: {err.strerror}") from None
    if not stat.S_ISREG(info.st_mode):
        raise SpecError(
            f"sweep file {name} is not a regular file (a directory, device, FIFO or socket)"
        )
    too_big = SpecError(
        f"sweep file {name} is larger than MAX_SPEC_BYTES = {MAX_SPEC_BYTES:,} bytes; a sweep file "
        "lists a grid, not data"
    )
    if info.st_size > MAX_SPEC_BYTES:
        raise too_big
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SPEC_BYTES + 1)
    except OSError as err:
        raise SpecError(f"sweep file {name} cannot be read: {err.strerror}") from None
    if len(raw) > MAX_SPEC_BYTES:  # it grew since stat
        raise too_big
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"{name}: not valid TOML: the file is not UTF-8 text") from None


def read_sweep_file(path: str | os.PathLike) -> tuple[dict[str, Any], str]:
    """(the file's TOML tables, the path as messages name it); SpecError for a file that cannot be
    read or is not TOML (module docstring)."""
    path = Path(path)
    text = _read_text(path)
    label = str(path) if len(str(path)) <= 120 else str(path)[:119] + "…"  # for messages
    try:
        return tomllib.loads(text), label
    except tomllib.TOMLDecodeError as err:
        raise SpecError(f"{label}: not valid TOML: {err}") from None
    except RecursionError:
        raise SpecError(
            f"{label}: not readable: arrays or tables nested too deeply (sweep values are flat "
            "data)"
        ) from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        raise SpecError(f"{label}: not readable: {' '.join(str(err).split())[:200]}") from None
