"""Sweeps: a grid of training runs, executed in parallel, resumable, results in a SQLite database.

    spec.py        TOML file / dict / command-line flags → a validated SweepSpec; its runs with stable ids
    run.py         run_sweep: the runs not yet done go to a scheduler; the parent records each as it finishes
    schedulers.py  where runs execute, behind one interface (Scheduler.run): local spawned workers, or Ray
    worker.py      what runs in a worker: import the runner ("module:function"), run one config, an outcome
    table.py       one experiment's runs aggregated over seeds: Markdown, CSV or JSON
    errors.py      SweepError, SpecError, BackendUnavailableError (all InputErrors: the user can fix them)

The database itself is `headcount.learn.store`. Everything a caller needs is importable from here.
"""

from headcount.learn.constants import TASKS
from headcount.learn.store import run_id_for
from headcount.learn.sweep.errors import RAY_MISSING, BackendUnavailableError, SpecError, SweepError
from headcount.learn.sweep.run import SweepCounts, SweepPlan, run_sweep, run_sweep_from_options, sweep_plan
from headcount.learn.sweep.schedulers import (
    BACKENDS,
    LocalScheduler,
    RayScheduler,
    Scheduler,
    make_scheduler,
)
from headcount.learn.sweep.spec import (
    DEFAULT_RUNNER,
    SWEEP_KEYS,
    RunSpec,
    SweepSpec,
    load_spec,
    spec_from_dict,
    spec_from_flags,
    spec_from_options,
    spec_from_toml,
)
from headcount.learn.sweep.table import TABLE_FORMATS, sweep_table, table_rows
from headcount.learn.sweep.worker import RunOutcome, environment_versions, resolve_runner

__all__ = [
    "BACKENDS",
    "DEFAULT_RUNNER",
    "RAY_MISSING",
    "SWEEP_KEYS",
    "TABLE_FORMATS",
    "TASKS",
    "BackendUnavailableError",
    "LocalScheduler",
    "RayScheduler",
    "RunOutcome",
    "RunSpec",
    "Scheduler",
    "SpecError",
    "SweepCounts",
    "SweepError",
    "SweepPlan",
    "SweepSpec",
    "environment_versions",
    "load_spec",
    "make_scheduler",
    "resolve_runner",
    "run_id_for",
    "run_sweep",
    "run_sweep_from_options",
    "spec_from_dict",
    "spec_from_flags",
    "spec_from_options",
    "spec_from_toml",
    "sweep_plan",
    "sweep_table",
    "table_rows",
]
