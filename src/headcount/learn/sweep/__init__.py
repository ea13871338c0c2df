"""Sweeps: a grid of training runs, executed in parallel, resumable, results in a SQLite database.

    spec.py         TOML file / dict → a validated, bounded SweepSpec; its runs with stable ids
                    (the command line's flags are parsed into that dict by
                    headcount.cli.sweep_options)
    spec_file.py    a sweep file read, bounded, into its TOML tables
    runners.py      the registry of runners a spec may name (built in, or register_runner from
                    Python)
    run.py          run_sweep: the runs not yet done go to a scheduler; the parent records each as
                    it finishes
    leases.py       who holds the lease of a run (concurrent sweeps on one database) and whether
                    it is alive
    schedulers.py   where runs execute, behind one interface (Scheduler.run): local spawned
                    workers, or Ray
    worker.py       what runs in a worker: the runner on one config, an outcome
    table.py        one experiment's runs aggregated over seeds: Markdown, CSV or JSON
    errors.py       SweepError, SpecError, BackendUnavailableError (all InputErrors: the user can
                    fix them); reaching a Ray cluster is headcount.common.ray_connect

The database itself is `headcount.learn.store`. Everything a caller needs is importable from here.
"""

from headcount.learn.constants import TASKS
from headcount.learn.store import run_id_for
from headcount.learn.sweep.errors import RAY_MISSING, BackendUnavailableError, SpecError, SweepError
from headcount.learn.sweep.leases import LEASE_STALE_SECONDS
from headcount.learn.sweep.run import SweepCounts, SweepPlan, run_sweep, sweep_plan
from headcount.learn.sweep.runners import (
    DEFAULT_RUNNER,
    KEEPING_RUNNERS,
    KHOP_RUNNER,
    Runner,
    keeping_models,
    kept_model_path,
    register_runner,
    resolve_runner,
    runner_names,
    unregister_runner,
)
from headcount.learn.sweep.schedulers import (
    BACKENDS,
    MAX_WORKERS,
    LocalScheduler,
    RayScheduler,
    Scheduler,
    make_scheduler,
)
from headcount.learn.sweep.spec import (
    MAX_RUNS,
    MAX_SEED,
    MAX_VALUE_DEPTH,
    SWEEP_KEYS,
    RunSpec,
    SweepSpec,
    load_spec,
    spec_from_dict,
    spec_from_toml,
)
from headcount.learn.sweep.spec_file import MAX_SPEC_BYTES
from headcount.learn.sweep.table import TABLE_FORMATS, sweep_table, table_rows
from headcount.learn.sweep.worker import RunOutcome, environment_versions

__all__ = [
    "BACKENDS",
    "DEFAULT_RUNNER",
    "KEEPING_RUNNERS",
    "KHOP_RUNNER",
    "LEASE_STALE_SECONDS",
    "MAX_RUNS",
    "MAX_SEED",
    "MAX_SPEC_BYTES",
    "MAX_VALUE_DEPTH",
    "MAX_WORKERS",
    "RAY_MISSING",
    "SWEEP_KEYS",
    "TABLE_FORMATS",
    "TASKS",
    "BackendUnavailableError",
    "LocalScheduler",
    "RayScheduler",
    "RunOutcome",
    "RunSpec",
    "Runner",
    "Scheduler",
    "SpecError",
    "SweepCounts",
    "SweepError",
    "SweepPlan",
    "SweepSpec",
    "environment_versions",
    "kept_model_path",
    "keeping_models",
    "load_spec",
    "make_scheduler",
    "register_runner",
    "resolve_runner",
    "run_id_for",
    "run_sweep",
    "runner_names",
    "spec_from_dict",
    "spec_from_toml",
    "sweep_plan",
    "sweep_table",
    "table_rows",
    "unregister_runner",
]
