"""The layout of the attention heat maps (report/views/attention.py): square panels, tick labels
that fit their cells, and room for every title and label, so that no two texts of the figure
overlap (report/figures.py: text_overlaps).

matplotlib's tight_layout — the one report/figures.py's save_figure runs after drawing — measures
each panel's decorations against its grid slot. An equal-aspect heat map fills only one side of a
slot that is not square, so a single tight_layout pass over such slots mismeasures them: a row's
titles then print over the row above. `fit_layout` makes every slot a square first, so what
tight_layout measures is what is drawn, and then sizes the figure to exactly the room it measured:
save_figure's pass finds the same layout.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib
import matplotlib.pyplot as plt
from matplotlib.gridspec import GridSpec
from matplotlib.text import Text

from headcount.report.figures import FIGSIZE

# A cell per token, CELL_INCHES (11.5 pt) a side: a TICK_FONT label is 10 pt tall and a digit
# 6.2 pt wide, so one-character labels fit side by side on both axes.
CELL_INCHES = 0.16
MIN_SIDE = 3.0  # inches: a panel's title at 11 pt ("layer 0 head 1: duplicate_token")
TICK_FONT = 10  # pt: the report's smallest
LABEL_GAP = 1.0  # pt between neighbouring tick labels
BAR_RATIO = 0.06  # the colour bar's width, in panel sides
FOOTER = 0.05  # the bottom strip save_figure's tight_layout keeps for the footer (its rect)
ROOM = 1.5  # inches around and between the panels while their decorations are measured
PAD = 1.08  # tight_layout's padding, in font sizes


def panel_inches(length: int) -> float:
    """A panel's side (its axes, without labels): CELL_INCHES a token, at least MIN_SIDE."""
    return max(MIN_SIDE, CELL_INCHES * length)


def text_points(fig: plt.Figure, text: str, size: float) -> tuple[float, float]:
    """(width, height) in points of `text` at `size` pt, as fig's renderer lays it out."""
    probe = fig.text(0, 0, text, fontsize=size)
    box = probe.get_window_extent(fig.canvas.get_renderer())
    probe.remove()
    return box.width * 72 / fig.dpi, box.height * 72 / fig.dpi


@dataclass(frozen=True)
class Ticks:
    """The positions labelled on both axes of a panel, and the x labels drawn upright."""

    positions: tuple[int, ...]
    upright: frozenset[int]


def axis_ticks(fig: plt.Figure, tokens: Sequence[str], side: float) -> Ticks:
    """Which of `tokens` label a panel `side` inches wide: an x label wider than its cell is turned
    upright, and only every k-th token is labelled where the labels are taller than the cells."""
    pitch = side * 72 / len(tokens)
    sizes = {t: text_points(fig, t, TICK_FONT) for t in set(tokens)}
    upright = frozenset(i for i, t in enumerate(tokens) if sizes[t][0] + LABEL_GAP > pitch)
    along = max(h for _, h in sizes.values())  # upright x labels and y labels alike
    along = max([along] + [sizes[t][0] for i, t in enumerate(tokens) if i not in upright])
    step = max(1, math.ceil((along + LABEL_GAP) / pitch))
    return Ticks(tuple(range(0, len(tokens), step)), upright)


def label_axes(ax: plt.Axes, tokens: Sequence[str], ticks: Ticks) -> None:
    """Put `ticks`' token labels on both axes of `ax`."""
    labels = [tokens[i] for i in ticks.positions]
    ax.set_xticks(ticks.positions, labels, fontsize=TICK_FONT)
    ax.set_yticks(ticks.positions, labels, fontsize=TICK_FONT)
    for i, label in zip(ticks.positions, ax.get_xticklabels()):
        if i in ticks.upright:
            label.set_rotation(90)
    ax.tick_params(length=2, pad=2)


def wrapped(fig: plt.Figure, text: str, size: float, width: float) -> str:
    """`text` broken at spaces into lines at most `width` points wide at `size` pt (a word wider
    than that on a line of its own)."""
    lines: list[str] = []
    for word in text.split(" "):
        trial = f"{lines[-1]} {word}" if lines else word
        if lines and text_points(fig, trial, size)[0] <= width:
            lines[-1] = trial
        else:
            lines.append(word)
    return "\n".join(lines)


@dataclass(frozen=True)
class Margins:
    """Room around and between a grid's slots, in inches: left, right, top, bottom (above the
    footer strip), between columns and between rows."""

    left: float
    right: float
    top: float
    bottom: float
    columns: float
    rows: float


def place_grid(fig: plt.Figure, grid: GridSpec, side: float, room: Margins) -> None:
    """Size `fig` and place `grid` so that every slot is a square of `side` inches (the last column,
    the colour bar's, BAR_RATIO as wide) with `room` around and between them, above the FOOTER
    strip."""
    rows, columns = grid.get_geometry()
    slots = side * (columns - 1 + BAR_RATIO)
    width = room.left + room.right + slots + room.columns * (columns - 1)
    height = (room.top + room.bottom + side * rows + room.rows * (rows - 1)) / (1 - FOOTER)
    fig.set_size_inches(width, height)
    # the figure's subplot parameters, not the grid's own: tight_layout leaves out a grid with those
    fig.subplots_adjust(
        left=room.left / width,
        right=1 - room.right / width,
        bottom=FOOTER + room.bottom / height,
        top=1 - room.top / height,
        wspace=room.columns / (slots / columns),  # gridspec's: relative to the mean slot width
        hspace=room.rows / side,
    )


def measured_margins(fig: plt.Figure, grid: GridSpec) -> Margins:
    """The room `grid`'s slots have in `fig` now, in inches."""
    width, height = fig.get_size_inches()
    bottoms, tops, lefts, rights = grid.get_grid_positions(fig)
    return Margins(
        lefts[0] * width,
        (1 - rights[-1]) * width,
        (1 - tops[0]) * height,
        (bottoms[-1] - FOOTER) * height,
        (lefts[1] - rights[0]) * width,
        (bottoms[0] - tops[1]) * height if len(tops) > 1 else 0.0,
    )


def pad_inches() -> float:
    """tight_layout's padding around and between the panels, in inches."""
    return PAD * matplotlib.rcParams["font.size"] / 72


def fit_layout(fig: plt.Figure, grid: GridSpec, side: float, title: Text | None) -> None:
    """Lay `grid`'s panels out as save_figure's tight_layout will find them (module docstring): with
    square slots, tight_layout's room, then the figure sized to it — the panels widened to fill
    FIGSIZE's width (the footer's) where they are narrower; `title` (the figure's suptitle) one
    tight_layout pad below the top edge, where tight_layout keeps room for it."""
    place_grid(fig, grid, side, Margins(*[ROOM] * 6))
    fig.tight_layout(rect=(0, FOOTER, 1, 1))
    room = measured_margins(fig, grid)
    columns = grid.get_geometry()[1]
    fixed = room.left + room.right + room.columns * (columns - 1)
    place_grid(fig, grid, max(side, (FIGSIZE[0] - fixed) / (columns - 1 + BAR_RATIO)), room)
    if title is not None:
        title.set_y(1 - pad_inches() / fig.get_size_inches()[1])
