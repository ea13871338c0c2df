"""`headcount reproduce`: every claim of both papers, re-derived into a report."""

from __future__ import annotations

import typer

from headcount.cli.common import JsonOpt, emit


def reproduce(
    scale: str = typer.Option("quick", "--scale", help="quick (default, minutes) or full."),
    only: str | None = typer.Option(
        None, "--only", help="Run only claims whose id matches this pattern."
    ),
    out: str = typer.Option("headcount-report", "--out", help="Output folder."),
    as_json: bool = JsonOpt,
) -> None:
    """Re-derive every claim of both papers and write a report (exit 1 if any claim fails)."""
    from headcount.report.claim_ids import selected_ids

    selected_ids(only)  # a bad --only is refused now, before the claims load (seconds)
    from headcount.report.reproduce import run_reproduce  # matplotlib loads only for this command

    summary = run_reproduce(scale=scale, only=only, out_dir=out)
    lines = [f"{c.status:4}  {c.id:40}  {c.statement}" for c in summary.claims]
    lines.append(
        f"{summary.passed} passed, {summary.failed} failed in {summary.wall_seconds:.0f} s; "
        f"report in {summary.out_dir}"
    )
    emit(summary.to_json(), as_json, "\n".join(lines))
    if summary.failed:
        raise typer.Exit(1)
