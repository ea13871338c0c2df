"""Attention-pattern figures (issue 15, point 2): per-head heat maps of one input, for any model
that `analyze heads` reads (constructed, trained or imported), and `headcount analyze patterns`.

One panel per (layer, head): query positions as rows, key positions as columns, the input's tokens
on both axes — symbols as letters a, b, c, … (numbers 0, 1, … when the alphabet has more than 26
symbols), the hop token of the hop-prefix layout as "k=K" — the blank upper triangle where the model
is causal (a query never sees later keys), one colour scale 0..1 shared by every panel, and in each
panel's title the head's role and its two highest scores (induction.heads: previous-token,
duplicate-token, induction, sink, … and the find^r alignments for r ≥ 2).

The input drawn is the first of the seeded inputs the scores are computed on
(induction.heads.analyze_heads: `samples` inputs from np.random.default_rng([seed, n, alphabet])),
its first `draw` characters (all n by default: at most MAX_DRAW, so the labels stay legible). A
prefix of a causal model's input has the same attention pattern as the whole input restricted to it,
so drawing fewer characters than the scores use crops the picture and changes nothing in it.

Models are drawn side by side (`draw_patterns`): a block of columns per model, a row per layer and a
column per head within its block. The report's side-by-side of the two-layer construction and the
best trained two-layer model (report/induction/mechanism.py) is this drawing of two models on the
same characters. Files are saved in the report's style (report/figures.py: save_figure, DPI, fonts,
machine footer) as PNG and SVG.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from headcount.common.errors import InputError
from headcount.common.jsonable import JsonResult
from headcount.common.probe import machine_info
from headcount.common.resources import check_memory
from headcount.common.validate import check_choice, check_int, check_not_read, writable_folder
from headcount.core.certify import Model, attention_patterns
from headcount.core.model import load_model
from headcount.induction.heads import DEFAULT_SAMPLES, MAX_SAMPLES, ROLES, HeadScore, analyze_heads
from headcount.induction.layouts import (
    DEFAULT_LAYOUT,
    LAYOUTS,
    TASKS,
    bind_layout,
    check_hops,
    lay_out,
    prefix_length,
    task_characters,
)
from headcount.report.figures import DPI, FIGSIZE, FONT, save_figure
from headcount.report.render import write_atomic

MAX_DRAW = 32  # characters drawn: beyond this the token labels of a panel no longer fit at 10 pt
# the grid: a row per layer and a column per head (summed over the models drawn side by side); 12 ×
# 12 is GPT-2 small, about 6,000 pixels square at DPI 150
MAX_ROWS = 12
MAX_COLUMNS = 12
STEM = "attention"  # analyze patterns writes out_dir/attention.png and attention.svg
TOP_SCORES = 2  # scores named in a panel's title
CMAP = plt.get_cmap("viridis").with_extremes(bad="white")  # bad: the blank upper triangle
SHORT = {"previous_token": "previous", "duplicate_token": "duplicate"}


def symbol_label(symbol: int, alphabet: int) -> str:
    """How a task symbol is printed on an axis: a, b, c, … for alphabets of at most 26 symbols, else
    its number."""
    return chr(ord("a") + symbol) if alphabet <= 26 else str(symbol)


def token_labels(sigma: np.ndarray, layout: str, alphabet: int, hops: int) -> tuple[str, ...]:
    """The axis labels of characters σ [n] laid out in `layout`: the hop token as "k=K", then the
    symbols."""
    first = (f"k={hops}",) if prefix_length(layout) else ()
    return first + tuple(symbol_label(int(s), alphabet) for s in sigma)


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
    model is causal."""

    label: str
    tokens: tuple[str, ...]
    patterns: tuple[np.ndarray, ...]
    scores: tuple[HeadScore, ...]
    heads_per_layer: tuple[int, ...]
    causal: bool

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
    )


def panel_inches(length: int) -> float:
    """A panel's side: room for `length` token labels at 10 pt (about 0.16 inch each) and the
    axis."""
    return max(3.4, 0.16 * length + 1.0)


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


def _panel(ax: plt.Axes, model: ModelPatterns, index: int, first_column: bool) -> Any:
    """Draw head `index` of `model` into `ax`; the image (for the colour bar)."""
    A = np.array(model.patterns[index], dtype=float)
    if model.causal:
        A[np.triu_indices(len(A), 1)] = np.nan  # keys after the query: never attended to
    image = ax.imshow(A, cmap=CMAP, vmin=0.0, vmax=1.0, interpolation="nearest")
    ticks = range(len(model.tokens))
    ax.set_xticks(ticks, model.tokens, fontsize=FONT - 1)
    ax.set_yticks(ticks, model.tokens, fontsize=FONT - 1)
    ax.tick_params(length=2, pad=2)
    ax.set_title(panel_title(model.scores[index]), fontsize=FONT)
    ax.set_xlabel("key (attended to)")
    if first_column:
        ax.set_ylabel(f"{model.label}\nquery" if model.label else "query")
    return image


def draw_patterns(fig: plt.Figure, models: Sequence[ModelPatterns]) -> None:
    """The models' heat maps side by side (module docstring) with one colour bar; sizes the
    figure."""
    rows, columns = check_grid([m.heads_per_layer for m in models])
    side = panel_inches(max(len(m.tokens) for m in models))
    fig.set_size_inches(
        max(side * columns + 1.2, FIGSIZE[0]), side * rows + 1.0
    )  # the footer's width
    grid = fig.add_gridspec(rows, columns + 1, width_ratios=[1.0] * columns + [0.06])
    image, start = None, 0
    for model in models:
        index = 0
        for layer, count in enumerate(model.heads_per_layer):
            for head in range(count):
                ax = fig.add_subplot(grid[layer, start + head])
                image = _panel(ax, model, index, first_column=head == 0)
                index += 1
        start += model.columns
    bar = fig.colorbar(image, cax=fig.add_subplot(grid[:, columns]))
    bar.set_label("attention weight (one scale for every panel)")


def check_figure_memory(rows: int, columns: int, length: int) -> None:
    """The guard before drawing: the canvas (RGBA at DPI) and matplotlib's copies of it."""
    side = panel_inches(length) * DPI
    width = max(side * columns + 1.2 * DPI, FIGSIZE[0] * DPI)
    check_memory(3 * 4.0 * width * (side * rows + DPI), "drawing the attention figure")


@dataclass(frozen=True)
class AttentionFigure(JsonResult):
    """analyze patterns' result: the files written, the input drawn (laid-out token ids and their
    axis labels) and every head's scores."""

    png: str
    svg: str
    caption: str
    task: str
    layout: str
    hops: int
    n: int
    alphabet: int
    samples: int
    seed: int
    input: tuple[int, ...]
    tokens: tuple[str, ...]
    heads: tuple[HeadScore, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "files": {"png": self.png, "svg": self.svg},
            "caption": self.caption,
            "task": self.task,
            "layout": self.layout,
            "hops": self.hops,
            "n": self.n,
            "alphabet": self.alphabet,
            "samples": self.samples,
            "seed": self.seed,
            "input": list(self.input),
            "tokens": list(self.tokens),
            "heads": [h.to_json() for h in self.heads],
        }


def _check_request(
    task_name: str, layout: str | None, n: int, alphabet: int, seed: int, hops: int, samples: int
) -> str:
    """The options (before any file is read or written); the layout, defaulted by the task."""
    check_choice("task", task_name, TASKS)
    layout = (
        DEFAULT_LAYOUT[task_name] if layout is None else check_choice("layout", layout, LAYOUTS)
    )
    check_int("n", n, 2, MAX_DRAW)
    check_int("alphabet", alphabet, 2)
    check_int("seed", seed, 0)
    check_hops(hops)
    check_int("samples", samples, 1, MAX_SAMPLES)
    return layout


def caption_text(
    task_name: str, layout: str, n: int, alphabet: int, seed: int, samples: int
) -> str:
    return (
        f"Attention of every head on one input ({task_name}, {layout} layout, n = {n}, S = "
        f"{alphabet}; the "
        f"first of {samples} inputs drawn with seed {seed}): row = query position, column = key "
        "position, "
        "both labelled with the input's tokens; colour = attention weight (0..1, one scale); "
        "blank = keys "
        "after the query. Titles: each head's role and its two highest scores over all the inputs "
        "(headcount analyze heads)."
    )


def attention_figure(
    model: Model,
    out_dir: str | os.PathLike,
    task_name: str = "induction",
    layout: str | None = None,
    n: int = 16,
    alphabet: int = 4,
    seed: int = 0,
    hops: int = 1,
    samples: int = DEFAULT_SAMPLES,
    reads: tuple = (),
) -> AttentionFigure:
    """Draw `model`'s attention on one input (module docstring) into out_dir/attention.png and .svg
    (`reads`: the files the caller read, which neither figure may replace)."""
    layout = _check_request(task_name, layout, n, alphabet, seed, hops, samples)
    rows, columns = check_grid([model.heads_per_layer])
    check_figure_memory(rows, columns, prefix_length(layout) + n)
    check_not_read(
        [os.path.join(os.fsdecode(out_dir), f"{STEM}.{kind}") for kind in ("png", "svg")], reads
    )
    folder = writable_folder(out_dir)
    patterns = model_patterns(model, "", task_name, layout, n, alphabet, seed, hops, samples)
    caption = caption_text(task_name, layout, n, alphabet, seed, samples)

    def draw(fig: plt.Figure) -> str:
        draw_patterns(fig, [patterns])
        fig.suptitle(f"Attention patterns: {task_name}, n = {n}, S = {alphabet}, seed {seed}")
        return caption

    saved = save_figure(draw, folder, STEM, machine_info(with_date=True), write_atomic)
    sigma = task_characters(task_name, samples, n, alphabet, seed)[:1]
    return AttentionFigure(
        str(folder / saved["png"]),
        str(folder / saved["svg"]),
        caption,
        task_name,
        layout,
        hops,
        n,
        alphabet,
        samples,
        seed,
        tuple(int(t) for t in lay_out(sigma, layout, alphabet, hops)[0]),
        patterns.tokens,
        patterns.scores,
    )


def attention_figure_file(
    model_path: str | os.PathLike,
    out_dir: str | os.PathLike,
    task_name: str = "induction",
    layout: str | None = None,
    n: int = 16,
    alphabet: int = 4,
    seed: int = 0,
    hops: int = 1,
    samples: int = DEFAULT_SAMPLES,
) -> AttentionFigure:
    """attention_figure of a model file: the options are checked before the file is read, the folder
    before the work."""
    _check_request(task_name, layout, n, alphabet, seed, hops, samples)
    model = load_model(model_path)
    return attention_figure(
        model, out_dir, task_name, layout, n, alphabet, seed, hops, samples, (model_path,)
    )
