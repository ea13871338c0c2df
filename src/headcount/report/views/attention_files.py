"""`headcount analyze patterns`: a model's attention heat maps on one input (report/views/
attention.py) written as attention.png and attention.svg in the report's style, and as the
interactive attention.html (report/views/attention_html.py), with the JSON result: the files, the
input drawn, its tokens and every head's scores. Every option is checked before the model file is
read, the output folder before the work, and the drawing's memory before it is drawn.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt

from headcount.common.jsonable import JsonResult
from headcount.common.probe import machine_info
from headcount.common.resources import check_memory
from headcount.common.validate import check_choice, check_int, check_not_read, writable_folder
from headcount.core.certify import Model
from headcount.core.model import load_model
from headcount.induction.heads import DEFAULT_SAMPLES, MAX_SAMPLES, HeadScore
from headcount.induction.layouts import (
    DEFAULT_LAYOUT,
    LAYOUTS,
    TASKS,
    check_hops,
    lay_out,
    prefix_length,
    task_characters,
)
from headcount.report.figures import DPI, FIGSIZE, save_figure
from headcount.report.render import write_atomic
from headcount.report.views.attention import MAX_DRAW, check_grid, draw_patterns, model_patterns
from headcount.report.views.attention_html import patterns_html
from headcount.report.views.attention_layout import panel_inches

STEM = "attention"  # analyze patterns writes out_dir/attention.png, .svg and .html


def check_figure_memory(rows: int, columns: int, length: int) -> None:
    """The guard before drawing: the canvas (RGBA at DPI, each panel with an inch and a half of
    labels) and matplotlib's copies of it."""
    side = (panel_inches(length) + 1.5) * DPI
    width = max(side * columns + 1.5 * DPI, FIGSIZE[0] * DPI)
    check_memory(3 * 4.0 * width * (side * rows + 1.5 * DPI), "drawing the attention figure")


@dataclass(frozen=True)
class AttentionFigure(JsonResult):
    """analyze patterns' result: the files written (the PNG, the SVG and the interactive page), the
    input drawn (laid-out token ids and their axis labels) and every head's scores."""

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
    html: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "files": {"png": self.png, "svg": self.svg, "html": self.html},
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
    """Draw `model`'s attention on one input (module docstring) into out_dir/attention.png and .svg,
    and the same panels into the interactive out_dir/attention.html (`reads`: the files the caller
    read, which none of them may replace)."""

    layout = _check_request(task_name, layout, n, alphabet, seed, hops, samples)
    rows, columns = check_grid([model.heads_per_layer])
    check_figure_memory(rows, columns, prefix_length(layout) + n)
    check_not_read(
        [os.path.join(os.fsdecode(out_dir), f"{STEM}.{kind}") for kind in ("png", "svg", "html")],
        reads,
    )
    folder = writable_folder(out_dir)
    patterns = model_patterns(model, "", task_name, layout, n, alphabet, seed, hops, samples)
    caption = caption_text(task_name, layout, n, alphabet, seed, samples)
    title = f"Attention patterns: {task_name}, n = {n}, S = {alphabet}, seed {seed}"

    def draw(fig: plt.Figure) -> str:
        draw_patterns(fig, [patterns], title)
        return caption

    saved = save_figure(draw, folder, STEM, machine_info(with_date=True), write_atomic)
    page = folder / f"{STEM}.html"
    write_atomic(page, patterns_html([patterns], title, caption).encode("utf-8"))
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
        str(page),
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
