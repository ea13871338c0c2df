"""The learning experiments' results as the report reads them: one summary per experiment and scale,
from the report's results database (its sweep run, or resumed, there first), shared by every claim
that reads it.
"""

from __future__ import annotations

from headcount.learn.constants import DEFAULT_DB
from headcount.learn.experiments import ensure_experiment
from headcount.learn.summaries import Summary
from headcount.report.claims import Context


def experiment_summary(ctx: Context, name: str) -> Summary:
    """Experiment `name`'s summary at ctx.scale from the report's results database (its sweep run or
    resumed there first), cached for the run under ("experiment", name, scale, db): the key every
    learning claim shares."""
    db = ctx.results_db or DEFAULT_DB
    key = ("experiment", name, ctx.scale, db)
    return ctx.cached(
        key, lambda: ensure_experiment(name, ctx.scale, db, progress=ctx.step), f"{name} sweep"
    )
