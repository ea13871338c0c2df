"""Attention-pattern figures (issue 15, point 2): per-head heat maps of one input, for any model
that `analyze heads` reads (constructed, trained or imported), and `headcount analyze patterns`.

One panel per (layer, head): query positions as rows, key positions as columns, the input's tokens
on both axes as the command line and the JSON print them (core.model.token_text) — symbols as
numbers 0..S−1, the hop token of the hop-prefix layout as "k=K" — the blank upper triangle where
the model is causal (a query never sees later keys), one colour scale 0..1 shared by every panel,
and in each panel's title the head's role and its two highest scores (induction.heads:
previous-token, duplicate-token, induction, sink, … and the find^r alignments for r ≥ 2).

The input drawn is the first of the seeded inputs the scores are computed on
(induction.heads.analyze_heads: `samples` inputs from np.random.default_rng([seed, n, alphabet])),
its first `draw` characters (all n by default: at most MAX_DRAW, so a figure stays a few thousand
pixels a side). A prefix of a causal model's input has the same attention pattern as the whole
input restricted to it, so drawing fewer characters than the scores use crops the picture and
changes nothing in it.

Models are drawn side by side (`draw_patterns`): a block of columns per model, a row per layer and a
column per head within its block. The report's side-by-side of the two-layer construction and the
best trained two-layer model (report/induction/mechanism.py) is this drawing of two models on the
same characters. The layout (report/views/attention_layout.py) makes every panel a square of
CELL_INCHES a token, so a 10-pt label fits its cell (a label wider than its cell is turned upright;
were the cells smaller than the labels, only every k-th would be printed), and leaves matplotlib's
tight_layout — the one save_figure runs — the room it measures, so no two texts overlap. Figures
are saved in the report's style (report/figures.py: save_figure, DPI, fonts, machine footer) as
PNG and SVG; the same panels as an interactive page (hover a cell for its tokens, positions and
weight) are report/views/attention_html.py's. `analyze patterns` writes all three
(report/views/attention_files.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from headcount.common.errors import InputError
from headcount.common.validate import check_int
from headcount.core.certify import Model, attention_patterns
from headcount.core.model import token_text
from headcount.induction.heads import DEFAULT_SAMPLES, ROLES, HeadScore, analyze_heads
from headcount.induction.layouts import (
    bind_layout,
    lay_out,
    prefix_length,
    task_characters,
)
from headcount.induction.task import induction_targets
from headcount.report.figures import FIGSIZE, FONT
from headcount.report.views.attention_layout import (
    BAR_RATIO,
    Ticks,
    axis_ticks,
    fit_layout,
    label_axes,
    pad_inches,
    panel_inches,
    wrapped,
)

MAX_DRAW = 32  # characters drawn: a panel of 33 tokens is about 5.3 inches, 800 pixels, a side
# the grid: a row per layer and a column per head (summed over the models drawn side by side); 12 ×
# 12 is GPT-2 small: of MAX_DRAW-token panels, about 12,000 pixels square at DPI 150
MAX_ROWS = 12
MAX_COLUMNS = 12
TOP_SCORES = 2  # scores named in a panel's title
CMAP = plt.get_cmap("viridis").with_extremes(bad="white")  # bad: the blank upper triangle
SHORT = {"previous_token": "previous", "duplicate_token": "duplicate"}


def token_labels(sigma: np.ndarray, layout: str, alphabet: int, hops: int) -> tuple[str, ...]:
    """The axis labels of characters σ [n] laid out in `layout`, as the command line and the JSON
    print tokens (token_text): the hop token as "k=K", then the symbols as numbers 0..S−1."""
    first = (f"k={hops}",) if prefix_length(layout) else ()
    return first + tuple(token_text(int(s)) for s in sigma)


def answer_labels(sigma: np.ndarray, layout: str, hops: int) -> tuple[str, ...]:
    """The task's answer at each position of characters σ [n] laid out in `layout` (hop_k(σ), ⊥
    where none, as token_text prints it); "" at the hop token, which has none."""
    first = ("",) if prefix_length(layout) else ()
    return first + tuple(token_text(int(t)) for t in induction_targets(sigma, hops))


def score_items(score: HeadScore) -> dict[str, float]:
    """A head's scores by name, as its role is chosen from them: the named mechanisms and find^r, r
    ≥ 2."""
    items = {name: float(getattr(score, name)) for name in ROLES}
    return items | {f"find^{r}": float(s) for r, s in score.find.items() if r >= 2}


def panel_title(score: HeadScore) -> str:
    """ "layer l head h: role" over the head's TOP_SCORES highest scores."""
    items = sorted(score_items(score).items(), key=lambda item: -item[1])[:TOP_SCORES]
    scores = " · ".join(f"{SHORT.get(name, name)} {value:.2f}" for name, value in items)
    return f"layer {score.layer} head {score.head}: {score.role}\n{scores}"


@dataclass(frozen=True)
class ModelPatterns:
    """One model's panels: its label, the drawn input's axis labels, each head's attention on it
    [query key] and its scores (both in (layer, head) order), the heads of each layer, whether the
    model is causal, the task's answer at each query position."""

    label: str
    tokens: tuple[str, ...]
    patterns: tuple[np.ndarray, ...]
    scores: tuple[HeadScore, ...]
    heads_per_layer: tuple[int, ...]
    causal: bool
    answers: tuple[str, ...] = ()  # the answer at each query position (answer_labels)

    @property
    def columns(self) -> int:
        return max(self.heads_per_layer, default=0)


def model_patterns(
    model: Model,
    label: str,
    task_name: str = "induction",
    layout: str | None = None,
    n: int = 16,
    alphabet: int = 4,
    seed: int = 0,
    hops: int = 1,
    samples: int = DEFAULT_SAMPLES,
    draw: int | None = None,
) -> ModelPatterns:
    """`model`'s head scores (analyze_heads: every value checked, the work bounded) and its
    attention on the first of the scored inputs, cropped to its first `draw` characters (default n;
    at most MAX_DRAW)."""
    draw = n if draw is None else draw
    check_int("the characters drawn", draw, 1, min(n, MAX_DRAW))
    analysis = analyze_heads(model, task_name, layout, n, alphabet, samples, seed, hops)
    layout = analysis.layout
    sigma = task_characters(task_name, samples, n, alphabet, seed)[
        :1
    ]  # the first of the scored inputs
    bound = bind_layout(model, layout, n, alphabet, hops)
    length = prefix_length(layout) + draw
    layers = attention_patterns(bound, lay_out(sigma, layout, alphabet, hops))
    patterns = tuple(
        layer[0, h, :length, :length] for layer in layers for h in range(layer.shape[1])
    )
    return ModelPatterns(
        label,
        token_labels(sigma[0, :draw], layout, alphabet, hops),
        patterns,
        tuple(analysis.heads),
        tuple(model.heads_per_layer),
        getattr(model, "mask", "causal") == "causal",
        answer_labels(sigma[0, :draw], layout, hops),
    )


def check_grid(heads: Sequence[Sequence[int]]) -> tuple[int, int]:
    """(rows, columns) of the panel grid of models with these heads per layer — a row per layer, a
    column per head of each model's widest layer; InputError beyond MAX_ROWS × MAX_COLUMNS or
    without any head."""
    rows = max(len(h) for h in heads)
    columns = sum(max(h, default=0) for h in heads)
    if columns == 0:
        raise InputError("the model has no attention heads: there is no pattern to draw")
    if rows > MAX_ROWS or columns > MAX_COLUMNS:
        raise InputError(
            f"the figure has a row per layer and a column per head: {rows} layers and {columns} "
            "head "
            f"columns here; at most {MAX_ROWS} layers and {MAX_COLUMNS} heads a layer are drawn"
        )
    return rows, columns


def _panel(ax: plt.Axes, model: ModelPatterns, index: int, first_column: bool, ticks: Ticks) -> Any:
    """Draw head `index` of `model` into `ax`; the image (for the colour bar)."""
    A = np.array(model.patterns[index], dtype=float)
    if model.causal:
        A[np.triu_indices(len(A), 1)] = np.nan  # keys after the query: never attended to
    image = ax.imshow(A, cmap=CMAP, vmin=0.0, vmax=1.0, interpolation="nearest")
    label_axes(ax, model.tokens, ticks)
    ax.set_title(panel_title(model.scores[index]), fontsize=FONT)
    ax.set_xlabel("key (attended to)")
    if first_column:
        ax.set_ylabel(f"{model.label}\nquery" if model.label else "query")
    return image


def draw_patterns(fig: plt.Figure, models: Sequence[ModelPatterns], title: str = "") -> None:
    """The models' heat maps side by side (module docstring) with one colour bar and `title` above
    them (wrapped to the panels' width); sizes the figure and lays it out (fit_layout)."""
    rows, columns = check_grid([m.heads_per_layer for m in models])
    side = panel_inches(max(len(m.tokens) for m in models))
    grid = fig.add_gridspec(rows, columns + 1, width_ratios=[1.0] * columns + [BAR_RATIO])
    image, start = None, 0
    for model in models:
        ticks, index = axis_ticks(fig, model.tokens, side), 0
        for layer, count in enumerate(model.heads_per_layer):
            for head in range(count):
                ax = fig.add_subplot(grid[layer, start + head])
                image = _panel(ax, model, index, head == 0, ticks)
                index += 1
        start += model.columns
    bar = fig.colorbar(image, cax=fig.add_subplot(grid[:, columns]))
    bar.set_label("attention weight (one scale)")
    text = None
    if title:
        text = fig.suptitle(title, va="top")
        width = max(side * columns, FIGSIZE[0] - 2 * pad_inches())  # the figure's width at least
        text.set_text(wrapped(fig, title, text.get_fontsize(), width * 72))
    fit_layout(fig, grid, side, text)
