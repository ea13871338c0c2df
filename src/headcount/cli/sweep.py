"""`headcount sweep …`: run, table (each: options → one library call → print; run's sweep given as
flags is parsed by cli/sweep_options.py, which refuses --seeds naming no seed).

The library checks the spec, backend (--address only with ray), workers and database
(headcount.learn.sweep raises InputError; main() prints it and exits 2). Its bounds are constants of
headcount.learn.sweep (MAX_SPEC_BYTES, MAX_RUNS, MAX_SEED, MAX_WORKERS), quoted in the --help texts
below (tests/learn/test_sweep_hostile.py checks them)."""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import JsonOpt, ProgressOpt, emit, progress_on

app = typer.Typer(
    no_args_is_help=True, help="Grids of training runs: parallel, resumable, results in SQLite."
)


@app.command("run")
def sweep_run(
    spec: Path | None = typer.Argument(
        None,
        help="Sweep file (TOML, data only: \\[sweep] runner names a built-in runner; at most 1 "
        "MiB and "
        "10,000 runs); or build the sweep from the flags below.",
    ),
    db: Path = typer.Option(
        ...,
        "--db",
        help="Results database (SQLite; created if missing; checked writable before any run "
        "trains; "
        "sweeps sharing it split the runs).",
    ),
    workers: int | None = typer.Option(
        None, "--workers", help="Parallel workers, 1 … 1024 (default: CPUs)."
    ),
    backend: str = typer.Option("local", "--backend", help="local (worker processes) or ray."),
    address: str | None = typer.Option(
        None,
        "--address",
        help="Ray cluster to run on (needs --backend ray): host:port of its head (e.g. "
        "10.0.0.5:6379, "
        "[::1]:6379), auto (the cluster `ray start` started on this machine) or ray://host:port "
        "(needs "
        "pip install 'ray\\[client]'); refused in one line if nothing answers there within about "
        "15 s.",
    ),
    name: str | None = typer.Option(
        None, "--name", help="Without a file: the sweep's name (and experiment label)."
    ),
    task: str | None = typer.Option(
        None, "--task", help="Without a file: induction, khop, minmax or boolean."
    ),
    fixed: list[str] = typer.Option(
        [], "--fixed", help="Without a file: KEY=VALUE for every run (repeatable)."
    ),
    grid: list[str] = typer.Option(
        [], "--grid", help="Without a file: KEY=V1,V2,… a grid axis (repeatable)."
    ),
    seeds: str | None = typer.Option(
        None, "--seeds", help="Without a file: seeds 0 … 2⁶³−1, e.g. 0,1,2 (runs × seeds ≤ 10,000)."
    ),
    progress: bool | None = ProgressOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Run every run of the sweep not yet done in the database (re-running resumes)."""
    from headcount.cli.sweep_options import spec_from_options
    from headcount.learn.sweep import run_sweep

    sweep = spec_from_options(spec, name=name, task=task, fixed=fixed, grid=grid, seeds=seeds)
    counts = run_sweep(
        sweep, db, workers=workers, backend=backend, address=address, progress=progress_on(progress)
    )
    human = (
        f"{counts.runs_done_now} runs done now, {counts.runs_done_before} before, "
        f"{counts.runs_failed} failed, of {counts.runs_total}"
    )
    emit(counts.to_json(), as_json, human)


@app.command("table")
def sweep_table(
    db: Path = typer.Option(..., "--db"),
    experiment: str = typer.Option(..., "--experiment"),
    format: str = typer.Option("md", "--format", help="md, csv or json."),
    as_json: bool = JsonOpt,
) -> None:
    """The experiment's runs aggregated over seeds, from the database (--json: the json format)."""
    from headcount.learn.sweep import sweep_table as table_text

    print(table_text(db, experiment, format="json" if as_json else format).rstrip("\n"))
