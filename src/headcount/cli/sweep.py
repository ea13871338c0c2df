"""`headcount sweep …`: run, table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from headcount.cli.common import JsonOpt, ProgressOpt, emit, fail

app = typer.Typer(
    no_args_is_help=True, help="Grids of training runs: parallel, resumable, results in SQLite."
)


def _sweep_errors():
    from headcount.learn.store import ResultsDBError
    from headcount.learn.sweep import SweepError

    return (SweepError, ResultsDBError, ValueError)


def _flag_value(text: str) -> Any:
    """A --fixed / --grid value: int, float, true/false, else the string itself."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text.strip()


def _spec_from_flags(
    name: str | None, task: str | None, fixed: list[str], grid: list[str], seeds: str | None
) -> dict:
    if not task:
        fail(
            "give a sweep file, or --task with --grid KEY=V1,V2 (and optional --fixed KEY=V, --seeds 0,1, --name)"
        )
    spec: dict[str, Any] = {"sweep": {"name": name or f"{task}-flags", "task": task}, "fixed": {}, "grid": {}}
    for item, table in [(f, "fixed") for f in fixed] + [(g, "grid") for g in grid]:
        key, eq, value = item.partition("=")
        if not eq or not key.strip() or not value.strip():
            fail(f"--{table} {item!r}: write KEY=VALUE" + (" or KEY=V1,V2,…" if table == "grid" else ""))
        spec[table][key.strip()] = (
            [_flag_value(v) for v in value.split(",")] if table == "grid" else _flag_value(value)
        )
    if seeds:
        try:
            spec["sweep"]["seeds"] = [int(v) for v in seeds.split(",")]
        except ValueError:
            fail(f"--seeds {seeds!r}: give integers separated by commas, e.g. --seeds 0,1,2")
    return spec


@app.command("run")
def sweep_run(
    spec: Path | None = typer.Argument(
        None, help="Sweep file (TOML); or build the sweep from the flags below."
    ),
    db: Path = typer.Option(..., "--db", help="Results database (SQLite; created if missing)."),
    workers: int | None = typer.Option(None, "--workers", help="Parallel workers (default: CPUs)."),
    backend: str = typer.Option("local", "--backend", help="local (worker processes) or ray."),
    address: str | None = typer.Option(None, "--address", help="Ray cluster address (backend ray)."),
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
    seeds: str | None = typer.Option(None, "--seeds", help="Without a file: seeds, e.g. 0,1,2."),
    progress: bool = ProgressOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Run every run of the sweep not yet done in the database (re-running resumes)."""
    from headcount.learn.sweep import run_sweep

    if spec is not None:
        if task or fixed or grid or seeds or name:
            fail("give either a sweep file or --task/--fixed/--grid/--seeds/--name, not both")
        if not spec.is_file():
            fail(
                f"sweep file {spec} does not exist: give a TOML file with [sweep], [fixed] and [grid] tables"
            )
        source: Any = spec
    else:
        source = _spec_from_flags(name, task, fixed, grid, seeds)
    if backend not in ("local", "ray"):
        fail(f"--backend {backend!r} is not available: use local or ray")
    if workers is not None and workers < 1:
        fail(f"--workers {workers}: need at least 1")
    try:
        counts = run_sweep(source, db, workers=workers, backend=backend, address=address, progress=progress)
    except _sweep_errors() as err:
        fail(str(err))
    emit(
        counts,
        as_json,
        f"{counts['runs_done_now']} runs done now, {counts['runs_done_before']} before, "
        f"{counts['runs_failed']} failed, of {counts['runs_total']}",
    )


@app.command("table")
def sweep_table(
    db: Path = typer.Option(..., "--db"),
    experiment: str = typer.Option(..., "--experiment"),
    format: str = typer.Option("md", "--format", help="md, csv or json."),
    as_json: bool = JsonOpt,
) -> None:
    """The experiment's runs aggregated over seeds, from the database."""
    from headcount.learn.sweep import sweep_table as table_text

    if not db.is_file():
        fail(f"results database {db} does not exist: run a sweep with --db {db} first")
    if as_json:
        format = "json"
    if format not in ("md", "csv", "json"):
        fail(f"--format {format!r} is not available: use md, csv or json")
    try:
        text = table_text(db, experiment, format=format)
    except _sweep_errors() as err:
        fail(str(err))
    print(text.rstrip("\n"))
