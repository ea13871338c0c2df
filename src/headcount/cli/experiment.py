"""`headcount experiment NAME`: one learning experiment, its table and figure."""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import JsonOpt, ProgressOpt, emit, fail
from headcount.cli.sweep import _sweep_errors


def experiment(
    name: str = typer.Argument(..., help="induction-depth, khop, minmax-heads or xor-phase."),
    scale: str = typer.Option("quick", "--scale", help="quick or full."),
    db: Path = typer.Option(Path("headcount-results.sqlite"), "--db", help="Results database."),
    workers: int | None = typer.Option(None, "--workers"),
    backend: str = typer.Option("local", "--backend", help="local or ray."),
    address: str | None = typer.Option(None, "--address"),
    progress: bool = ProgressOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Run one learning experiment of the spec (a resumable sweep), then its table and figure from the database."""
    from headcount.learn.experiments import EXPERIMENTS, run_experiment

    if name not in EXPERIMENTS:
        fail(f"unknown experiment {name!r}: use one of {', '.join(EXPERIMENTS)}")
    if scale not in ("quick", "full"):
        fail(f"--scale {scale!r} is not available: use quick or full")
    if backend not in ("local", "ray"):
        fail(f"--backend {backend!r} is not available: use local or ray")
    try:
        result = run_experiment(
            name, scale, db, workers=workers, backend=backend, address=address, progress=progress
        )
    except _sweep_errors() as err:
        fail(str(err))
    figure = result["figure"]
    emit(
        result,
        as_json,
        result["table"]
        + (f"\nfigure: {figure['png']} ({figure['svg']})\n{figure['caption']}" if figure else ""),
    )
