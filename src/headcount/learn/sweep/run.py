"""Running a sweep: the runs the database does not hold as done go to a scheduler; the parent records each
one as it finishes.

Runs whose id is stored as 'done' are skipped; failed runs are retried. Only the parent process writes the
database: each finished run is recorded in its own transaction as soon as the parent receives it. A runner
that raises is recorded 'failed' with a one-line error and the sweep goes on. Killing a sweep — SIGKILL of
its process group, or of the parent alone (local workers notice within a second that their parent is gone
and exit) — loses only the runs in flight; re-running it completes the rest, each run stored exactly once.
The runner is imported in the parent first, so a runner that cannot be imported is an error before
anything runs or is written. Nothing but the database (and SQLite's -wal/-shm files beside it) is written.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headcount.core.jsonable import JsonResult
from headcount.core.progress import progress_bar
from headcount.learn.store import ResultsStore
from headcount.learn.sweep.schedulers import Scheduler, make_scheduler
from headcount.learn.sweep.spec import RunSpec, SweepSpec, load_spec, spec_from_options
from headcount.learn.sweep.worker import RunOutcome, resolve_runner

SpecSource = SweepSpec | Mapping[str, Any] | str | os.PathLike


@dataclass(frozen=True)
class SweepCounts(JsonResult):
    """What one run_sweep call did. runs_failed counts the runs that failed in this call (stored 'failed'
    and retried by the next call); workers is the worker count used; db the database path as given."""

    runs_total: int
    runs_done_before: int
    runs_done_now: int
    runs_failed: int
    sweep: str
    experiment: str
    backend: str
    workers: int
    db: str


@dataclass(frozen=True)
class SweepPlan(JsonResult):
    """What run_sweep would do: runs_failed are stored as failed (to be retried); runs_pending = total −
    done."""

    runs_total: int
    runs_done: int
    runs_failed: int
    runs_pending: int
    sweep: str
    experiment: str


def _record(store: ResultsStore, spec: SweepSpec, run: RunSpec, outcome: RunOutcome) -> None:
    store.record(
        run_id=run.run_id,
        config=run.config,
        status=outcome.status,
        sweep=spec.name,
        experiment=spec.experiment,
        metrics=outcome.metrics,
        error=outcome.error,
        wall_seconds=outcome.wall_seconds,
        versions=outcome.versions,
        started_at=outcome.started_at,
        finished_at=outcome.finished_at,
        runner=spec.runner,
    )


def _run_pending(
    store: ResultsStore,
    spec: SweepSpec,
    scheduler: Scheduler,
    pending: Sequence[RunSpec],
    done_before: int,
    progress: bool,
) -> Counter[str]:
    """Run `pending`, recording each run as it finishes; the count of each status."""
    counts: Counter[str] = Counter()
    total = done_before + len(pending)
    with (
        progress_bar(progress, f"sweep {spec.name}", total, completed=done_before) as bar,
        closing(scheduler.run(pending)) as finished,
    ):
        for run, outcome in finished:
            _record(store, spec, run, outcome)
            counts[outcome.status] += 1
            failed = f" ({counts['failed']} failed)" if counts["failed"] else ""
            bar.update(advance=1, description=f"sweep {spec.name}{failed}")
    return counts


def run_sweep(
    spec: SpecSource,
    db_path: str | os.PathLike,
    workers: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: bool = False,
) -> SweepCounts:
    """Run every run of `spec` not yet done in the results DB `db_path` (workers None: one per CPU).

    Raises an InputError before running anything when the spec (SpecError), the runner (SweepError), the
    backend (unknown, or BackendUnavailableError) or the worker count is unusable."""
    spec = load_spec(spec)
    scheduler = make_scheduler(backend, spec.runner, workers, address)
    runs = spec.runs()
    resolve_runner(spec.runner)  # fail fast, in the parent, before the DB is touched
    with ResultsStore(db_path) as store:
        done_before = store.finished_ids(r.run_id for r in runs)
        pending = [r for r in runs if r.run_id not in done_before]
        counts = (
            _run_pending(store, spec, scheduler, pending, len(done_before), progress)
            if pending
            else Counter()
        )
    return SweepCounts(
        runs_total=len(runs),
        runs_done_before=len(done_before),
        runs_done_now=counts["done"],
        runs_failed=counts["failed"],
        sweep=spec.name,
        experiment=spec.experiment,
        backend=backend,
        workers=scheduler.workers,
        db=str(db_path),
    )


def run_sweep_from_options(
    path: str | os.PathLike | None,
    db_path: str | os.PathLike,
    *,
    name: str | None = None,
    task: str | None = None,
    fixed: Sequence[str] = (),
    grid: Sequence[str] = (),
    seeds: str | None = None,
    workers: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: bool = False,
) -> SweepCounts:
    """`headcount sweep run`: the sweep of a TOML file or of the flags (spec_from_options), run_sweep'd."""
    spec = spec_from_options(path, name=name, task=task, fixed=fixed, grid=grid, seeds=seeds)
    return run_sweep(spec, db_path, workers=workers, backend=backend, address=address, progress=progress)


def sweep_plan(spec: SpecSource, db_path: str | os.PathLike) -> SweepPlan:
    """What run_sweep would do, without running or creating anything."""
    spec = load_spec(spec)
    runs = spec.runs()
    statuses: dict[str, str] = {}
    if Path(db_path).is_file() and Path(db_path).stat().st_size > 0:
        with ResultsStore(db_path) as store:
            statuses = store.statuses(r.run_id for r in runs)
    done = sum(s == "done" for s in statuses.values())
    return SweepPlan(
        runs_total=len(runs),
        runs_done=done,
        runs_failed=sum(s == "failed" for s in statuses.values()),
        runs_pending=len(runs) - done,
        sweep=spec.name,
        experiment=spec.experiment,
    )
