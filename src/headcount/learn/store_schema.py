"""What makes a file a results database (`headcount.learn.store`): its tables, and the checks and
preparation an open goes through before the store reads or writes it.

Tables
    meta(key TEXT PRIMARY KEY, value TEXT)   app = "headcount-results", schema_version = "1"
    runs  one row per run (never two for one run_id):
        run_id        TEXT PRIMARY KEY  run_id_for(config): sha256 of the canonical JSON of the
                                        config (seed included), first 16 hex digits
        sweep         TEXT              name of the sweep that ran it (the first one, if several
                                        share it)
        experiment    TEXT              label used by tables and plots
        task          TEXT              config["task"]
        config        TEXT              the run's config as JSON (seed included)
        seed          INTEGER           config["seed"]
        status        TEXT              'done' | 'failed'
        metrics       TEXT              JSON object returned by the runner (NULL when failed)
        error         TEXT              one line: exception type, message, innermost location
                                        (failed runs)
        wall_seconds  REAL              wall time of the runner call, measured around it
        versions      TEXT              JSON: python, numpy, torch, headcount, platform, host of
                                        the worker
        started_at    TEXT              ISO 8601 UTC
        finished_at   TEXT              ISO 8601 UTC
        runner        TEXT              the registered runner name that produced the row
                                        (sweep.runners)
        attempts      INTEGER           how many times the run was recorded (failed tries + the
                                        last one)
    claims  the leases: a row per run a sweep trains now (run_id, token of the sweep call, pid,
        host, started: the process's start time where known, claimed_at: Unix time, read as
        leased_at); added by the first open for writing, so databases made before it exist gain it.
        The table and column keep the names they had when leases were called claims: old
        databases open and resume unchanged.

Opening (`open_results_db`) raises `ResultsDBError` (an InputError) and leaves the file untouched
when it is not a usable results database: a directory, device or FIFO (checked before anything opens
it), a symbolic link to nothing, another kind of file, a damaged database (SQLite's quick_check), a
folder where no file can be created; with `for_writing=True` also a file that cannot be written (a
write transaction is tried at once, before any run trains). A missing or empty file is created and
initialised. The connection is in WAL mode with a busy timeout: readers never block the writer, and
writers wait for each other instead of failing. WAL needs a local disk.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from headcount.common.errors import InputError
from headcount.common.sqlite_files import existing_sqlite

APP = "headcount-results"
SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    run_id       TEXT PRIMARY KEY,
    sweep        TEXT,
    experiment   TEXT,
    task         TEXT,
    config       TEXT NOT NULL,
    seed         INTEGER,
    status       TEXT NOT NULL CHECK (status IN ('done', 'failed')),
    metrics      TEXT,
    error        TEXT,
    wall_seconds REAL,
    versions     TEXT,
    started_at   TEXT,
    finished_at  TEXT,
    runner       TEXT,
    attempts     INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX runs_experiment ON runs (experiment);
CREATE INDEX runs_sweep ON runs (sweep);
"""
# The table `claims` holds the leases (its name and its column claimed_at are the file format's:
# kept so that older databases keep opening and resuming).
LEASE_TABLE = (
    "CREATE TABLE IF NOT EXISTS claims (run_id TEXT PRIMARY KEY, token TEXT NOT NULL, pid INTEGER, "
    "host TEXT, started INTEGER, claimed_at REAL NOT NULL)"
)
LEASE_KEYS = ("token", "pid", "host", "started")  # who holds a lease (leased_at: when it was taken)

RUN_COLUMNS = tuple(
    "run_id sweep experiment task config seed status metrics error wall_seconds versions "
    "started_at finished_at runner attempts".split()
)


class ResultsDBError(InputError):
    """A file that cannot be used as a headcount results database (the message says why)."""


def shown(path: Path) -> str:
    """The path for a message: repr'd, at most 120 characters."""
    text = repr(str(path))
    return text if len(text) <= 120 else text[:119] + "…"


def _existing_database(path: Path) -> bool:
    """common.files.existing_sqlite for a results database (ResultsDBError, its own wording)."""
    try:
        return existing_sqlite(path, "results database", "a headcount results database")
    except InputError as err:
        raise ResultsDBError(str(err)) from None


_SQLITE_HINTS = (  # (words in SQLite's message, what it means for the user)
    (
        ("readonly", "read-only"),
        "cannot be written ({}): check the permissions of the file and its folder",
    ),
    (("unable to open",), "cannot be opened ({}): check that its folder exists and is writable"),
    (("locked", "busy"), "is locked by another process ({}); try again"),
    (
        ("disk is full", "disk I/O error"),
        "cannot be written ({}): is its disk full? (the file is unchanged)",
    ),
)


def _sqlite_problem(name: str, err: sqlite3.Error) -> str:
    """One line for an SQLite error met while opening `name`: what to check."""
    for words, hint in _SQLITE_HINTS:
        if any(word in str(err) for word in words):
            return f"results database {name} {hint.format(err)}"
    return f"{name} is not a usable headcount results database: {err}"


def transaction(conn: sqlite3.Connection, body: Callable[[sqlite3.Connection], Any]) -> Any:
    """body(conn) inside BEGIN IMMEDIATE … COMMIT (ROLLBACK when it raises); its result."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = body(conn)
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    return result


def tables(conn: sqlite3.Connection) -> set[str]:
    """The names of the database's tables."""
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def open_results_db(path: Path, timeout: float, for_writing: bool) -> sqlite3.Connection:
    """A connection (autocommit: writes use `transaction`) to the results database at `path`,
    created if missing or empty, checked (module docstring), in WAL mode; with `for_writing` the
    lease table is there and a write has succeeded. ResultsDBError when the file is not usable."""
    name = shown(path)
    existing = _existing_database(path)
    if not existing:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ResultsDBError(
                f"cannot create the folder of results database {name}: {err.strerror}"
            ) from None
    try:
        conn = sqlite3.connect(str(path), timeout=timeout, isolation_level=None)
    except sqlite3.Error as err:
        raise ResultsDBError(_sqlite_problem(name, err)) from None
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        if not tables(conn):
            _initialise(conn)
        _check_schema(conn, path)
        _enable_wal(conn, timeout)
        # WAL + NORMAL: durable at each checkpoint, consistent always; a committed run survives the
        # process being killed (not a power cut).
        conn.execute("PRAGMA synchronous = NORMAL")
        if existing:
            _check_integrity(conn, path)
        if for_writing:
            _prepare_writes(conn)
    except sqlite3.Error as err:
        conn.close()
        raise ResultsDBError(_sqlite_problem(name, err)) from None
    except BaseException:
        conn.close()
        raise
    return conn


def _initialise(conn: sqlite3.Connection) -> None:
    """Create the tables and the meta rows, in one transaction."""

    def body(conn: sqlite3.Connection) -> None:
        if not tables(conn):  # nobody initialised it while we waited for the lock
            for statement in SCHEMA.strip().split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("app", APP), ("schema_version", str(SCHEMA_VERSION))],
            )

    transaction(conn, body)


def _check_schema(conn: sqlite3.Connection, path: Path) -> None:
    """ResultsDBError unless the file is a headcount results database this version reads."""
    name = repr(str(path))
    if "meta" not in tables(conn):
        raise ResultsDBError(
            f"{name} is an SQLite database but not a headcount results database (no 'meta' table)"
        )
    meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
    if meta.get("app") != APP:
        raise ResultsDBError(
            f"{name} is an SQLite database but not a headcount results database "
            f"(meta app = {meta.get('app')!r}, expected {APP!r})"
        )
    try:
        version = int(meta.get("schema_version", ""))
    except ValueError:
        raise ResultsDBError(
            f"{name} has an unreadable schema_version {meta.get('schema_version')!r}"
        ) from None
    if version > SCHEMA_VERSION:
        raise ResultsDBError(
            f"{name} has results schema {version}, newer than this headcount reads "
            f"(≤ {SCHEMA_VERSION}): upgrade headcount"
        )
    if version < 1 or "runs" not in tables(conn):
        raise ResultsDBError(
            f"{name} is a damaged headcount results database (schema {version}, runs table "
            f"{'present' if 'runs' in tables(conn) else 'missing'})"
        )


def _enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """WAL mode. Switching to it fails at once ("database is locked", the busy handler is not used)
    while another connection opens the new file at the same moment: retried until `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """ResultsDBError for a damaged file (half written, overwritten): SQLite's quick_check, one
    pass."""
    found = [r[0] for r in conn.execute("PRAGMA quick_check(1)")]
    if found != ["ok"]:
        first = " ".join(str(found[0] if found else "no answer").split())[:200]
        raise ResultsDBError(
            f"{shown(path)} is a damaged results database (SQLite quick_check: {first}); "
            "restore it from a copy or give a new file name"
        )


def _prepare_writes(conn: sqlite3.Connection) -> None:
    """One write transaction, now: the lease table (added to databases made before it existed) and
    a rewrite of a meta row, so a file or folder that cannot be written fails here, before any
    work."""
    transaction(
        conn,
        lambda conn: (
            conn.execute(LEASE_TABLE),
            conn.execute("UPDATE meta SET value = value WHERE key = 'app'"),
        ),
    )
