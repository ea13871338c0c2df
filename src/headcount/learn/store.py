"""The results database of learning sweeps: one SQLite file, one row per finished run, and the
leases of the runs being trained. Its tables, and what opening checks, are
`headcount.learn.store_schema`'s.

Writes. `record` writes one row in one transaction (BEGIN IMMEDIATE … COMMIT). A run stored as
'done' is never written again: a second record for it is ignored, so a run is stored exactly once
however many processes race. A run stored as 'failed' is *not* in `finished_ids()`, so re-running
the sweep retries it, and the retry's record replaces the failed row (attempts + 1). A sweep leases
each run before training it (`lease`: one transaction; refused while another live sweep holds the
run, or once another sweep has recorded it) and the record of the run releases the lease in the same
transaction, so concurrent sweeps on one file train each run once; a lease whose process is gone
(SIGKILL) is taken over.

Concurrency. WAL mode, a 60 s busy timeout: readers (tables, plots, a test polling progress) never
block the writer, and writers (two sweeps on one file) wait for each other instead of failing. In
`headcount.learn.sweep` only the parent writes; workers return results to it. WAL needs a local
disk.

Opening raises `ResultsDBError` (an InputError, store_schema) and leaves the file untouched when it
is not a usable results database; a missing or empty file is created and initialised.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from headcount.learn.store_schema import (
    LEASE_KEYS,
    RUN_COLUMNS,
    ResultsDBError,
    open_results_db,
    shown,
    tables,
    transaction,
)

STATUSES = ("done", "failed")


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


class ResultsStore:
    """An open results database. Use as a context manager or call close(). `for_writing`: check at
    once that the file can be written (and prepare the lease table), as a sweep does before
    training."""

    def __init__(
        self, path: str | os.PathLike, *, timeout: float = 60.0, for_writing: bool = False
    ):
        self.path = Path(path)
        self._conn = open_results_db(self.path, timeout, for_writing)

    def _transaction(self, body: Callable[[sqlite3.Connection], Any]) -> Any:
        """body(conn) inside BEGIN IMMEDIATE … COMMIT (ROLLBACK when it raises); its result."""
        return transaction(self._conn, body)

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ResultsStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- reading -----------------------------------------------------------------------------------

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
        self,
        experiment: str | None = None,
        sweep: str | None = None,
        status: str | None = None,
        run_id: str | None = None,
    ) -> list[dict[str, Any]]:
        """Stored runs as dicts (config, metrics, versions decoded from JSON), in the order they
        finished.

        Filters combine; status None means both 'done' and 'failed'."""
        where, args = [], []
        filters = (("experiment", experiment), ("sweep", sweep), ("status", status))
        for column, value in (*filters, ("run_id", run_id)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = f"SELECT {', '.join(RUN_COLUMNS)} FROM runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY finished_at, rowid"
        out = []
        for values in self._conn.execute(sql, args):
            row = dict(zip(RUN_COLUMNS, values))
            for key in ("config", "metrics", "versions"):
                try:
                    row[key] = _decode(row[key])
                except (ValueError, TypeError, RecursionError) as err:  # written by something else
                    problem = " ".join(str(err).split())[:120] or type(err).__name__
                    raise ResultsDBError(
                        f"{shown(self.path)} is damaged: run {str(row['run_id'])[:40]!r} has "
                        f"unreadable {key} ({problem})"
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

    # -- writing -----------------------------------------------------------------------------------

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
        lease_token: str | None = None,
    ) -> bool:
        """Store one finished run in one transaction. Returns False (and writes nothing) when the
        run is already stored as 'done'; a stored 'failed' row is replaced (attempts + 1). The lease
        of `lease_token` on the run, if any, is released in the same transaction."""
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
            lease_token,
        )

    def _write(self, values: dict[str, Any], lease_token: str | None = None) -> bool:
        """Insert or replace the row `values` (attempts counted) unless its run is stored as 'done';
        the lease of `lease_token` on the run (if any) is released in the same transaction."""

        def body(conn: sqlite3.Connection) -> bool:
            if lease_token is not None:
                conn.execute(
                    "DELETE FROM claims WHERE run_id = ? AND token = ?",
                    (values["run_id"], lease_token),
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

    # -- leases: concurrent sweeps on one file -----------------------------------------------------
    # The table `claims` holds the leases (its column claimed_at is read as leased_at): the names
    # are the file format's, kept so that older databases keep opening and resuming.

    def attempts(self, run_ids: Iterable[str]) -> dict[str, int]:
        """run_id → how many times it was recorded (0: never), for `run_ids`."""
        found = dict(self._conn.execute("SELECT run_id, attempts FROM runs"))
        return {r: found.get(r, 0) for r in run_ids}

    def lease(
        self,
        run_id: str,
        owner: Mapping[str, Any],
        seen_attempts: int,
        alive: Callable[[dict[str, Any]], bool],
    ) -> bool:
        """Lease `run_id` to `owner` (LEASE_KEYS), in one transaction (needs for_writing). False
        when the run was recorded since the caller saw `seen_attempts` records of it (another sweep
        did it), or when another owner's lease holds it and alive(that lease) is true; otherwise the
        lease is taken (over a dead owner's, or renewed) and True."""

        def body(conn: sqlite3.Connection) -> bool:
            row = conn.execute("SELECT attempts FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if (0 if row is None else row[0]) != seen_attempts:
                return False
            held = conn.execute(
                f"SELECT {', '.join(LEASE_KEYS)}, claimed_at FROM claims WHERE run_id = ?",
                (run_id,),
            ).fetchone()
            if held is not None:
                holder = dict(zip((*LEASE_KEYS, "leased_at"), held))
                if holder["token"] != owner["token"] and alive(holder):
                    return False
            conn.execute(
                f"INSERT OR REPLACE INTO claims (run_id, {', '.join(LEASE_KEYS)}, claimed_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (run_id, *(owner[k] for k in LEASE_KEYS), time.time()),
            )
            return True

        return self._transaction(body)

    def release_leases(self, token: str) -> int:
        """Drop every lease of `token` (a sweep ending, however it ends); how many there were."""
        return self._transaction(
            lambda c: c.execute("DELETE FROM claims WHERE token = ?", (token,)).rowcount
        )

    def leases(self) -> list[dict[str, Any]]:
        """The leases held now: run_id, LEASE_KEYS, leased_at (empty when no sweep ever wrote this
        file)."""
        found = (
            self._conn.execute(f"SELECT run_id, {', '.join(LEASE_KEYS)}, claimed_at FROM claims")
            if "claims" in tables(self._conn)
            else []
        )
        return [dict(zip(("run_id", *LEASE_KEYS, "leased_at"), r)) for r in found]
