"""Resumable certificates (issue 34): certify_model's streaming pass writes its whole state after
every finished chunk to an SQLite file, and a run given the same file resumes after the last chunk
stored.

The state is everything the pass carries between chunks: the Tally (counts, the first
counterexample, every rejection), the candidate p, the proof at p so far (its exact-evaluation
budget, open and exact positions, its rejection), and each IEEE dtype's verdict. The chunks before
the stored one are streamed again but not evaluated: a sampled stream draws its inputs in order,
so they must still be drawn. A resumed run therefore ends with the certificate an uninterrupted
run gives, apart from `seconds`.

The file names what it certifies: the `identity` (the model's digest and every argument that
changes the certificate) is stored when the file is created. A file written for another identity,
or one that is not a checkpoint, is refused with one line (InputError) and left untouched. Each
chunk is one transaction (SQLite's journal), so a run killed at any point, SIGKILL included, leaves
the file at its last finished chunk.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

from headcount.common.errors import InputError
from headcount.common.files import show_path
from headcount.common.sqlite_files import existing_sqlite
from headcount.core.certify.certificate import Counterexample, Rejection, Tally

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS chunks (idx INTEGER PRIMARY KEY, state TEXT NOT NULL, "
    "sha256 TEXT NOT NULL)",
)
_KIND = "headcount certificate checkpoint"


class Checkpoint:
    """One checkpoint file, opened for the certificate `identity` (a JSON-able dict)."""

    def __init__(self, path: str | os.PathLike, identity: dict[str, Any]):
        self.path = Path(path)
        self.identity = json.dumps(identity, sort_keys=True)
        shown = show_path(self.path)
        existing_sqlite(self.path, "checkpoint", "a checkpoint file")  # refuses links, FIFOs, …
        try:
            self._conn = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            self._check_or_create(shown)
        except sqlite3.Error as err:
            raise InputError(f"checkpoint {shown} cannot be used: {err}") from None

    def _check_or_create(self, shown: str) -> None:
        tables = {r[0] for r in self._conn.execute("SELECT name FROM sqlite_master")}
        if tables and not {"meta", "chunks"} <= tables:
            raise InputError(f"checkpoint {shown} is an SQLite file of something else")
        if not tables:
            self._conn.execute("BEGIN IMMEDIATE")
            for statement in _SCHEMA:
                self._conn.execute(statement)
            self._conn.executemany(
                "INSERT INTO meta VALUES (?, ?)", [("kind", _KIND), ("identity", self.identity)]
            )
            self._conn.execute("COMMIT")
            return
        meta = dict(self._conn.execute("SELECT key, value FROM meta"))
        if meta.get("kind") != _KIND:
            raise InputError(f"checkpoint {shown} is an SQLite file of something else")
        if meta.get("identity") != self.identity:
            raise InputError(
                f"checkpoint {shown} was written for another model or other arguments "
                f"({_first_difference(meta.get('identity'), self.identity)}); use a new file"
            )

    def last(self) -> tuple[int, dict[str, Any]] | None:
        """(index, state) of the last chunk stored, or None."""
        last = "SELECT idx, state, sha256 FROM chunks ORDER BY idx DESC LIMIT 1"
        row = self._conn.execute(last).fetchone()
        if row is None:
            return None
        damaged = InputError(f"checkpoint {show_path(self.path)} is damaged; use a new file")
        if not isinstance(row[1], str) or row[2] != self._sha(row[0], row[1]):
            raise damaged
        try:
            state = json.loads(row[1])
        except ValueError:
            raise damaged from None
        if not isinstance(state, dict):
            raise damaged
        return int(row[0]), state

    def _sha(self, index: int, state: str) -> str:
        """Each row's checksum, over the identity, the index and the state: a changed or truncated
        row is refused (corruption, not forgery: the file is trusted as headcount wrote it)."""
        return hashlib.sha256(f"{self.identity}\n{index}\n{state}".encode()).hexdigest()

    def save(self, index: int, state: dict[str, Any]) -> None:
        """Store the state after chunk `index` in place of the one before it (one
        transaction)."""
        self._conn.execute("BEGIN IMMEDIATE")
        text = json.dumps(state)
        self._conn.execute(
            "INSERT OR REPLACE INTO chunks VALUES (?, ?, ?)", (index, text, self._sha(index, text))
        )
        # the state after chunk `index` holds everything before it: only the last one is kept, so
        # the file stays one state long (rejections of long inputs make states large)
        self._conn.execute("DELETE FROM chunks WHERE idx < ?", (index,))
        self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()


def _first_difference(stored: str | None, asked: str) -> str:
    try:
        old, new = json.loads(stored or "{}"), json.loads(asked)
    except ValueError:
        return "unreadable identity"
    for key in sorted(set(old) | set(new)):
        if old.get(key) != new.get(key):
            return f"{key}: stored {str(old.get(key))[:40]}, asked {str(new.get(key))[:40]}"
    return "same identity"


TALLY_FIELDS = (
    "inputs_checked",
    "positions_checked",
    "errors",
    "errors_bottom",
    "errors_token",
    "bottom_positions",
    "precision_bits",
    "errors_at_precision_bits",
    "uncertified_positions",
    "exact_positions",
    "proven_at_precision_bits",
)


def tally_state(tally: Tally) -> dict[str, Any]:
    """The Tally as JSON (its seconds are the run's, not the certificate's)."""
    first = tally.first_counterexample
    return {
        **{name: getattr(tally, name) for name in TALLY_FIELDS},
        "families": dict(tally.families),
        "first_counterexample": None if first is None else first.to_json(),
        "rejected": [r.to_json() for r in tally.rejected],
        "dtypes_exact": list(tally.dtypes_exact),
    }


def restore_tally(tally: Tally, state: dict[str, Any]) -> None:
    """Put a tally_state back into `tally` (in place)."""
    for name in TALLY_FIELDS:
        setattr(tally, name, state[name])
    tally.families = dict(state["families"])
    first = state["first_counterexample"]
    tally.first_counterexample = None if first is None else counterexample_of(first)
    tally.rejected = [rejection_of(r) for r in state["rejected"]]
    tally.dtypes_exact = tuple(state["dtypes_exact"])


def counterexample_of(d: dict[str, Any]) -> Counterexample:
    return Counterexample(
        d["family"], tuple(d["input"]), d["position"], d["expected"], d["model_output"]
    )


def rejection_of(d: dict[str, Any]) -> Rejection:
    return Rejection(d["p"], d["family"], tuple(d["input"]), d["position"], d["expected"], d["got"])


def pass_state(
    tally: Tally, candidate: int, proof: tuple, exact_in: dict[str, bool | None], seconds
) -> dict[str, Any]:
    """The streaming pass's state as JSON: the tally, the candidate p, the proof at it (p, the
    exact evaluator's budget left, open and exact positions, its rejection), each dtype's verdict
    and the seconds so far."""
    p, budget, uncertified, exact, rejected = proof
    return {
        "tally": tally_state(tally),
        "candidate": candidate,
        "proof": {
            "p": p,
            "budget": budget,
            "uncertified": uncertified,
            "exact": exact,
            "rejection": None if rejected is None else rejected.to_json(),
        },
        "exact_in": dict(exact_in),
        "seconds": dict(seconds),
    }


def restore_pass(
    state: dict[str, Any], tally: Tally, exact_in: dict[str, bool | None]
) -> tuple[int, tuple, dict[str, bool | None]]:
    """pass_state read back: the tally restored in place; (candidate, proof, exact_in).
    InputError when the state is not one pass_state wrote."""
    try:
        return _restore_pass(state, tally, exact_in)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InputError("the checkpoint's state is damaged; use a new file") from None


def _restore_pass(state, tally, exact_in):
    restore_tally(tally, state["tally"])
    proof = state["proof"]
    rejected = proof["rejection"]
    if set(state["exact_in"]) != set(exact_in):
        raise InputError("the checkpoint was written with other dtype passes")
    return (
        int(state["candidate"]),
        (
            int(proof["p"]),
            proof["budget"],
            int(proof["uncertified"]),
            int(proof["exact"]),
            None if rejected is None else rejection_of(rejected),
        ),
        dict(state["exact_in"]),
    )
