"""SQLite files named by the user (a results database, a certificate checkpoint), checked before
SQLite opens them: SQLite would follow a link to a missing file and create its target, block on a
FIFO, or write its journal beside a file of another kind."""

from __future__ import annotations

import os
import stat

from headcount.common.errors import InputError

SQLITE_MAGIC = b"SQLite format 3\x00"


def existing_sqlite(path: str | os.PathLike, label: str, kind: str) -> bool:
    """True for a non-empty regular file that starts like an SQLite file, False for a missing or
    empty one (a new database); InputError for anything else — a symbolic link to a missing file
    (SQLite would create its target), a folder, a device, FIFO or socket, an unreadable file, or
    another kind of file. Never opens anything but a regular file. `label` names the file in the
    message ("results database"), `kind` what it should be ("a headcount results database")."""
    name = repr(os.fsdecode(path)[:200])
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError(
                f"{label} {name} is a symbolic link to a missing file; give a file name"
            ) from None
        return False
    except OSError as err:  # a name too long, a parent that is a file, a folder we may not enter
        raise InputError(f"{label} {name} cannot be used: {err.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise InputError(f"{label} {name} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            f"{label} {name} is not a regular file (a device, FIFO or socket); give a file name"
        )
    if info.st_size == 0:
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(len(SQLITE_MAGIC))
    except OSError as err:
        raise InputError(f"{label} {name} cannot be read: {err.strerror}") from None
    if head != SQLITE_MAGIC:
        raise InputError(
            f"{name} is not {kind} (not an SQLite file); give a new file name or an existing one"
        )
    return True
