"""The results database of learning sweeps: one SQLite file, one row per finished run.

Tables
    meta(key TEXT PRIMARY KEY, value TEXT)   app = "headcount-results", schema_version = "1"
    runs  one row per run (never two for one run_id):
        run_id        TEXT PRIMARY KEY  run_id_for(config): sha256 of the canonical JSON of the config
                                        (seed included), first 16 hex digits
        sweep         TEXT              name of the sweep that ran it (the first one, if several share it)
        experiment    TEXT              label used by tables and plots
        task          TEXT              config["task"]
        config        TEXT              the run's config as JSON (seed included)
        seed          INTEGER           config["seed"]
        status        TEXT              'done' | 'failed'
        metrics       TEXT              JSON object returned by the runner (NULL when failed)
        error         TEXT              one line: exception type, message, innermost location (failed runs)
        wall_seconds  REAL              wall time of the runner call, measured around it
        versions      TEXT              JSON: python, numpy, torch, headcount, platform, host of the worker
        started_at    TEXT              ISO 8601 UTC
        finished_at   TEXT              ISO 8601 UTC
        runner        TEXT              "module:function" that produced the row
        attempts      INTEGER           how many times the run was recorded (failed tries + the last one)

Writes. `record` writes one row in one transaction (BEGIN IMMEDIATE … COMMIT). A run stored as 'done' is
never written again: a second record for it is ignored, so a run is stored exactly once however many
processes race. A run stored as 'failed' is *not* in `finished_ids()`, so re-running the sweep retries
it, and the retry's record replaces the failed row (attempts + 1).

Concurrency. The file is in WAL mode with a 60 s busy timeout, so readers (tables, plots, a test
polling progress) never block the writer and several writers (two sweeps on one file) wait for each
other instead of failing. In `headcount.learn.sweep` only the parent process writes; workers return
their results to it. WAL needs a local file system (not NFS).

Opening a file that is not a headcount results database raises `ResultsDBError` (an InputError: the
user gave the wrong file) and leaves the file untouched; a missing or empty file is created and initialised.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from headcount.core.errors import InputError

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

_COLUMNS = (
    "run_id",
    "sweep",
    "experiment",
    "task",
    "config",
    "seed",
    "status",
    "metrics",
    "error",
    "wall_seconds",
    "versions",
    "started_at",
    "finished_at",
    "runner",
    "attempts",
)


class ResultsDBError(InputError):
    """A file that cannot be used as a headcount results database (the message says why)."""


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal configs give equal text (NaN and ±inf refused)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def run_id_for(config: dict[str, Any]) -> str:
    """Stable id of a run: sha256 of the canonical JSON of its config (seed included), 16 hex digits.

    Key order does not matter; 1 and 1.0 are different values (TOML keeps them apart too)."""
    return hashlib.sha256(canonical_json(config).encode("utf-8")).hexdigest()[:16]


def _encode(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False)


def _decode(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class ResultsStore:
    """An open results database. Use as a context manager or call close()."""

    def __init__(self, path: str | os.PathLike, *, timeout: float = 60.0):
        self.path = Path(path)
        if self.path.is_dir():
            raise ResultsDBError(f"results database {str(self.path)!r} is a directory, not a file")
        existing = self.path.is_file() and self.path.stat().st_size > 0
        if existing:
            with open(self.path, "rb") as f:
                if f.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:
                    raise ResultsDBError(
                        f"{str(self.path)!r} is not a headcount results database "
                        "(not an SQLite file); give a new file name or an existing results DB"
                    )
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None)
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            self._init_or_check()
            self._conn.execute("PRAGMA journal_mode = WAL")
            self._conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: durable at each checkpoint,
            # consistent always; a committed run survives the process being killed (not a power cut).
        except sqlite3.DatabaseError as err:
            self._conn.close()
            raise ResultsDBError(
                f"{str(self.path)!r} is not a usable headcount results database: {err}"
            ) from None
        except BaseException:
            self._conn.close()
            raise

    # -- opening ---------------------------------------------------------------------------------------

    def _tables(self) -> set[str]:
        return {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}

    def _init_or_check(self) -> None:
        if not self._tables():
            self._initialise()
        self._check_schema()

    def _initialise(self) -> None:
        """Create the tables and the meta rows, in one transaction."""
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            if not self._tables():  # nobody initialised it while we waited for the lock
                for statement in _SCHEMA.strip().split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                self._conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("app", APP), ("schema_version", str(SCHEMA_VERSION))],
                )
            self._conn.execute("COMMIT")
        except BaseException:
            if self._conn.in_transaction:
                self._conn.execute("ROLLBACK")
            raise

    def _check_schema(self) -> None:
        """ResultsDBError unless the file is a headcount results database this version reads."""
        name = repr(str(self.path))
        if "meta" not in self._tables():
            raise ResultsDBError(
                f"{name} is an SQLite database but not a headcount results database (no 'meta' table)"
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

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reading ---------------------------------------------------------------------------------------

    def finished_ids(self, run_ids: Iterable[str] | None = None) -> set[str]:
        """Ids of runs stored as 'done' (all of them, or those among `run_ids`). Failed runs are not
        finished: a sweep re-run retries them."""
        done = {r[0] for r in self._conn.execute("SELECT run_id FROM runs WHERE status = 'done'")}
        return done if run_ids is None else done & set(run_ids)

    def statuses(self, run_ids: Iterable[str] | None = None) -> dict[str, str]:
        """run_id → 'done' | 'failed' for the stored runs (all of them, or those among `run_ids`)."""
        found = dict(self._conn.execute("SELECT run_id, status FROM runs"))
        return found if run_ids is None else {r: found[r] for r in set(run_ids) if r in found}

    def rows(
        self, experiment: str | None = None, sweep: str | None = None, status: str | None = None
    ) -> list[dict[str, Any]]:
        """Stored runs as dicts (config, metrics, versions decoded from JSON), in the order they finished.

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
                row[key] = _decode(row[key])
            out.append(row)
        return out

    def experiments(self) -> list[str]:
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT DISTINCT experiment FROM runs WHERE experiment IS NOT NULL ORDER BY experiment"
            )
        ]

    def count(self, status: str | None = None) -> int:
        if status is None:
            return self._conn.execute("SELECT count(*) FROM runs").fetchone()[0]
        return self._conn.execute("SELECT count(*) FROM runs WHERE status = ?", (status,)).fetchone()[0]

    # -- writing ---------------------------------------------------------------------------------------

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
    ) -> bool:
        """Store one finished run in one transaction. Returns False (and writes nothing) when the run is
        already stored as 'done'; a stored 'failed' row is replaced (attempts + 1)."""
        if status not in STATUSES:
            raise ValueError(f"status {status!r} is not one of {STATUSES}")
        if status == "done" and metrics is None:
            raise ValueError("a 'done' run needs its metrics (a dict)")
        if wall_seconds is not None and not math.isfinite(wall_seconds):
            wall_seconds = None
        seed = config.get("seed")
        return self._write(
            {
                "run_id": run_id,
                "sweep": sweep,
                "experiment": experiment,
                "task": config.get("task"),
                "config": json.dumps(config, ensure_ascii=False, allow_nan=False),
                "seed": seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
                "status": status,
                "metrics": _encode(metrics),
                "error": error,
                "wall_seconds": wall_seconds,
                "versions": _encode(versions),
                "started_at": started_at,
                "finished_at": finished_at,
                "runner": runner,
            }
        )

    def _write(self, values: dict[str, Any]) -> bool:
        """Insert or replace the row `values` (attempts counted) unless its run is stored as 'done'."""
        conn = self._conn
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "SELECT status, attempts FROM runs WHERE run_id = ?", (values["run_id"],)
            ).fetchone()
            if row is not None and row[0] == "done":
                conn.execute("ROLLBACK")
                return False
            values["attempts"] = 1 if row is None else row[1] + 1
            names = list(values)
            conn.execute(
                f"INSERT OR REPLACE INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                [values[k] for k in names],
            )
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        return True
