"""Who holds the lease of a run, and whether that holder is still alive (for `ResultsStore.lease`).

A sweep call leases each run in the database just before training it and releases the lease when it
records the run, so concurrent sweeps on one database never train the same run twice. A lease names
its holder: a random token (one per sweep call), the process id, the host and the process's start
time (from /proc where there is one, so a reused pid is not mistaken for the holder). Another sweep
treats a lease as held while the holder is alive: on this host, the process exists, is not a zombie
and started when the lease says; on another host (a database on a shared file system) it cannot
tell, so the lease holds until LEASE_STALE_SECONDS. A lease older than that is taken over whoever
holds it, and so is the lease of a process that is gone (a SIGKILLed sweep), so re-running the sweep
resumes it.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from typing import Any

# A lease is taken over after this long even if its holder looks alive: far longer than any run of
# the built-in tasks (minutes), short enough that a lease left by a sweep on another host, or by a
# pid the system cannot check, does not block its runs forever.
LEASE_STALE_SECONDS = 24 * 3600.0


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, start time in clock ticks since boot) of `pid` from /proc, or None where
    unavailable."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read().decode("ascii", "replace")
    except OSError:
        return None
    fields = text[text.rfind(")") + 2 :].split()  # after "pid (command) ": it may hold spaces
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


def this_process() -> dict[str, Any]:
    """A new lease holder for this process: a fresh token, pid, host, start time (None if
    unknown)."""
    stat = _proc_stat(os.getpid())
    return {
        "token": uuid.uuid4().hex,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "started": None if stat is None else stat[1],
    }


def _process_alive(pid: int, started: int | None) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        pass
    except (OverflowError, ValueError):  # not a pid at all
        return False
    stat = _proc_stat(pid)
    if stat is None:
        return True  # no /proc: the pid exists
    state, start = stat
    return state != "Z" and (started is None or start == started)


def holder_alive(lease: dict[str, Any]) -> bool:
    """Whether the holder of `lease` (ResultsStore.leases' row: pid, host, started, leased_at) may
    still be running its run: see the module docstring."""
    if time.time() - float(lease["leased_at"]) > LEASE_STALE_SECONDS:
        return False
    if lease["host"] != socket.gethostname():
        return True
    pid = lease["pid"]
    if not isinstance(pid, int) or pid <= 0:
        return False
    return _process_alive(pid, lease["started"])  # this very process too: another sweep call
