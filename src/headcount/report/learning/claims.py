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
from matplotlib.lines import Line2D

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
from headcount.report.claims import (
    INDUCTION_PAPER,
    MULTITASK_PAPER,
    ClaimResult,
    Context,
    claim,
    status,
)
from headcount.report.experiments import experiment_summary
from headcount.report.figures import (
    COLOURS,
    LAYER_STYLE,
    cell_text,
    figure,
    log2_axis,
    save_figure,
    staircase,
)
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
    paper=INDUCTION_PAPER,
    source="§1, experiments",
    statement="Trained two-layer attention models solve induction heads (the best two-layer model "
    "of the "
    "sweep is ≥ 99% right on non-⊥ positions at every n); one-layer models of the same width, "
    "heads and "
    "alphabet stay below their two-layer counterparts everywhere.",
    check="PASS only if the best two-layer model is at least 99% right on non-⊥ positions at "
    "every n, and every one-layer model is below its two-layer counterpart.",
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
    paper=MULTITASK_PAPER,
    source="§3.1, Theorem 1 and Appendix A",
    statement="Some trained two-head model solves min and max together on every input; every "
    "trained single "
    "head is run through the exact one-head verifier, and wherever exhaustive evaluation is "
    "possible "
    "(at most 200 000 multisets) the verifier's verdicts agree with it on every head compared "
    "(at least one).",
    check="PASS only if some two-head run solves min and max exactly, and the exact one-head "
    "verifier agrees with exhaustive evaluation on every head compared.",
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
    paper=MULTITASK_PAPER,
    source="Theorems 2 and 3",
    statement="Trained n-bit XOR models never succeed below D·H = n (impossible by Theorem 2); "
    "above it the "
    "Theorem-3 construction is certified in every cell, and the table shows where training gets "
    "there.",
    check="PASS only if no trained XOR model below D·H = n is right on all inputs, and the "
    "Theorem-3 construction is certified in every cell at or above it (at least one cell).",
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
    config = lambda c: (c.layers, c.alphabet, c.heads, c.dim)
    for L, S, h, m in sorted({config(c) for c in cells}):
        ns, acc, spread = _accuracy_by_n([c for c in cells if config(c) == (L, S, h, m)])
        style = LAYER_STYLE.get(L, LAYER_STYLE[3])  # one layer vs two: marker and line
        ax.errorbar(
            ns,
            100 * acc,
            yerr=100 * spread,
            fmt=style["marker"] + style["ls"],
            mfc=COLOURS["trained"] if S == min(c.alphabet for c in cells) else "white",
            color=COLOURS["trained"],
            capsize=3,
            label=f"trained, {_plural(L, 'layer')}, {_plural(h, 'head')}, dim {m}, S = {S}",
        )
    log2_axis(ax, [c.n for c in cells])
    ax.set_xlabel("sequence length n (tokens)")
    ax.set_ylabel("accuracy on non-⊥ positions (%)")
    ax.set_ylim(min(40, 100 * min(c.accuracy_min for c in cells) - 5), 101)
    ax.set_title("Induction heads, trained: one layer vs two layers")
    ax.legend(loc="lower left", fontsize=10)
    return (
        f"Paper ({INDUCTION_PAPER.cite}): a one-layer transformer needs heads·dim·bits = Ω(n) to "
        "solve induction heads, two layers of constant size suffice. Measured: trained models "
        "(mean over seeds, bars min–max; one layer: squares, dashed; two layers: circles, solid"
        + ("; hollow: a larger alphabet" if len({c.alphabet for c in cells}) > 1 else "")
        + ") on held-out uniform sequences; the best two-layer model reaches "
        f"{100 * s.two_layer_best_min_accuracy:.2f}% or more at every n, one layer at most "
        f"{100 * s.one_layer_best_accuracy:.1f}%."
    )


def _mark_counterexamples(ax: plt.Axes, pts: list[MinmaxHeadsCell]) -> None:
    """Label single-head points with how many seeds the exact verifier refuted (min or max): below
    and to the right, where the rising curves are not (to the left at the largest d)."""
    last = max(c.dim for c in pts)
    for c in pts:
        if c.counterexample_min_or_max:
            right = c.dim != last
            ax.annotate(
                f"{c.counterexample_min_or_max} of {c.seeds} refuted",
                (c.dim, 100 * c.accuracy_both_max),
                textcoords="offset points",
                xytext=(6 if right else -6, -8),
                ha="left" if right else "right",
                va="top",
                fontsize=10,
                color=COLOURS["trained"],
            )


HEAD_STYLE = {1: LAYER_STYLE[1], 2: LAYER_STYLE[2]}  # one head vs two, drawn like one layer vs two


@_draws("minmax-heads", "learning_minmax_heads", claim="learning.minmax.heads")
def draw_minmax(fig: plt.Figure, s: MinmaxHeadsSummary) -> str:
    ax = fig.add_subplot(1, 1, 1)
    cells = s.cells
    for key in sorted({(c.heads, c.M, c.n) for c in cells}):
        H, M, n = key
        pts = sorted((c for c in cells if (c.heads, c.M, c.n) == key), key=lambda c: c.dim)
        style = HEAD_STYLE.get(H, LAYER_STYLE[3])
        ax.plot(
            [c.dim for c in pts],
            [100 * c.accuracy_both_max for c in pts],
            color=COLOURS["trained"],
            **style,
            label=f"trained, {_plural(H, 'head')}, M = {M}, n = {n} (best seed)",
        )
        if H == 1:
            _mark_counterexamples(ax, pts)
    for M, d in sorted((s.construction_dims or {}).items()):
        # a point, not a line across the plot: it is exact (100%) at its own d
        label = f"two-head construction, certified exact, M = {M}: d = {d}"
        colour = COLOURS["construction"]
        ax.plot(d, 100, "*", color=colour, mfc="none", mew=1.5, ms=16, ls="", label=label)
    ax.set_xlabel("value dimension d")
    ax.set_ylabel("lists right on both min and max (%)")
    ax.set_title("Min and max, trained one-layer attention: one head vs two heads")
    ax.set_ylim(0, 102)
    ax.legend(loc="lower right", fontsize=10)
    return (
        f"Paper ({MULTITASK_PAPER.cite} §3.1): one attention head cannot support both min and max "
        "with small resources; two heads can (Appendix A: the two-head construction, certified "
        "exact here at the d of the blue star). Measured: exact accuracy of trained one-layer "
        "models (one head: squares, dashed; two heads: circles, solid) on every multiset "
        "(weighted to all M^n lists); 'a of b refuted' under a single-head point: for a of its "
        "b seeds the exact one-head verifier found a counterexample to min or max."
    )


def _xor_cell_text(c: XorPhaseCell) -> str:
    """A cell's words: seeds solved, and the seeds' mean accuracy as a share of the best any model
    of that D·H can reach (the exact frontier; no second line beyond its work bound)."""
    solved = f"{c.solved} of {c.seeds} solved"
    share = c.fraction_of_frontier  # None beyond the frontier's work bound, NaN without accuracy
    return solved if share is None or math.isnan(share) else f"{solved}\n{100 * share:.0f}% of best"


def _xor_constructions(ax: plt.Axes, cells: list[Any], Ds: list[int], Hs: list[int]) -> list:
    """A diamond in the top-right corner of each cell whose Theorem-3 construction is certified (a
    cross: built but not certified); returns the legend handles of the marks drawn."""
    handles = []
    for value, marker, label in (
        (True, "D", "Theorem-3 construction certified"),
        (False, "X", "construction NOT certified"),
    ):
        mine = [c for c in cells if getattr(c, "construction_certified", None) is value]
        if not mine:
            continue
        xs = [Ds.index(c.degree) + 0.4 for c in mine]
        ys = [Hs.index(c.heads) + 0.36 for c in mine]
        colour = COLOURS["construction"]
        ax.plot(xs, ys, marker, color=colour, mec="white", ms=7, ls="", label=label)
        handles.append(Line2D([], [], color=colour, marker=marker, ms=7, ls="", label=label))
    return handles


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
    cmap = "Reds"  # the trained colour: every cell is trained models
    im = ax.imshow(100 * grid, origin="lower", aspect="auto", cmap=cmap, vmin=0, vmax=100)
    for c in cells:
        dark = c.solved / c.seeds > 0.6
        cell_text(ax, Ds.index(c.degree), Hs.index(c.heads), _xor_cell_text(c), dark)
    handles = _xor_constructions(ax, cells, Ds, Hs)
    # D·H = n along the cell edges: under the lowest cell of each column with D·H ≥ n
    edges = [next((i for i, H in enumerate(Hs) if D * H >= n), len(Hs)) - 0.5 for D in Ds]
    bound = {"color": COLOURS["bound"], "lw": 2.5}
    staircase(ax, list(range(len(Ds))), edges, **bound)
    handles.insert(0, Line2D([], [], **bound, label=f"bound D·H = n = {n} (below: impossible)"))
    ax.set_xlim(-0.5, len(Ds) - 0.5)
    ax.set_ylim(-0.5, len(Hs) - 0.5)
    ax.set_xticks(range(len(Ds)), [str(d) for d in Ds])
    ax.set_yticks(range(len(Hs)), [str(h) for h in Hs])
    fig.colorbar(im, ax=ax, label="seeds solving all 2^n inputs (%)")
    ax.set_xlabel("readout degree D")
    ax.set_ylabel("heads H (one attention layer)")
    ax.set_title(f"{n}-bit XOR, trained one-layer models: which (D, H) training solves")
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.17), ncol=2)
    return (
        f"Paper ({MULTITASK_PAPER.cite} Theorems 2, 3): one attention layer with H heads and a "
        f"degree-D readout computes n-bit XOR iff D·H ≥ n. Measured at n = {n}: each cell says "
        "how many seeds trained a model exactly right on all 2^n inputs, and the seeds' mean "
        "accuracy on all 2^n inputs as a share of the best any model with that D·H can reach "
        "(the exact accuracy frontier of the boolean frontier claim; 100% from D·H = n); a blue "
        "diamond marks a cell whose Theorem-3 construction is certified exactly. Below the black "
        f"staircase D·H = n no model can succeed ({s.below_solved} of {s.below_cells} cells "
        f"did); above it training solved {s.above_solved} of {s.above_cells} cells."
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
