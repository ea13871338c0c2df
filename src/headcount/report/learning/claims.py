"""Learning claims and figures (spec/learning.md): what the theory says training can and cannot do.

Claims: measure → check → describe. Measure: the experiment's summary (its sweep run or resumed into
Context.results_db, then read from the database) plus what the constructions achieve on the same
cells (`with_constructions`: certificates are computed here, never by a learn/ summarizer). Check:
what the theorems forbid is asserted (no XOR cell below D·H = n solved); what they allow is
reported, and asserted only where robust (two layers reach ≥ 99% at n ≤ 32). Describe: one line.

Each drawing of a summary is registered once (`_draws`): as its claim's report figure, and as the
figure `run_experiment_with_figure` (what `headcount experiment NAME` calls) draws beside the
database. The k-hop claims and drawings are report/learning/khop.py's (its KHOP_DRAW is merged into
DRAW here).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from headcount.boolean.certification import construct_and_certify
from headcount.common.jsonable import JsonResult
from headcount.common.probe import machine_info
from headcount.learn.constants import DEFAULT_DB
from headcount.learn.experiments import ExperimentResult, run_experiment
from headcount.learn.summaries import (
    InductionDepthSummary,
    MinmaxHeadsCell,
    MinmaxHeadsSummary,
    Summary,
    XorPhaseCell,
    XorPhaseSummary,
)
from headcount.minmax.certification import certify_minmax
from headcount.report.claims import SEED000, SEED004, ClaimResult, Context, claim, status
from headcount.report.experiments import experiment_summary
from headcount.report.figures import cell_text, figure, log2_axis, save_figure
from headcount.report.learning.khop import KHOP_DRAW
from headcount.report.render import write_atomic

# ------------------------------------------------------------------------------------------------
# Measure


def _xor_certified(c: XorPhaseCell) -> bool | None:
    """The Theorem-3 construction's certificate for the cell's (D, H); None below the bound
    (refused)."""
    return (
        None
        if c.below_bound
        else construct_and_certify(c.function, c.n, c.degree, c.heads).certified
    )


def with_xor_constructions(s: XorPhaseSummary) -> XorPhaseSummary:
    """The xor-phase summary with each cell's construction certificate, and how many cells above the
    bound have a certified construction."""
    cells = [c.with_construction(_xor_certified(c)) for c in s.cells]
    certified = sum(bool(c.construction_certified) for c in cells if not c.below_bound)
    return replace(s, cells=cells, above_constructions_certified=certified)


def with_minmax_constructions(s: MinmaxHeadsSummary) -> MinmaxHeadsSummary:
    """The minmax-heads summary with construction_dims: M → the value dimension of the two-head
    construction (compact code), certified by certify_minmax at each (M, n) of the sweep."""
    dims = {}
    for M, n in sorted({(c.M, c.n) for c in s.cells}):
        cert = certify_minmax(M, n, 2, code="compact")
        if cert.errors_min == 0 and cert.errors_max == 0:
            dims[M] = cert.dim
    return replace(s, construction_dims=dims)


CONSTRUCTIONS: dict[str, Callable[[Any], Summary]] = {
    "xor-phase": with_xor_constructions,
    "minmax-heads": with_minmax_constructions,
}


def with_constructions(name: str, summary: Summary) -> Summary:
    """`summary` of experiment `name` with what the theory's constructions achieve on its cells (if
    any)."""
    add = CONSTRUCTIONS.get(name)
    return summary if add is None else add(summary)


def _summary(ctx: Context, name: str) -> Summary:
    """The experiment's summary at ctx.scale from the report's results database (its sweep run or
    resumed there first: khop.experiment_summary), with the constructions; both cached for the
    run."""
    summary = experiment_summary(ctx, name)
    if name not in CONSTRUCTIONS:
        return summary
    add = lambda: with_constructions(name, summary)
    key = ("experiment-constructions", name, ctx.scale, ctx.results_db or DEFAULT_DB)
    return ctx.cached(key, add, f"{name} constructions")


# ------------------------------------------------------------------------------------------------
# Claims: measure → check → describe


def _percentages(by_n: dict[int, float], digits: int) -> str:
    return ", ".join(f"n={n}: {100 * a:.{digits}f}%" for n, a in by_n.items())


def _missing_two_layer(s: InductionDepthSummary) -> str | None:
    """Why "at every n" cannot be checked (some n of the sweep has no two-layer result), or None."""
    lengths, two = sorted({c.n for c in s.cells}), sorted(s.two_layer_best_by_n)
    if lengths and two == lengths:
        return None
    return (
        f"two-layer models missing at some n: sweep n = {lengths}, two-layer results at n = {two}"
    )


def _describe_induction_depth(s: InductionDepthSummary) -> str:
    below, where = ("below", "every") if s.one_below_two_everywhere else ("NOT below", "some")
    return (
        f"best two-layer model ≥ {100 * s.two_layer_best_min_accuracy:.2f}% at every n ("
        f"{_percentages(s.two_layer_best_by_n, 2)}; weakest two-layer configuration "
        f"{100 * s.two_layer_weakest_cell_accuracy:.1f}%); one layer at most "
        f"{100 * s.one_layer_best_accuracy:.1f}%, {below} its two-layer counterpart in {where} "
        "configuration; INDEX-family query accuracy of the best two-layer model (reported, not "
        "asserted): "
        f"{_percentages(s.two_layer_index_accuracy_by_n, 0)}"
    )


@claim(
    "learning.induction.depth",
    paper=SEED000,
    source="§1, experiments",
    statement="Trained two-layer attention models solve induction heads (the best two-layer model "
    "of the "
    "sweep is ≥ 99% right on non-⊥ positions at every n); one-layer models of the same width, "
    "heads and "
    "alphabet stay below their two-layer counterparts everywhere.",
)
def induction_depth(ctx: Context) -> ClaimResult:
    s = _summary(ctx, "induction-depth")
    missing = _missing_two_layer(s)
    ok = missing is None and s.two_layer_best_min_accuracy >= 0.99 and s.one_below_two_everywhere
    return ClaimResult(s.to_json(), status(ok), missing or _describe_induction_depth(s), s)


def _describe_minmax_heads(s: MinmaxHeadsSummary) -> str:
    single = sum(c.seeds for c in s.cells if c.heads == 1)
    agree = "agree" if s.verifier_agrees_with_exhaustive else "do NOT agree"
    return (
        f"two heads solved both tasks exactly in {s.two_heads_solved} runs; single heads: the "
        "exact "
        f"verifier found a counterexample for {s.single_heads_with_counterexample} of {single} "
        "trained "
        f"heads (verdicts {agree} with exhaustive evaluation on all {s.single_heads_checked} "
        "compared)"
    )


@claim(
    "learning.minmax.heads",
    paper=SEED004,
    source="§3.1, Theorem 1 and Appendix A",
    statement="Some trained two-head model solves min and max together on every input; every "
    "trained single "
    "head is run through the exact one-head verifier, and wherever exhaustive evaluation is "
    "possible "
    "(at most 200 000 multisets) the verifier's verdicts agree with it on every head compared "
    "(at least one).",
)
def minmax_heads(ctx: Context) -> ClaimResult:
    s = _summary(ctx, "minmax-heads")
    ok = s.two_heads_solved > 0 and s.verifier_agrees_with_exhaustive
    return ClaimResult(s.to_json(), status(ok), _describe_minmax_heads(s), s)


def _xor_sides(s: XorPhaseSummary) -> tuple[list[XorPhaseCell], list[XorPhaseCell]]:
    """The XOR cells below and above D·H = n, the side read from (D, H, n) alone (T of n-bit XOR is
    n)."""
    cells = [c for c in s.cells if c.function == "xor"]
    return [c for c in cells if c.degree * c.heads < c.n], [
        c for c in cells if c.degree * c.heads >= c.n
    ]


@claim(
    "learning.xor.phase",
    paper=SEED004,
    source="Theorems 2 and 3",
    statement="Trained n-bit XOR models never succeed below D·H = n (impossible by Theorem 2); "
    "above it the "
    "Theorem-3 construction is certified in every cell, and the table shows where training gets "
    "there.",
)
def xor_phase(ctx: Context) -> ClaimResult:
    s = _summary(ctx, "xor-phase")
    below, above = _xor_sides(s)
    below_solved = sum(c.solved > 0 for c in below)
    certified = sum(c.construction_certified is True for c in above)
    ok = bool(below) and bool(above) and below_solved == 0 and certified == len(above)
    detail = (
        f"n = {s.n}: {below_solved} of {len(below)} cells below D·H = n solved (must be 0, and ≥ "
        "1 cell); "
        f"training solved {sum(c.solved > 0 for c in above)} of {len(above)} cells above, "
        "constructions "
        f"certified in {certified} (must be all, and ≥ 1 cell)"
    )
    return ClaimResult(s.to_json(), status(ok), detail, s)


# ------------------------------------------------------------------------------------------------
# Figures (also drawn by `headcount experiment NAME`, beside its database), from a summary


# experiment → its drawing of a summary (the k-hop ones are report/learning/khop.py's)
DRAW: dict[str, Callable[[plt.Figure, Any], str]] = dict(KHOP_DRAW)


def _draws(experiment: str, id: str, claim: str) -> Callable[[Callable], Callable]:
    """Register a drawing of an experiment's summary: as DRAW[experiment], and as report figure `id`
    of the claim whose series is that summary."""

    def register(draw: Callable[[plt.Figure, Any], str]) -> Callable[[plt.Figure, Any], str]:
        DRAW[experiment] = draw
        figure(id, claim=claim)(lambda fig, result: draw(fig, result.series))
        return draw

    return register


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count > 1 else ''}"


def _accuracy_by_n(cells: list[Any]) -> tuple[list[int], np.ndarray, np.ndarray]:
    """(n, mean accuracy, [2 n] distances to the min and max seed) of cells of one configuration, by
    n."""
    pts = sorted(cells, key=lambda c: c.n)
    acc = np.array([c.accuracy for c in pts])
    spread = np.vstack([acc - [c.accuracy_min for c in pts], [c.accuracy_max for c in pts] - acc])
    return [c.n for c in pts], acc, spread


@_draws("induction-depth", "learning_induction_depth", claim="learning.induction.depth")
def draw_induction_depth(fig: plt.Figure, s: InductionDepthSummary) -> str:
    ax = fig.add_subplot(1, 1, 1)
    cells = s.cells
    colors = {1: "tab:red", 2: "tab:blue", 3: "tab:green"}
    config = lambda c: (c.layers, c.alphabet, c.heads, c.dim)
    for L, S, h, m in sorted({config(c) for c in cells}):
        ns, acc, spread = _accuracy_by_n([c for c in cells if config(c) == (L, S, h, m)])
        ax.errorbar(
            ns,
            100 * acc,
            yerr=100 * spread,
            fmt="o-" if S == min(c.alphabet for c in cells) else "s--",
            color=colors.get(L, "tab:gray"),
            capsize=3,
            label=f"{_plural(L, 'layer')}, {_plural(h, 'head')}, dim {m}, S = {S}",
        )
    log2_axis(ax, [c.n for c in cells])
    ax.set_xlabel("sequence length n (tokens)")
    ax.set_ylabel("accuracy on non-⊥ positions (%)")
    ax.set_ylim(min(40, 100 * min(c.accuracy_min for c in cells) - 5), 101)
    ax.set_title("Induction heads, trained: one layer vs two layers")
    ax.legend(loc="lower left", fontsize=10)
    return (
        "Paper (seed 000): a one-layer transformer needs heads·dim·bits = Ω(n) to solve induction "
        "heads, two "
        "layers of constant size suffice. Measured: trained models (mean over seeds, bars "
        "min–max) on "
        "held-out uniform sequences; the best two-layer model reaches "
        f"{100 * s.two_layer_best_min_accuracy:.2f}% or more at every n, one layer at most "
        f"{100 * s.one_layer_best_accuracy:.1f}%."
    )


def _mark_counterexamples(ax: plt.Axes, pts: list[MinmaxHeadsCell]) -> None:
    """Label single-head points with how many seeds the exact verifier refuted (min or max)."""
    for c in pts:
        if c.counterexample_min_or_max:
            ax.annotate(
                f"{c.counterexample_min_or_max}/{c.seeds}",
                (c.dim, 100 * c.accuracy_both_max),
                textcoords="offset points",
                xytext=(0, -16),
                ha="center",
                fontsize=10,
                color="tab:red",
            )


@_draws("minmax-heads", "learning_minmax_heads", claim="learning.minmax.heads")
def draw_minmax(fig: plt.Figure, s: MinmaxHeadsSummary) -> str:
    ax = fig.add_subplot(1, 1, 1)
    cells = s.cells
    colors = {1: "tab:red", 2: "tab:blue"}
    for key in sorted({(c.heads, c.M, c.n) for c in cells}):
        H, M, n = key
        pts = sorted((c for c in cells if (c.heads, c.M, c.n) == key), key=lambda c: c.dim)
        ax.plot(
            [c.dim for c in pts],
            [100 * c.accuracy_both_max for c in pts],
            "o-",
            color=colors.get(H, "tab:gray"),
            label=f"{_plural(H, 'head')}, M = {M}, n = {n} (best seed)",
        )
        if H == 1:
            _mark_counterexamples(ax, pts)
    for M, d in sorted((s.construction_dims or {}).items()):
        label = f"two-head construction certified, M = {M}: d = {d}"
        ax.axvline(d, color="tab:blue", ls=":", lw=1.5, label=label)
    ax.set_xlabel("value dimension d")
    ax.set_ylabel("lists right on both min and max (%)")
    ax.set_title("Min and max, trained: one head vs two heads")
    ax.set_ylim(0, 102)
    ax.legend(loc="lower right", fontsize=10)
    return (
        "Paper (seed 004 §3.1): one attention head cannot support both min and max with small "
        "resources; "
        "two heads can (Appendix A, certified here for the dotted d). Measured: exact accuracy of "
        "trained "
        "models on every multiset (weighted to all M^n lists); red labels: trained single heads "
        "for which "
        "the exact one-head verifier found a counterexample to min or max, out of the seeds."
    )


@_draws("xor-phase", "learning_xor_phase", claim="learning.xor.phase")
def draw_xor_training(fig: plt.Figure, s: XorPhaseSummary) -> str:
    """The (D, H) grid of a summary with the constructions (with_xor_constructions)."""
    ax = fig.add_subplot(1, 1, 1)
    cells, n = s.cells, s.n
    Ds = sorted({c.degree for c in cells})
    Hs = sorted({c.heads for c in cells})
    grid = np.full((len(Hs), len(Ds)), np.nan)
    for c in cells:
        grid[Hs.index(c.heads), Ds.index(c.degree)] = c.solved / c.seeds
    im = ax.imshow(100 * grid, origin="lower", aspect="auto", cmap="Greens", vmin=0, vmax=100)
    for c in cells:
        mark = (
            ""
            if c.construction_certified is None
            else (" C" if c.construction_certified else " C?")
        )
        share = (
            c.fraction_of_frontier
        )  # None beyond the frontier's work bound, NaN without an accuracy
        of_frontier = "" if share is None or math.isnan(share) else f"\n{100 * share:.0f}% of F"
        text = f"{c.solved}/{c.seeds}{mark}{of_frontier}"
        cell_text(ax, Ds.index(c.degree), Hs.index(c.heads), text, c.solved / c.seeds > 0.6)
    # the curve D·H = n in cell coordinates (interpolated along the D axis)
    ds = np.linspace(Ds[0], Ds[-1], 200)
    hs = n / ds
    ok = (hs >= Hs[0]) & (hs <= Hs[-1])
    x, y = np.interp(ds[ok], Ds, range(len(Ds))), np.interp(hs[ok], Hs, range(len(Hs)))
    ax.plot(x, y, "r-", lw=2, label=f"D·H = n = {n}")
    ax.set_xticks(range(len(Ds)), [str(d) for d in Ds])
    ax.set_yticks(range(len(Hs)), [str(h) for h in Hs])
    fig.colorbar(im, ax=ax, label="seeds solving all 2^n inputs (%)")
    ax.set_xlabel("readout degree D")
    ax.set_ylabel("heads H")
    ax.set_title(
        f"{n}-bit XOR, trained: (D, H) phase diagram (red: D·H = n = {n})"
    )  # no legend over a cell
    return (
        "Paper (seed 004 Theorems 2, 3): H heads with a degree-D readout compute n-bit XOR iff "
        "D·H ≥ n. "
        f"Measured at n = {n}: cells give seeds whose trained model is exactly right on all 2^n "
        "inputs; 'C' "
        "marks cells where the Theorem-3 construction is certified exactly; 'x% of F': the seeds' "
        "mean "
        "accuracy on all 2^n inputs as a share of the exact frontier F, the best any model with "
        "that D·H can "
        "reach (boolean frontier; 100% from D·H = n). Below the red curve no model can "
        f"succeed ({s.below_solved} of {s.below_cells} cells did); above it training solved "
        f"{s.above_solved} of {s.above_cells} cells."
    )


# ------------------------------------------------------------------------------------------------
# `headcount experiment NAME`: run the experiment, add the constructions, draw its figure


@dataclass(frozen=True)
class ExperimentFigure(JsonResult):
    """The figure's caption and the paths of its PNG and SVG files."""

    caption: str
    png: str
    svg: str


@dataclass(frozen=True)
class ExperimentReport:
    """run_experiment's result (its summary with the constructions) and its figure (None: nothing to
    draw)."""

    result: ExperimentResult
    figure: ExperimentFigure | None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.result.to_json(),
            "figure": None if self.figure is None else self.figure.to_json(),
        }


def save_experiment_figure(
    name: str, summary: Summary, out_dir: str | Path, stem: str
) -> ExperimentFigure:
    """Draw experiment `name`'s figure from its summary into out_dir/stem.{png,svg} (atomic
    writes)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    saved = save_figure(
        lambda fig: DRAW[name](fig, summary), out, stem, machine_info(with_date=True), write_atomic
    )
    return ExperimentFigure(saved["caption"], str(out / saved["png"]), str(out / saved["svg"]))


def run_experiment_with_figure(
    name: str,
    scale: str = "quick",
    db: str | Path = DEFAULT_DB,
    workers: int | None = None,
    backend: str = "local",
    address: str | None = None,
    progress: bool = False,
    figure_dir: str | Path | None = None,
) -> ExperimentReport:
    """Run (or resume) the experiment (learn.experiments.run_experiment), add what the constructions
    achieve on its cells, and draw its figure (PNG + SVG) into `figure_dir` (default: beside the
    database)."""
    result = run_experiment(
        name, scale, db, workers=workers, backend=backend, address=address, progress=progress
    )
    summary = with_constructions(name, result.summary)
    out = Path(figure_dir) if figure_dir is not None else Path(db).resolve().parent
    drawn = None if summary.empty else save_experiment_figure(name, summary, out, f"{name}-{scale}")
    return ExperimentReport(replace(result, summary=summary), drawn)
