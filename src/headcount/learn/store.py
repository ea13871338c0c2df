"""The results database of learning sweeps: one SQLite file, one row per finished run.

Tables
    meta(key TEXT PRIMARY KEY, value TEXT)   app = "headcount-results", schema_version = "1"
    runs  one row per run (never two for one run_id):
        run_id        TEXT PRIMARY KEY  run_id_for(config): sha256 of the canonical JSON of the
        config
                                        (seed included), first 16 hex digits
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
        versions      TEXT              JSON: python, numpy, torch, headcount, platform, host of the
        worker
        started_at    TEXT              ISO 8601 UTC
        finished_at   TEXT              ISO 8601 UTC
        runner        TEXT              the registered runner name that produced the row
        (sweep.runners)
        attempts      INTEGER           how many times the run was recorded (failed tries + the last
        one)
    claims  a row per run a sweep trains now (run_id, token of the sweep call, pid, host, started:
    the
        process's start time where known, claimed_at: Unix time); made by the first sweep that
        writes

Writes. `record` writes one row in one transaction (BEGIN IMMEDIATE … COMMIT). A run stored as
'done' is never written again: a second record for it is ignored, so a run is stored exactly once
however many processes race. A run stored as 'failed' is *not* in `finished_ids()`, so re-running
the sweep retries it, and the retry's record replaces the failed row (attempts + 1). A sweep claims
each run before training it (`claim`: one transaction; refused while another live sweep holds the
run, or once another sweep has recorded it) and the record of the run releases the claim in the same
transaction, so concurrent sweeps on one file train each run once; a claim whose process is gone
(SIGKILL) is taken over.

Concurrency. WAL mode, a 60 s busy timeout: readers (tables, plots, a test polling progress) never
block the writer, and writers (two sweeps on one file) wait for each other instead of failing. In
`headcount.learn.sweep` only the parent writes; workers return results to it. WAL needs a local
disk.

Opening raises `ResultsDBError` (an InputError) and leaves the file untouched when it is not a
usable results database: a directory, device or FIFO (checked before anything opens it), a symbolic
link to nothing, another kind of file, a damaged database (SQLite's quick_check), a folder where no
file can be created; with `for_writing=True` also a file that cannot be written (a write transaction
is tried at once, before any run trains). A missing or empty file is created and initialised.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from headcount.common.errors import InputError

APP = "headcount-results"
SCHEMA_VERSION = 1
STATUSES = ("done", "failed")
_SQLITE_MAGIC = b"SQLite format 3\x00"

_SCHEMA = """
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
_CLAIMS = (
    "CREATE TABLE IF NOT EXISTS claims (run_id TEXT PRIMARY KEY, token TEXT NOT NULL, pid INTEGER, "
    "host TEXT, started INTEGER, claimed_at REAL NOT NULL)"
)
CLAIM_KEYS = (
    "token",
    "pid",
    "host",
    "started",
)  # who holds a claim (claimed_at is added when it is taken)

_COLUMNS = tuple(
    "run_id sweep experiment task config seed status metrics error wall_seconds versions "
    "started_at "
    "finished_at runner attempts".split()
)


class ResultsDBError(InputError):
    """A file that cannot be used as a headcount results database (the message says why)."""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal configs give equal text (NaN and ±inf refused)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def run_id_for(config: dict[str, Any]) -> str:
    """Stable id of a run: sha256 of the canonical JSON of its config (seed included), 16 hex
    digits.

    Key order does not matter; 1 and 1.0 are different values (TOML keeps them apart too)."""
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()[:16]


def _encode(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _decode(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def _short(path: Path) -> str:
    text = repr(str(path))
    return text if len(text) <= 120 else text[:119] + "…"


def _existing_database(path: Path) -> bool:
    """True for a non-empty regular file that starts like an SQLite file, False for a missing or
    empty one (a new database); ResultsDBError for anything else. Never opens anything but a regular
    file."""
    name = _short(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise ResultsDBError(
                f"results database {name} is a symbolic link to a missing file; give a file name"
            ) from None
        return False
    except OSError as err:  # a name too long, a parent that is a file, a folder we may not enter
        raise ResultsDBError(f"results database {name} cannot be used: {err.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise ResultsDBError(f"results database {name} is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise ResultsDBError(
            f"results database {name} is not a regular file (a device, FIFO or socket); give a "
            "file name"
        )
    if info.st_size == 0:
        return False
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError as err:
        raise ResultsDBError(f"results database {name} cannot be read: {err.strerror}") from None
    if head != _SQLITE_MAGIC:
        raise ResultsDBError(
            f"{name} is not a headcount results database "
            "(not an SQLite file); give a new file name or an existing results DB"
        )
    return True


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


class ResultsStore:
    """An open results database. Use as a context manager or call close(). `for_writing`: check at
    once that the file can be written (and prepare the claims table), as a sweep does before
    training."""

    def __init__(
        self, path: str | os.PathLike, *, timeout: float = 60.0, for_writing: bool = False
    ):
        self.path = Path(path)
        name = _short(self.path)
        existing = _existing_database(self.path)
        if not existing:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise ResultsDBError(
                    f"cannot create the folder of results database {name}: {err.strerror}"
                ) from None
        try:
            self._conn = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None)
        except sqlite3.Error as err:
            raise ResultsDBError(_sqlite_problem(name, err)) from None
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._init_or_check()
            self._enable_wal(timeout)
            self._conn.execute(
                "PRAGMA synchronous = NORMAL"
            )  # WAL + NORMAL: durable at each checkpoint,
            # consistent always; a committed run survives the process being killed (not a power
            # cut).
            if existing:
                self._check_integrity()
            if for_writing:
                self._prepare_writes()
        except sqlite3.Error as err:
            self._conn.close()
            raise ResultsDBError(_sqlite_problem(name, err)) from None
        except BaseException:
            self._conn.close()
            raise

    # -- opening
    # ---------------------------------------------------------------------------------------

    def _tables(self) -> set[str]:
        return {
            r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }

    def _init_or_check(self) -> None:
        if not self._tables():
            self._initialise()
        self._check_schema()

    def _initialise(self) -> None:
        """Create the tables and the meta rows, in one transaction."""

        def body(conn: sqlite3.Connection) -> None:
            if not self._tables():  # nobody initialised it while we waited for the lock
                for statement in _SCHEMA.strip().split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("app", APP), ("schema_version", str(SCHEMA_VERSION))],
                )

        self._transaction(body)

    def _check_schema(self) -> None:
        """ResultsDBError unless the file is a headcount results database this version reads."""
        name = repr(str(self.path))
        if "meta" not in self._tables():
            raise ResultsDBError(
                f"{name} is an SQLite database but not a headcount results database (no 'meta' "
                "table)"
            )
        meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
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
        if version < 1 or "runs" not in self._tables():
            raise ResultsDBError(
                f"{name} is a damaged headcount results database (schema {version}, runs table "
                f"{'present' if 'runs' in self._tables() else 'missing'})"
            )

    def _enable_wal(self, timeout: float) -> None:
        """WAL mode. Switching to it fails at once ("database is locked", the busy handler is not
        used) while another connection opens the new file at the same moment: retried until
        `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self._conn.execute("PRAGMA journal_mode = WAL").fetchall()
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _check_integrity(self) -> None:
        """ResultsDBError for a damaged file (half written, overwritten): SQLite's quick_check, one
        pass."""
        found = [r[0] for r in self._conn.execute("PRAGMA quick_check(1)")]
        if found != ["ok"]:
            first = " ".join(str(found[0] if found else "no answer").split())[:200]
            raise ResultsDBError(
                f"{_short(self.path)} is a damaged results database (SQLite quick_check: {first}); "
                "restore it from a copy or give a new file name"
            )

    def _prepare_writes(self) -> None:
        """One write transaction, now: the claims table (added to databases made before it existed)
        and a rewrite of a meta row, so a file or folder that cannot be written fails here, before
        any work."""
        self._transaction(
            lambda conn: (
                conn.execute(_CLAIMS),
                conn.execute("UPDATE meta SET value = value WHERE key = 'app'"),
            )
        )

    def _transaction(self, body: Callable[[sqlite3.Connection], Any]) -> Any:
        """body(conn) inside BEGIN IMMEDIATE … COMMIT (ROLLBACK when it raises); its result."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            result = body(conn)
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return result

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reading
    # ---------------------------------------------------------------------------------------

    def finished_ids(self, run_ids: Iterable[str] | None = None) -> set[str]:
        """Ids of runs stored as 'done' (all of them, or those among `run_ids`). Failed runs are not
        finished: a sweep re-run retries them."""
        done = {r[0] for r in self._conn.execute("SELECT run_id FROM runs WHERE status = 'done'")}
        return done if run_ids is None else done & set(run_ids)

    def statuses(self, run_ids: Iterable[str] | None = None) -> dict[str, str]:
        """run_id → 'done' | 'failed' for the stored runs (all of them, or those among
        `run_ids`)."""
        found = dict(self._conn.execute("SELECT run_id, status FROM runs"))
        return found if run_ids is None else {r: found[r] for r in set(run_ids) if r in found}

    def rows(
        self, experiment: str | None = None, sweep: str | None = None, status: str | None = None
    ) -> list[dict[str, Any]]:
        """Stored runs as dicts (config, metrics, versions decoded from JSON), in the order they
        finished.

        Filters combine; status None means both 'done' and 'failed'."""
        where, args = [], []
        for column, value in (("experiment", experiment), ("sweep", sweep), ("status", status)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = f"SELECT {', '.join(_COLUMNS)} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY finished_at, rowid"
        out = []
        for values in self._conn.execute(sql, args):
            row = dict(zip(_COLUMNS, values))
            for key in ("config", "metrics", "versions"):
                try:
                    row[key] = _decode(row[key])
                except (
                    ValueError,
                    TypeError,
                    RecursionError,
                ) as err:  # a row written by something else
                    problem = " ".join(str(err).split())[:120] or type(err).__name__
                    raise ResultsDBError(
                        f"{_short(self.path)} is damaged: run {str(row['run_id'])[:40]!r} has "
                        "unreadable "
                        f"{key} ({problem})"
                    ) from None
            out.append(row)
        return out

    def experiments(self) -> list[str]:
        sql = (
            "SELECT DISTINCT experiment FROM runs WHERE experiment IS NOT NULL ORDER BY experiment"
        )
        return [r[0] for r in self._conn.execute(sql)]

    def count(self, status: str | None = None) -> int:
        if status is None:
            return self._conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        return self._conn.execute(
            "SELECT count(*) FROM runs WHERE status = ?", (status,)
        ).fetchone()[0]

    # -- writing
    # ---------------------------------------------------------------------------------------

    def record(
        self,
        *,
        run_id: str,
        config: dict[str, Any],
        status: str,
        sweep: str | None = None,
        experiment: str | None = None,
        metrics: dict[str, Any] | None = None,
        error: str | None = None,
        wall_seconds: float | None = None,
        versions: dict[str, Any] | None = None,
        started_at: str | None = None,
        finished_at: str | None = None,
        runner: str | None = None,
        claim_token: str | None = None,
    ) -> bool:
        """Store one finished run in one transaction. Returns False (and writes nothing) when the
        run is already stored as 'done'; a stored 'failed' row is replaced (attempts + 1). The claim
        of `claim_token` on the run, if any, is released in the same transaction."""
        if status not in STATUSES:
            raise ValueError(f"status {status!r} is not one of {STATUSES}")
        if status == "done" and metrics is None:
            raise ValueError("a 'done' run needs its metrics (a dict)")
        if wall_seconds is not None and not math.isfinite(wall_seconds):
            wall_seconds = None
        seed = config.get("seed")
        if not isinstance(seed, int) or isinstance(seed, bool) or not -(2**63) <= seed < 2**63:
            seed = None  # the column is an SQLite INTEGER (64 bits); the config keeps any seed
        return self._write(
            {
                "run_id": run_id,
                "sweep": sweep,
                "experiment": experiment,
                "task": config.get("task"),
                "config": json.dumps(config, ensure_ascii=False, allow_nan=False),
                "seed": seed,
                "status": status,
                "metrics": _encode(metrics),
                "error": error,
                "wall_seconds": wall_seconds,
                "versions": _encode(versions),
                "started_at": started_at,
                "finished_at": finished_at,
                "runner": runner,
            },
            claim_token,
        )

    def _write(self, values: dict[str, Any], claim_token: str | None = None) -> bool:
        """Insert or replace the row `values` (attempts counted) unless its run is stored as 'done';
        the claim of `claim_token` on the run (if any) is released in the same transaction."""

        def body(conn: sqlite3.Connection) -> bool:
            if claim_token is not None:
                conn.execute(
                    "DELETE FROM claims WHERE run_id = ? AND token = ?",
                    (values["run_id"], claim_token),
                )
            row = conn.execute(
                "SELECT status, attempts FROM runs WHERE run_id = ?", (values["run_id"],)
            ).fetchone()
            if row is not None and row[0] == "done":
                return False
            values["attempts"] = 1 if row is None else row[1] + 1
            names = list(values)
            conn.execute(
                f"INSERT OR REPLACE INTO runs ({', '.join(names)}) VALUES "
                f"({', '.join('?' * len(names))})",
                [values[k] for k in names],
            )
            return True

        return self._transaction(body)

    # -- claims: concurrent sweeps on one file
    # -----------------------------------------------------------

    def attempts(self, run_ids: Iterable[str]) -> dict[str, int]:
        """run_id → how many times it was recorded (0: never), for `run_ids`."""
        found = dict(self._conn.execute("SELECT run_id, attempts FROM runs"))
        return {r: found.get(r, 0) for r in run_ids}

    def claim(
        self,
        run_id: str,
        owner: Mapping[str, Any],
        seen_attempts: int,
        alive: Callable[[dict[str, Any]], bool],
    ) -> bool:
        """Claim `run_id` for `owner` (CLAIM_KEYS), in one transaction (needs for_writing). False
        when the run was recorded since the caller saw `seen_attempts` records of it (another sweep
        did it), or when another owner's claim holds it and alive(that claim) is true; otherwise the
        claim is taken (over a dead owner's, or renewed) and True."""

        def body(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT attempts FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if (0 if row is None else row[0]) != seen_attempts:
                return False
            held = conn.execute(
                f"SELECT {', '.join(CLAIM_KEYS)}, claimed_at FROM claims WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if held is not None:
                holder = dict(zip((*CLAIM_KEYS, "claimed_at"), held))
                if holder["token"] != owner["token"] and alive(holder):
                    return False
            conn.execute(
                f"INSERT OR REPLACE INTO claims (run_id, {', '.join(CLAIM_KEYS)}, claimed_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, *(owner[k] for k in CLAIM_KEYS), time.time()),
            )
            return True

        return self._transaction(body)

    def release_claims(self, token: str) -> int:
        """Drop every claim of `token` (a sweep ending, however it ends); how many there were."""
        return self._transaction(
            lambda c: c.execute("DELETE FROM claims WHERE token = ?", (token,)).rowcount
        )

    def claims(self) -> list[dict[str, Any]]:
        """The claims held now (empty when no sweep ever wrote this file)."""
        keys = ("run_id", *CLAIM_KEYS, "claimed_at")
        found = (
            self._conn.execute(f"SELECT {', '.join(keys)} FROM claims")
            if "claims" in self._tables()
            else []
        )
        return [dict(zip(keys, r)) for r in found]
