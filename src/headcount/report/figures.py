"""Report figures, drawn from the series that claims return (matplotlib, Agg backend).

A figure is registered with :func:`figure` and names the claim whose ClaimResult.series it plots; it
is drawn only when that claim ran and returned series. Each is saved as PNG and SVG (written
atomically) with axes in units, a caption saying what the paper predicts, and a footer with machine
and versions.
"""

from __future__ import annotations

import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.text  # noqa: E402
from matplotlib import patheffects  # noqa: E402

from headcount.report.claims import ClaimResult  # noqa: E402

FIGSIZE = (8.0, 4.5)  # inches: legible at laptop width
DPI = 150
FONT = 11  # pt; nothing smaller than 10
STYLE = {
    "font.size": FONT,
    "axes.titlesize": FONT + 1,
    "axes.labelsize": FONT,
    "legend.fontsize": 10,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "svg.fonttype": "none",
    "svg.hashsalt": "headcount",
}
# One colour per role, the same in every figure, so a reader learns it once: what a construction
# achieves, what training reached, and a bound (what no model of that class can beat).
COLOURS = {
    "construction": "tab:blue",
    "trained": "tab:red",
    "bound": "black",
    "prediction": "tab:green",  # what a paper's theorem or experiments predict (not a bound)
    "measured": "tab:purple",  # models measured that are neither built nor trained (random ones)
    "refused": "0.75",  # configurations a theorem rules out
}
# The model class a curve is about, drawn the same way in every figure (colour says the role).
LAYER_STYLE = {
    1: {"marker": "s", "ls": "--"},
    2: {"marker": "o", "ls": "-"},
    3: {"marker": "^", "ls": "-."},
}


@dataclass(frozen=True)
class FigureSpec:
    id: str
    claim: str  # the claim whose series is drawn
    draw: Callable[[plt.Figure, ClaimResult], str]  # draws into the figure, returns the caption
    # an interactive view of the same data: a self-contained HTML page (no network), written as
    # id.html beside id.png and linked from the report; None for a figure without one
    html: Callable[[ClaimResult], str] | None = None


FIGURES: dict[str, FigureSpec] = {}


def figure(
    id: str, claim: str, html: Callable[[ClaimResult], str] | None = None
) -> Callable[[Callable[[plt.Figure, ClaimResult], str]], Callable]:
    """Register the decorated draw(fig, result) -> caption as figure `id` of `claim`; `html`, when
    given, renders the interactive view of the same result (id.html)."""

    def register(fn: Callable[[plt.Figure, ClaimResult], str]) -> Callable:
        FIGURES[id] = FigureSpec(id, claim, fn, html)
        return fn

    return register


def footer_text(machine: dict[str, Any]) -> str:
    return (
        f"headcount {machine.get('headcount')} · py {machine.get('python')} · numpy "
        f"{machine.get('numpy')} · "
        f"torch {machine.get('torch')} · flint {machine.get('python_flint')} · "
        f"{machine.get('system')}, "
        f"{machine.get('cpu_count')} CPUs · {str(machine.get('date'))[:10]}"
    )


def log2_axis(ax: plt.Axes, ns: list[int]) -> None:
    ax.set_xscale("log", base=2)
    lo, hi = int(math.floor(math.log2(min(ns)))), int(math.ceil(math.log2(max(ns))))
    ticks = [2**e for e in range(lo, hi + 1)]
    if len(ticks) > 9:
        ticks = ticks[:: math.ceil(len(ticks) / 9)]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.minorticks_off()
    ax.grid(True, which="major", alpha=0.3)


def save_figure(
    draw: Callable[[plt.Figure], str],
    out_dir: Path,
    stem: str,
    machine: dict[str, Any],
    write: Callable[[Path, bytes], None],
) -> dict[str, Any]:
    """Draw one figure in the report style (size, fonts, machine footer) and write stem.png /
    stem.svg; returns {caption, png, svg, overlaps}: overlaps lists the [text, text] pairs whose
    boxes intersect as drawn (text_overlaps; empty for a clean figure)."""
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=FIGSIZE, dpi=DPI)
        try:
            caption = draw(fig)
            fig.text(
                0.01,
                0.01,
                footer_text(machine),
                fontsize=10,
                color="dimgray",
                ha="left",
                va="bottom",
            )
            fig.tight_layout(rect=(0, 0.05, 1, 1))
            overlaps = [list(pair) for pair in text_overlaps(fig)]
            files = {}
            for ext in ("png", "svg"):
                buf = io.BytesIO()
                fig.savefig(buf, format=ext, dpi=DPI, metadata=_metadata(ext))
                write(out_dir / f"{stem}.{ext}", buf.getvalue())
                files[ext] = f"{stem}.{ext}"
        finally:
            plt.close(fig)
    return {"caption": caption, **files, "overlaps": overlaps}


def render_figures(
    results: dict[str, ClaimResult],
    out_dir: Path,
    machine: dict[str, Any],
    write: Callable[[Path, bytes], None],
) -> list[dict[str, Any]]:
    """Draw every registered figure whose claim returned series; [{id, png, svg, caption,
    claim, overlaps}, plus html for a figure with an interactive view]."""
    drawn = []
    for spec in FIGURES.values():
        result = results.get(spec.claim)
        if result is None or not result.series:
            continue
        saved = save_figure(
            lambda fig, spec=spec, result=result: spec.draw(fig, result),
            out_dir,
            spec.id,
            machine,
            write,
        )
        if spec.html is not None:
            write(out_dir / f"{spec.id}.html", spec.html(result).encode("utf-8"))
            saved["html"] = f"{spec.id}.html"
        drawn.append({"id": spec.id, "claim": spec.claim, **saved})
    return drawn


def _metadata(ext: str) -> dict[str, Any]:
    # no timestamps or software URLs in the files: the same data gives the same figure
    return {"Software": None} if ext == "png" else {"Date": None, "Creator": None}


def text_overlaps(fig: plt.Figure) -> list[tuple[str, str]]:
    """Pairs of visible, non-empty texts of `fig` whose boxes, as matplotlib's renderer lays them
    out (after the figure's layout engine ran), intersect; plus (text, "outside the figure") for a
    text, or a legend's frame, that sticks out of the canvas, and (text, "legend: <its first
    label>") for a text hidden under a legend it is not part of. Cell labels of a heat map are
    texts too: two of them only collide when the cells are too small for them."""
    fig.canvas.draw()  # runs the layout engine, so the boxes are the ones saved
    renderer = fig.canvas.get_renderer()
    texts = _shown_texts(fig, renderer)
    found = []
    for i, (text, box) in enumerate(texts):
        if _sticks_out(box, fig.bbox):
            found.append((text.get_text(), "outside the figure"))
        found += [
            (text.get_text(), other.get_text())
            for other, other_box in texts[i + 1 :]
            if _intersect(box, other_box)
        ]
    for legend in _legends(fig):
        frame = legend.get_window_extent(renderer)
        own = {id(t) for t in legend.findobj(matplotlib.text.Text)}
        name = "legend: " + next((t.get_text() for t in legend.get_texts()), "")
        if _sticks_out(frame, fig.bbox):
            found.append((name, "outside the figure"))
        found += [
            (t.get_text(), name) for t, b in texts if id(t) not in own and _intersect(b, frame)
        ]
    return found


SLACK = 0.5  # pixels: boxes that only touch do not overlap


def _shown_texts(fig: plt.Figure, renderer: Any) -> list[tuple[matplotlib.text.Text, Any]]:
    """(text, its box in pixels) of every text the figure draws: visible, non-empty, not a tick
    label matplotlib keeps but leaves out."""
    hidden = _unshown_tick_labels(fig)
    texts = []
    for text in fig.findobj(matplotlib.text.Text):
        if id(text) in hidden or not text.get_visible() or not text.get_text().strip():
            continue
        box = text.get_window_extent(renderer)
        if box.width > 0 and box.height > 0:
            texts.append((text, box))
    return texts


def _intersect(a: Any, b: Any) -> bool:
    return min(a.x1, b.x1) - max(a.x0, b.x0) > SLACK and min(a.y1, b.y1) - max(a.y0, b.y0) > SLACK


def _sticks_out(box: Any, canvas: Any) -> bool:
    return (
        box.x0 < canvas.x0 - SLACK
        or box.y0 < canvas.y0 - SLACK
        or box.x1 > canvas.x1 + SLACK
        or box.y1 > canvas.y1 + SLACK
    )


def _legends(fig: plt.Figure) -> list[Any]:
    """The figure's visible legends: its own and its axes'."""
    legends = list(fig.legends) + [ax.get_legend() for ax in fig.axes]
    return [legend for legend in legends if legend is not None and legend.get_visible()]


def _unshown_tick_labels(fig: plt.Figure) -> set[int]:
    """Tick labels matplotlib keeps but does not draw: those of ticks outside the view limits."""
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            pad = (hi - lo) * 1e-9
            for tick in axis.get_major_ticks() + axis.get_minor_ticks():
                if not lo - pad <= tick.get_loc() <= hi + pad:
                    hidden.update({id(tick.label1), id(tick.label2)})
    return hidden


def staircase(ax: plt.Axes, x_centres: list[float], y_edges: list[float], **style: Any) -> None:
    """A bound drawn along the edges of a heat map's cells (each cell 1 wide, centred on its x):
    y_edges[j] is the edge under the lowest cell of column j on or above the bound, so the line
    separates cells and never crosses a cell's label. A white rim keeps it visible on dark cells."""
    xs, ys = [], []
    for x, y in zip(x_centres, y_edges):
        xs += [x - 0.5, x + 0.5]
        ys += [y, y]
    rim = [patheffects.withStroke(linewidth=style.get("lw", 2) + 2, foreground="white")]
    ax.plot(xs, ys, path_effects=rim, **style)


def cell_text(ax: plt.Axes, x: float, y: float, text: str, dark: bool) -> None:
    """A label centred in a heat-map cell, white on dark cells."""
    ax.text(x, y, text, ha="center", va="center", fontsize=10, color="white" if dark else "black")
