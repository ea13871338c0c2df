"""Exact minimal-model searches cached in the results store: a search's answer (its JSON, every
certificate in it) is stored once under the id of its arguments, and the same search asked again
is read back instead of re-run.

    boolean_minimal(function, n, D, H, grid, out=None, db=None) -> (record, cached)
    minmax_minimal(M, n, d_max, K_max, db=None) -> (record, cached)

The row's config names the search, its arguments and SEARCH_VERSION (raised whenever a search's
family or answer changes, so an old answer is never served for a new search); the experiment column
is "boolean-minimal" or "minmax-minimal". A stored row whose metrics are not a search record is
refused as damaged (ResultsDBError). A cached record is the stored one plus "cached": the database
and the run id. A boolean search asked to save its model (`out`) is re-run when it found one: the
stored record does not hold the model file.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from headcount.boolean.minimal import minimal_dimension_one
from headcount.boolean.task import function_and_label
from headcount.learn.store import ResultsStore, run_id_for
from headcount.learn.store_schema import ResultsDBError, shown
from headcount.learn.sweep import environment_versions
from headcount.minmax.theorem1.minimal import minimal_resources

SEARCH_VERSION = 1


def boolean_minimal(
    function: str,
    n: int,
    D: int,
    H: int,
    grid: tuple[Fraction, ...] | None = None,
    out: str | os.PathLike | None = None,
    db: str | os.PathLike | None = None,
) -> tuple[dict[str, Any], bool]:
    """`boolean minimal`'s record, read from `db` when this search is stored there (else run and
    stored). Without `db` the search just runs."""
    F, _ = function_and_label(function, n)
    config = {
        "search": "boolean-minimal",
        "version": SEARCH_VERSION,
        "F": list(F),
        "D": D,
        "H": H,
        "grid": None if grid is None else [str(c) for c in grid],
    }

    def compute() -> dict[str, Any]:
        return minimal_dimension_one(function, n, D, H, grid, out=out).to_json()

    reuse = None if out is None else (lambda record: record["verdict"] != "d = 1 found")
    return _cached(db, config, "verdict", compute, reuse)


def minmax_minimal(
    M: int, n: int, d_max: int, K_max: int, db: str | os.PathLike | None = None
) -> tuple[dict[str, Any], bool]:
    """`minmax minimal`'s record, read from `db` when stored there (else run and stored)."""
    config = {
        "search": "minmax-minimal",
        "version": SEARCH_VERSION,
        "M": M,
        "n": n,
        "d_max": d_max,
        "K_max": K_max,
    }
    return _cached(db, config, "cells", lambda: minimal_resources(M, n, d_max, K_max).to_json())


def _cached(
    db: str | os.PathLike | None,
    config: dict[str, Any],
    key: str,
    compute: Callable[[], dict[str, Any]],
    reuse: Callable[[dict[str, Any]], bool] | None = None,
) -> tuple[dict[str, Any], bool]:
    if db is None:
        return compute(), False
    run_id = run_id_for(config)
    with ResultsStore(db) as store:
        stored = store.rows(run_id=run_id, status="done")
    if stored:
        record = stored[0]["metrics"]
        if not isinstance(record, dict) or key not in record:
            raise ResultsDBError(
                f"{shown(Path(db))} is damaged: search {run_id} has no search record"
            )
        if reuse is None or reuse(record):
            return {**record, "cached": {"db": str(db), "run_id": run_id}}, True
    started = time.monotonic()
    record = compute()
    with ResultsStore(db, for_writing=True) as store:
        store.record(
            run_id=run_id,
            config=config,
            status="done",
            experiment=config["search"],
            metrics=record,
            wall_seconds=time.monotonic() - started,
            versions=environment_versions(),
        )
    return record, False
