"""Running a sweep: the runs the database does not hold as done go to a scheduler; the parent
records each one as it finishes.

Runs whose id is stored as 'done' are skipped; failed runs are retried. Only the parent process
writes the database: each finished run is recorded in its own transaction as soon as the parent
receives it. A runner that raises is recorded 'failed' with a one-line error and the sweep goes on.
Killing a sweep — SIGKILL of its process group, or of the parent alone (local workers notice within
a second that their parent is gone and exit) — loses only the runs in flight; re-running it
completes the rest, each run stored exactly once. A config the runner refuses (it raises an
InputError: an unknown key, a size beyond the trainer's bounds) is recorded 'failed' too, and once
the other runs are done run_sweep raises SweepError saying so: the sweep's input is at fault, so the
command exits 2 instead of reporting a normal summary.

Progress (when on): runs done of the total, and the training steps of the runs in flight as the
bar's note (schedulers.Scheduler.run's `steps`; local workers only).

Before anything runs: the spec is checked (its runner must be registered: runners.py), the backend
made, and the database opened for writing — a file that cannot be used or written is an InputError
before any run trains. Each run is leased in the database just before a worker gets it (leases.py):
a run that another live sweep holds, or has recorded since this one started, is skipped, so
concurrent sweeps on one database train each run once, and `runs_done_now` counts only the runs this
call trained and stored. Nothing but the database (and SQLite's -wal/-shm files beside it) is
written — and, when the caller names a `model_dir` (learn.experiments does, for experiments that
keep their models), each run's exported model there as <run id>.safetensors
(runners.keeping_models).
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headcount.common.errors import InputError
from headcount.common.jsonable import JsonResult
from headcount.common.progress import Progress, progress_bar
from headcount.common.validate import writable_folder
from headcount.learn.store import ResultsStore
from headcount.learn.sweep.errors import SweepError
from headcount.learn.sweep.leases import holder_alive, this_process
from headcount.learn.sweep.runners import Runner, check_runner_name, keeping_models, resolve_runner
from headcount.learn.sweep.schedulers import Scheduler, make_scheduler
from headcount.learn.sweep.spec import RunSpec, SweepSpec, load_spec
from headcount.learn.sweep.worker import RunOutcome

SpecSource = SweepSpec | Mapping[str, Any] | str | os.PathLike


@dataclass(frozen=True)
class SweepCounts(JsonResult):
    """What one run_sweep call did. runs_done_now counts the runs this call trained and stored (runs
    that a concurrent sweep on the same database trains are in neither count); runs_failed the runs
    that failed in this call (stored 'failed' and retried by the next call); workers is the worker
    count used; db the database path as given."""

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
    """What run_sweep would do: runs_failed are stored as failed (to be retried); runs_pending =
    total − done."""

    runs_total: int
    runs_done: int
    runs_failed: int
    runs_pending: int
    sweep: str
    experiment: str


def _record(
    store: ResultsStore, spec: SweepSpec, run: RunSpec, outcome: RunOutcome, token: str
) -> bool:
    return store.record(
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
        lease_token=token,
    )


def _run_pending(
    store: ResultsStore,
    spec: SweepSpec,
    runner: Runner,
    scheduler: Scheduler,
    pending: Sequence[RunSpec],
    done_before: int,
    progress: Progress,
) -> tuple[Counter[str], str | None]:
    """Run `pending`, each leased first, recording each as it finishes; the count of each status
    stored by this call (and of "elsewhere": runs skipped because another sweep holds or recorded
    them; of "refused": failed runs whose config the runner refused), and the first refusal's line
    (with its parameters marked: RunOutcome.refusal)."""
    counts: Counter[str] = Counter()
    refusals: list[str] = []
    total = done_before + len(pending)
    owner = this_process()
    seen = store.attempts(r.run_id for r in pending)

    def describe() -> str:
        notes = [f"{counts['failed']} failed"] if counts["failed"] else []
        if counts["elsewhere"]:
            notes.append(f"{counts['elsewhere']} by another sweep")
        return f"sweep {spec.name}" + (f" ({', '.join(notes)})" if notes else "")

    training: dict[str, str] = {}  # run id → its latest training-step text, runs in flight
    shown = progress_bar(
        progress, f"sweep {spec.name}", total, completed=done_before, unit="run", note=""
    )
    with shown as bar:

        def steps(run: RunSpec, text: str) -> None:
            training[run.run_id] = text
            bar.update(note=_in_flight(training))

        def admit(run: RunSpec) -> bool:
            if store.lease(run.run_id, owner, seen[run.run_id], holder_alive):
                return True
            counts["elsewhere"] += 1
            bar.update(advance=1, description=describe())
            return False

        try:
            forwarded = steps if progress else None
            with closing(scheduler.run(runner, pending, admit, forwarded)) as finished:
                for run, outcome in finished:
                    training.pop(run.run_id, None)
                    if _record(store, spec, run, outcome, owner["token"]):
                        counts[outcome.status] += 1
                        if outcome.refused:
                            counts["refused"] += 1
                            refusals.append(outcome.refusal or outcome.error or "")
                    else:
                        counts["elsewhere"] += 1
                    bar.update(advance=1, description=describe(), note=_in_flight(training))
        finally:
            store.release_leases(owner["token"])
    return counts, (refusals[0] if refusals else None)


def _in_flight(training: Mapping[str, str], shown: int = 2) -> str:
    """The runs in flight's training steps, for the bar's note: "step 400/2000" for one run,
    "step 400/2000, step 90/2000 (+3 more)" for several."""
    texts = list(training.values())
    more = f" (+{len(texts) - shown} more)" if len(texts) > shown else ""
    return ", ".join(texts[:shown]) + more


def run_sweep(
    spec: SpecSource,
    db_path: str | os.PathLike,
    workers: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: Progress = False,
    model_dir: str | os.PathLike | None = None,
) -> SweepCounts:
    """Run every run of `spec` not yet done in the results DB `db_path` (workers None: one per CPU);
    with `model_dir` (runners.KEEPING_RUNNERS only), each run trained now keeps its model there
    (module docstring).

    Raises an InputError before running anything when the spec (SpecError), the runner (SweepError:
    not a registered runner), the backend (unknown, an `address` without "ray", or
    BackendUnavailableError), the worker count or the database (ResultsDBError: not a results
    database, or not writable) is unusable; SweepError after the other runs when the runner refused
    some run's config. Runs leased by a concurrent sweep on the same database are left to it
    (module docstring)."""
    spec = load_spec(spec)
    check_runner_name(
        spec.runner
    )  # a SweepSpec made in Python may name anything: refuse before the DB
    scheduler = make_scheduler(backend, workers, address)
    runs = spec.runs()
    with ResultsStore(db_path, for_writing=True) as store:
        runner = resolve_runner(spec.runner)
        if model_dir is not None:
            runner = keeping_models(runner, _model_folder(model_dir))
        done_before = store.finished_ids(r.run_id for r in runs)
        pending = [r for r in runs if r.run_id not in done_before]
        counts, refusal = (
            _run_pending(store, spec, runner, scheduler, pending, len(done_before), progress)
            if pending
            else (Counter(), None)
        )
    if refusal is not None:
        name = spec.name if len(spec.name) <= 60 else spec.name[:59] + "…"
        raise SweepError(
            f"sweep {name!r}: the runner refused the config of {counts['refused']} of its "
            f"{len(runs)} "
            f"runs (stored as failed; {counts['done']} done now): {refusal}"
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


def _model_folder(path: str | os.PathLike) -> Path:
    """`path` as a folder that exists and can be written (made if missing); SweepError otherwise —
    also for a symbolic link: the folder is named by the command beside the database, and a planted
    link would send the models elsewhere."""
    try:
        return writable_folder(path, "the model folder", follow=False)
    except InputError as err:
        raise SweepError(err.raw) from None


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
