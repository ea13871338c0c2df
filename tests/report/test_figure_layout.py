"""Every report figure is legible as drawn: no two texts overlap, none leaves the canvas and no
legend hides one (figures.text_overlaps, boxes from matplotlib's own renderer after the layout
engine ran), no plotted line crosses a label inside the axes (cell texts), and no figure text or
caption carries an internal label instead of a paper citation.

The fast test draws the figures whose claims are cheap (recorded quick cost ≤ CHEAP_SECONDS) and do
not train models, from the claims' real results; the slow one draws every figure of a quick
reproduce run.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import matplotlib.text
import pytest

from headcount.learn.summaries import XorPhaseCell, XorPhaseSummary
from headcount.report import reproduce
from headcount.report.claim_costs import RECORDED_SECONDS
from headcount.report.claims import Context
from headcount.report.figures import DPI, FIGSIZE, FIGURES, STYLE, save_figure, text_overlaps
from headcount.report.learning import claims as learning

CHEAP_SECONDS = 15.0
# claims whose series come from trained models (a learning experiment's runs)
TRAINED = ("learning.", "induction.heads.mechanism", "induction.khop.mechanism")
# words that name this project's own bookkeeping, not the papers: a caption cites a paper instead
INTERNAL = re.compile(r"\bissues?\b|seed ?00\d|\bspec\b|spec/|\w\.md\b", re.IGNORECASE)


def _cheap_figures() -> list[str]:
    reproduce.load_claims()  # importing reproduce registered every claim and figure
    costs = RECORDED_SECONDS["quick"]
    return [
        spec.id
        for spec in FIGURES.values()
        if costs.get(spec.claim, float("inf")) <= CHEAP_SECONDS
        and not spec.claim.startswith(TRAINED)
    ]


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)


def _crosses(line: Any, box: Any) -> bool:
    """Whether a plotted line, or one of its markers, covers part of a text's box (pixels)."""
    path = line.get_transform().transform_path(line.get_path())
    drawn = line.get_linestyle() not in ("None", "", " ")
    if drawn and len(path.vertices) > 1 and path.intersects_bbox(box, filled=False):
        return True
    if line.get_marker() in (None, "None", "", " "):
        return False
    r = line.get_markersize() * line.figure.dpi / 72 / 2
    return any(
        box.x0 - r < x < box.x1 + r and box.y0 - r < y < box.y1 + r for x, y in path.vertices
    )


def _lines_through_labels(fig: plt.Figure) -> list[tuple[str, str]]:
    """(label, line) for each text placed inside an axes (a cell label, an annotation) that a
    plotted line or marker covers."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    return [
        (text.get_text(), line.get_label())
        for ax in fig.axes
        for text in ax.texts
        for line in ax.lines
        if _crosses(line, text.get_window_extent(renderer))
    ]


def _draw_and_check(draw: Any, tmp_path: Path, stem: str) -> dict[str, Any]:
    """save_figure(draw) into tmp_path, checking the figure's texts and lines before it closes;
    returns save_figure's record with the figure's texts under "texts"."""
    seen: dict[str, Any] = {}

    def checked(fig: plt.Figure) -> str:
        caption = draw(fig)
        seen["texts"] = [t.get_text() for t in fig.findobj(matplotlib.text.Text)]
        fig.tight_layout(rect=(0, 0.05, 1, 1))  # as save_figure lays it out
        seen["crossed"] = _lines_through_labels(fig)
        return caption

    saved = save_figure(checked, tmp_path, stem, {}, _write)
    return saved | seen


def _internal_labels(record: dict[str, Any]) -> list[str]:
    return [t for t in [record["caption"], *record.get("texts", [])] if INTERNAL.search(t)]


# ------------------------------------------------------------------------------------------------
# text_overlaps itself


def test_text_overlaps_finds_collisions_texts_off_the_canvas_and_under_a_legend():
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=FIGSIZE, dpi=DPI)
        ax = fig.add_subplot(1, 1, 1)
        ax.plot([0, 1], [0, 1], label="a line")
        ax.set_xlim(0, 10)  # the ticks beyond 10 have labels matplotlib does not draw
        ax.text(0.5, 0.5, "first label", transform=ax.transAxes)
        ax.text(0.53, 0.5, "second label", transform=ax.transAxes)
        ax.text(0.05, 0.9, "alone", transform=ax.transAxes)
        ax.text(0.95, 0.05, "under the legend", transform=ax.transAxes, ha="right")
        ax.legend(loc="lower right")
        fig.text(0.97, 0.5, "sticks out of the canvas")
        found = text_overlaps(fig)
        plt.close(fig)
    assert ("first label", "second label") in found
    assert ("sticks out of the canvas", "outside the figure") in found
    assert ("under the legend", "legend: a line") in found
    assert ("under the legend", "a line") in found  # the legend's own text
    assert not [pair for pair in found if "alone" in pair]
    assert len(found) == 4, found


def test_a_clean_figure_has_no_overlaps_and_save_figure_reports_them(tmp_path):
    def clean(fig: plt.Figure) -> str:
        ax = fig.add_subplot(1, 1, 1)
        ax.plot([1, 2, 3], [1, 4, 9], label="squares")
        ax.set_xlabel("x")
        ax.set_title("a title")
        ax.legend(loc="upper left")
        return "caption"

    def crowded(fig: plt.Figure) -> str:
        ax = fig.add_subplot(1, 1, 1)
        ax.text(0.5, 0.5, "one", transform=ax.transAxes)
        ax.text(0.5, 0.5, "two", transform=ax.transAxes)
        return "caption"

    assert save_figure(clean, tmp_path, "clean", {}, _write)["overlaps"] == []
    assert save_figure(crowded, tmp_path, "crowded", {}, _write)["overlaps"] == [["one", "two"]]


def test_the_internal_label_pattern():
    for text in ("see issue 31", "Seed 000 §3", "seed004", "spec/learning.md", "the spec's law"):
        assert INTERNAL.search(text), text
    for text in ("Sanford, Hsu & Telgarsky (2024b) §1", "tissue", "species", "0..S−1, ⊥"):
        assert not INTERNAL.search(text), text


# ------------------------------------------------------------------------------------------------
# the report's figures, from real claim results


def test_cheap_figures_are_cheap_and_skip_trained_claims():
    cheap = _cheap_figures()
    assert {"precision_vs_n", "size_vs_n", "index_message_bits", "xor_phase_diagram"} <= set(cheap)
    assert not [f for f in cheap if FIGURES[f].claim.startswith(TRAINED)]


@pytest.fixture(scope="module")
def claim_results() -> dict[str, Any]:
    """The cheap figures' claims, each run once at the quick scale (one Context: certificates two
    claims share are computed once)."""
    ctx = Context(scale="quick")
    claims = reproduce.load_claims()
    return {
        spec.claim: reproduce.run_claim(claims[spec.claim], ctx)
        for spec in (FIGURES[f] for f in _cheap_figures())
    }


@pytest.mark.parametrize("figure_id", _cheap_figures())
def test_figure_from_its_claim_has_no_overlaps_or_internal_labels(
    figure_id, claim_results, tmp_path
):
    spec = FIGURES[figure_id]
    result = claim_results[spec.claim]
    assert result.series, f"{spec.claim}: {result.detail}"
    record = _draw_and_check(lambda fig: spec.draw(fig, result), tmp_path, figure_id)
    assert record["overlaps"] == []
    assert record["crossed"] == []
    assert _internal_labels(record) == []


def _xor_summary(n: int = 8, values: tuple[int, ...] = (1, 2, 4, 8)) -> XorPhaseSummary:
    """A quick-sized xor-phase grid (D, H ∈ values): solved where D·H ≥ n, with constructions."""
    cells = []
    for D in values:
        for H in values:
            above = D * H >= n
            cell = XorPhaseCell(
                "xor", n, D, H, seeds=2, T=n, dim=2, below_bound=not above, solved=2 * above,
                accuracy=1.0 if above else 0.6, frontier_accuracy=1.0 if above else 0.75,
                fraction_of_frontier=1.0 if above else 0.8,
            )  # fmt: skip
            cells.append(cell.with_construction(True if above else None))
    below = [c for c in cells if c.below_bound]
    return XorPhaseSummary(cells, n, len(below), 0, len(cells) - len(below), 6, 10)


def test_xor_training_cells_read_as_words_with_no_line_across_them(tmp_path):
    record = _draw_and_check(
        lambda fig: learning.draw_xor_training(fig, _xor_summary()), tmp_path, "xor"
    )
    assert record["overlaps"] == [] and record["crossed"] == []
    assert "2 of 2 solved\n100% of best" in record["texts"]
    assert "0 of 2 solved\n80% of best" in record["texts"]
    assert not [t for t in record["texts"] if re.search(r"\bC\b|of F\b", t)]
    assert _internal_labels(record) == []


@pytest.mark.slow
def test_every_figure_of_a_quick_run_is_legible(tmp_path):
    summary = reproduce.run_reproduce("quick", out_dir=tmp_path, progress=lambda line: None)
    assert summary.figures
    for record in summary.figures:
        assert "overlaps" in record, f"{record['id']}: the figure record has no overlaps"
        assert record["overlaps"] == [], record["id"]
        assert not INTERNAL.search(record["caption"]), record["id"]
