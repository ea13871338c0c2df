"""`headcount experiment NAME`: one learning experiment, its table and figure (options → one library
call → print).

The library checks the name, scale, backend and workers (InputError; main() prints it and exits
2)."""

from __future__ import annotations

from pathlib import Path

import typer

from headcount.cli.common import JsonOpt, ProgressOpt, emit, progress_on
from headcount.learn.constants import DEFAULT_DB


def experiment(
    name: str = typer.Argument(
        ...,
        help="induction-depth, khop, khop-gpt2, khop-llama, khop-neox, minmax-heads or xor-phase.",
    ),
    scale: str = typer.Option("quick", "--scale", help="quick or full."),
    db: Path = typer.Option(Path(DEFAULT_DB), "--db", help="Results database."),
    workers: int | None = typer.Option(None, "--workers"),
    backend: str = typer.Option("local", "--backend", help="local or ray."),
    address: str | None = typer.Option(None, "--address"),
    progress: bool | None = ProgressOpt,
    as_json: bool = JsonOpt,
) -> None:
    """Run one learning experiment of the spec (a resumable sweep), then its table and figure."""
    from headcount.report.learning.claims import run_experiment_with_figure

    shown = progress_on(progress)
    report = run_experiment_with_figure(
        name, scale, db, workers=workers, backend=backend, address=address, progress=shown
    )
    figure = report.figure
    human = report.result.table + (
        f"\nfigure: {figure.png} ({figure.svg})\n{figure.caption}" if figure is not None else ""
    )
    emit(report.to_json(), as_json, human)
