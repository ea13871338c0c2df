"""`headcount reproduce`: every claim of both papers, re-derived into a report."""

from __future__ import annotations

import sys

import typer

from headcount.cli.common import JsonOpt, emit


def reproduce(
    scale: str = typer.Option("quick", "--scale", help="quick (default, minutes) or full."),
    only: str | None = typer.Option(
        None, "--only", help="Run only claims whose id matches this pattern."
    ),
    out: str = typer.Option("headcount-report", "--out", help="Output folder."),
    quiet: bool = typer.Option(
        False, "--quiet", help="No progress on stderr (errors still print there)."
    ),
    as_json: bool = JsonOpt,
) -> None:
    """Re-derive every claim of the papers and write a report (exit 1 if any claim fails).
    Progress goes to stderr: on a terminal a bar over the claims ("[7/22]", the current claim and
    its own progress, e.g. "khop sweep: run 3/12 · step 400/2000"; a time left from each claim's
    recorded cost at this scale), otherwise one line per claim started and finished ("[7/22]
    learning.khop.depth … PASS 207 s"); --quiet silences it."""
    from headcount.report.claim_ids import selected_ids

    selected_ids(only)  # a bad --only is refused now, before the claims load (seconds)
    from headcount.report.render import print_to_stderr
    from headcount.report.reproduce import run_reproduce  # matplotlib loads only for this command

    bar = not quiet and sys.stderr.isatty()
    sink = (lambda line: None) if quiet else print_to_stderr
    summary = run_reproduce(scale=scale, only=only, out_dir=out, progress=sink, bar=bar)
    lines = [f"{c.status:4}  {c.id:40}  {c.statement}" for c in summary.claims]
    lines.append(
        f"{summary.passed} passed, {summary.failed} failed in {summary.wall_seconds:.0f} s; "
        f"report in {summary.out_dir}"
    )
    emit(summary.to_json(), as_json, "\n".join(lines))
    if summary.failed:
        raise typer.Exit(1)
