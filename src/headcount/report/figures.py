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


@dataclass(frozen=True)
class FigureSpec:
    id: str
    claim: str  # the claim whose series is drawn
    draw: Callable[[plt.Figure, ClaimResult], str]  # draws into the figure, returns the caption


FIGURES: dict[str, FigureSpec] = {}


def figure(id: str, claim: str) -> Callable[[Callable[[plt.Figure, ClaimResult], str]], Callable]:
    def register(fn: Callable[[plt.Figure, ClaimResult], str]) -> Callable:
        FIGURES[id] = FigureSpec(id, claim, fn)
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
    stem.svg; returns {caption, png, svg}."""
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
            files = {}
            for ext in ("png", "svg"):
                buf = io.BytesIO()
                fig.savefig(buf, format=ext, dpi=DPI, metadata=_metadata(ext))
                write(out_dir / f"{stem}.{ext}", buf.getvalue())
                files[ext] = f"{stem}.{ext}"
        finally:
            plt.close(fig)
    return {"caption": caption, **files}


def render_figures(
    results: dict[str, ClaimResult],
    out_dir: Path,
    machine: dict[str, Any],
    write: Callable[[Path, bytes], None],
) -> list[dict[str, Any]]:
    """Draw every registered figure whose claim returned series; [{id, png, svg, caption,
    claim}]."""
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
        drawn.append({"id": spec.id, "claim": spec.claim, **saved})
    return drawn


def _metadata(ext: str) -> dict[str, Any]:
    # no timestamps or software URLs in the files: the same data gives the same figure
    return {"Software": None} if ext == "png" else {"Date": None, "Creator": None}


def cell_text(ax: plt.Axes, x: float, y: float, text: str, dark: bool) -> None:
    """A label centred in a heat-map cell, white on dark cells."""
    ax.text(x, y, text, ha="center", va="center", fontsize=10, color="white" if dark else "black")
