"""Re-derive the papers' claims and write a report: the library entry point behind `headcount
reproduce`.

    run_reproduce(scale="quick", only=None, out_dir="headcount-report") -> ReproduceSummary

Claims come from the scenario modules in CLAIM_MODULES (a new scenario adds its module there, once).
They run in registration order; an exception inside a claim becomes a FAIL with the error in its
detail, never a crash. Progress goes to the `progress` callable (stderr by default: one line per
claim started and finished) or to a progress bar on stderr, never to stdout.
"""

from __future__ import annotations

import dataclasses
import os
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headcount.common.errors import InputError
from headcount.common.files import show_path
from headcount.common.jsonable import JsonResult, jsonable
from headcount.common.probe import machine_info
from headcount.common.progress import ProgressBar, progress_bar
from headcount.common.validate import check_choice, writable_folder
from headcount.learn.constants import SCALES
from headcount.report.boolean import claims as boolean
from headcount.report.boolean import frontier as boolean_frontier
from headcount.report.boolean import minimal as boolean_minimal
from headcount.report.claim_costs import recorded_seconds
from headcount.report.claim_ids import selected_ids
from headcount.report.claims import FAIL, PASS, REGISTRY, Claim, ClaimResult, Context
from headcount.report.headlines import headline
from headcount.report.induction import (
    construction_sizes,
    index_floor,
    index_floor_figure,
    khop_construction,
    khop_construction_figures,
    khop_floor,
    khop_mechanism,
    khop_pointer_rank,
    mechanism,
)
from headcount.report.induction import constructions as induction
from headcount.report.induction import lower_bound as induction_lower_bound
from headcount.report.induction import minimal as induction_minimal
from headcount.report.learning import claims as learning
from headcount.report.learning import khop
from headcount.report.minmax import claims as minmax
from headcount.report.minmax import minimal as minmax_minimal
from headcount.report.minmax import theorem1 as minmax_theorem1
from headcount.report.render import print_to_stderr, render_report

# The scenario modules: importing one registers its claims and figures (report order = this order).
CLAIM_MODULES = (
    induction,
    construction_sizes,
    induction_lower_bound,
    index_floor,
    index_floor_figure,
    induction_minimal,
    minmax,
    minmax_theorem1,
    minmax_minimal,
    boolean,
    boolean_frontier,
    boolean_minimal,
    learning,
    khop,
    khop_construction,
    khop_construction_figures,
    khop_mechanism,
    khop_floor,
    khop_pointer_rank,
    mechanism,
)
RESULTS_DB = (
    "results.sqlite"  # the learning experiments' runs, kept in the report folder (re-runs resume)
)


def load_claims() -> dict[str, Claim]:
    """Every registered claim, by id (the modules above registered them when imported)."""
    return REGISTRY


def select_claims(only: str | Iterable[str] | None = None) -> list[Claim]:
    """Claims whose id matches any pattern of `only` (claim_ids.selected_ids: glob if it has * ? [,
    else substring; comma-separated patterns allowed); all claims when `only` is None. InputError
    listing the claim ids if none match."""
    claims = load_claims()
    return [claims[i] for i in selected_ids(only, claims)]


def run_claim(claim: Claim, ctx: Context) -> ClaimResult:
    """claim.function(ctx, **params) with any exception (or a bad return value) turned into a
    FAIL."""
    try:
        result = claim.function(ctx, **claim.params_for(ctx.scale))
        if not isinstance(result, ClaimResult):
            raise TypeError(f"claim function returned {type(result).__name__}, not ClaimResult")
        return result
    except Exception as exc:  # a broken claim is a failed claim, not a crashed run
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return ClaimResult(
            {"error": f"{type(exc).__name__}: {exc}"},
            FAIL,
            f"error: {type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno})",
        )


@dataclass(frozen=True)
class ClaimRow:
    """One claim's outcome as summary.json records it (`measured` already plain JSON)."""

    id: str
    paper: str
    source: str
    statement: str
    measured: dict[str, Any]
    status: str
    detail: str
    seconds: float
    module: str
    check: str = ""  # the exact test the measurement had to pass
    reference: str = ""  # the key of its paper in the report's references
    headline: str = ""  # the summary table's one-line result


@dataclass(frozen=True)
class ReproduceSummary(JsonResult):
    """What `headcount reproduce` did: summary.json is `to_json()` (plus the figures list render
    adds)."""

    claims: tuple[ClaimRow, ...]
    passed: int
    failed: int
    scale: str
    wall_seconds: float
    out_dir: str
    certificates: dict[str, int]  # sub-results computed vs reused through Context.cached
    machine: dict[str, Any]
    figures: tuple[dict[str, Any], ...] = ()


def _run_one(
    claim: Claim, ctx: Context, label: str, lines: Callable[[str], None]
) -> tuple[ClaimRow, ClaimResult]:
    """Run one claim; `lines` gets one line when it starts and one when it ends (`label`: [i/N])."""
    cost = recorded_seconds(claim.id, ctx.scale)
    lines(f"{label} {claim.id} …" + ("" if cost is None else f" (about {max(cost, 1):.0f} s)"))
    start = time.perf_counter()
    result = run_claim(claim, ctx)
    seconds = time.perf_counter() - start
    why = f" — {result.detail}" if result.status != PASS else ""
    lines(f"{label} {claim.id} … {result.status} {seconds:.0f} s{why}")
    row = ClaimRow(
        claim.id,
        claim.paper,
        claim.source,
        claim.statement,
        jsonable(result.measured),
        result.status,
        result.detail,
        round(seconds, 2),
        claim.module,
        claim.check,
        claim.reference,
        headline(claim.id, result.status, jsonable(result.measured), result.detail),
    )
    return row, result


def _run_all(
    chosen: list[Claim], ctx: Context, progress: Callable[[str], None], bar: bool
) -> list[tuple[ClaimRow, ClaimResult]]:
    """Every chosen claim in order. With `bar`, one progress bar on stderr over the claims, each
    weighted by its recorded cost at this scale (so the bar's fill and its time left follow the
    recorded time, paced by this machine), reading "[i/N] claim-id" and, last, the claim's own
    progress (_claim_notes); without, `progress` gets the claims' start and end lines."""
    costs = [recorded_seconds(c.id, ctx.scale) for c in chosen]
    weights = [1.0 if cost is None else max(cost, 0.5) for cost in costs]
    ran = []
    first = f"[1/{len(chosen)}] {chosen[0].id}" if chosen else "reproduce"  # its first drawing
    with progress_bar(bar, first, total=sum(weights), weighted=True, note="") as shown:
        for i, (claim, weight) in enumerate(zip(chosen, weights), 1):
            label = f"[{i}/{len(chosen)}]"
            if bar:
                shown.update(description=f"{label} {claim.id}", note="")
                ctx.progress, ctx.step = _claim_notes(shown)
                ran.append(_run_one(claim, ctx, label, lambda line: None))
                shown.update(advance=weight)
            else:
                ran.append(_run_one(claim, ctx, label, progress))
    return ran


NOTE_WIDTH = 80  # characters of the bar's last column: the claim's stage and its counted step


def _claim_notes(shown: ProgressBar) -> tuple[Callable[[str], None], Callable[[str], None]]:
    """(ctx.progress, ctx.step) for one claim on the bar: its latest stage line ("khop sweep ..."),
    then its counted step after it ("khop sweep: run 3/12 · step 400/2000"), the stage cut to fit
    NOTE_WIDTH."""
    stage = [""]

    def line(text: str) -> None:
        stage[0] = " ".join(text.split())
        shown.update(note=stage[0][:NOTE_WIDTH])

    def step(text: str) -> None:
        head = stage[0].removesuffix("...").removesuffix("…").rstrip()
        room = max(0, NOTE_WIDTH - len(text) - 2)
        head = head if len(head) <= room else head[: max(0, room - 1)] + "…"
        shown.update(note=f"{head}: {text}" if head else text)

    return line, step


def run_reproduce(
    scale: str = "quick",
    only: str | Iterable[str] | None = None,
    out_dir: str | Path = "headcount-report",
    progress: Callable[[str], None] = print_to_stderr,
    bar: bool = False,
) -> ReproduceSummary:
    """Run the selected claims at `scale`, write the report into out_dir, return its summary.
    Progress: one line per claim started and finished to `progress` (`[7/22] id … PASS 207 s`),
    or with `bar` a progress bar on stderr instead (_run_all)."""
    check_choice("scale", scale, SCALES)
    chosen = select_claims(only)
    clock = time.perf_counter()
    out = writable_folder(out_dir)  # found before any claim runs, not after minutes of work
    # named by reproduce inside `out_dir`: a planted link would write elsewhere
    if os.path.islink(out / RESULTS_DB):
        raise InputError(
            f"{show_path(out / RESULTS_DB)} is a symbolic link: reproduce keeps a real file there"
        )
    ctx = Context(scale=scale, results_db=str(out / RESULTS_DB))
    ran = _run_all(chosen, ctx, progress, bar)
    passed = sum(row.status == PASS for row, _ in ran)
    summary = ReproduceSummary(
        claims=tuple(row for row, _ in ran),
        passed=passed,
        failed=len(ran) - passed,
        scale=scale,
        wall_seconds=round(time.perf_counter() - clock, 2),
        out_dir=str(out.resolve()),
        certificates={"computed": ctx.misses, "reused": ctx.hits},
        machine=machine_info(with_date=True),
    )
    figures = render_report(summary.to_json(), {row.id: result for row, result in ran}, out)
    if not bar:
        progress(
            f"{passed} passed, {summary.failed} failed in {summary.wall_seconds:.1f} s; "
            f"report in {out}"
        )
    return dataclasses.replace(summary, figures=tuple(figures))
