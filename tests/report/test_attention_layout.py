"""The attention figures' layout (report/views/attention_layout.py): no two texts overlap
(report/figures.py: text_overlaps) in the report's two mechanism figures and in `analyze patterns`
of multi-layer models, up to MAX_DRAW characters, with every tick label at 10 pt or more; labels
wider than a cell stand upright, and only every k-th is printed where cells are too small.

Each figure is drawn as save_figure draws it (the report's style, DPI, footer and tight_layout) but
not written, which keeps the tests to seconds; the models are constructions and seeded random
weights, nothing is trained."""

from __future__ import annotations

from collections.abc import Callable

import matplotlib.pyplot as plt
import pytest

from headcount.common.probe import machine_info
from headcount.induction.construction import two_layer_induction
from headcount.induction.multihop.construction import khop_construction
from headcount.report.claims import PASS, ClaimResult
from headcount.report.figures import DPI, FIGSIZE, STYLE, footer_text, text_overlaps
from headcount.report.induction import khop_mechanism as km
from headcount.report.induction import mechanism as mech
from headcount.report.views.attention import MAX_DRAW, draw_patterns, model_patterns
from headcount.report.views.attention_layout import TICK_FONT, axis_ticks
from tests.report.test_attention import random_model

SAMPLES = 8  # inputs scored: the titles' scores only, not the layout


def overlaps_as_saved(draw: Callable[[plt.Figure], object]) -> list[tuple[str, str]]:
    """text_overlaps of the figure `draw` makes, laid out as save_figure lays it out."""
    with plt.rc_context(STYLE):
        fig = plt.figure(figsize=FIGSIZE, dpi=DPI)
        try:
            draw(fig)
            footer = footer_text(machine_info(with_date=True))
            fig.text(0.01, 0.01, footer, fontsize=10, ha="left", va="bottom")
            fig.tight_layout(rect=(0, 0.05, 1, 1))
            assert min(t.get_fontsize() for ax in fig.axes for t in ax.get_xticklabels()) >= 10
            return text_overlaps(fig)
        finally:
            plt.close(fig)


def induction_mechanism(draw: int) -> Callable[[plt.Figure], str]:
    """The report's induction mechanism figure: the construction beside a two-layer model."""
    n, S = 16, 4
    args = ("induction", "plain", n, S, 0, 1, SAMPLES, draw)
    built = model_patterns(two_layer_induction(n, S), "construction", *args)
    other = model_patterns(random_model(2, 2, S, n, S), "trained", *args)
    run = mech.TrainedModel("run-1", {"heads": 2, "dim": 6, "seed": 0}, 0.99, None)
    series = mech.Mechanism(built, other, run, n, S, SAMPLES, True)
    return lambda fig: mech.draw_mechanism(fig, ClaimResult({}, PASS, "", series))


def khop_series(n: int, S: int, K: int, layers: int, heads: int) -> km.KhopMechanism:
    """The report's k-hop mechanism series: khop_construction(n, S, K) beside a hop-prefix model."""
    built = model_patterns(
        khop_construction(n, S, K), "construction", "khop", "plain", n, S, 0, K, SAMPLES
    )
    other = model_patterns(
        random_model(layers, heads, S + K, n + 1, S),
        "trained",
        "khop",
        "hop-prefix",
        n,
        S,
        0,
        K,
        SAMPLES,
    )
    config = {"n": n, "alphabet": S, "hops": K, "layers": layers, "heads": heads, "seed": 0}
    run = km.TrainedKhop("run-1", config, {K: 0.1}, None)
    return km.KhopMechanism(built, other, run, km.built_roles(n, S, K), n, S, K, SAMPLES, True)


def khop_mechanism(series: km.KhopMechanism) -> Callable[[plt.Figure], str]:
    return lambda fig: km.draw_khop_mechanism(fig, ClaimResult({}, PASS, "", series))


def patterns(model, n: int, S: int, layout: str = "plain") -> Callable[[plt.Figure], None]:
    """`analyze patterns`' figure of `model` (attention_files.attention_figure's drawing, without
    the files)."""
    panels = model_patterns(model, "", "induction", layout, n, S, 0, 2, SAMPLES)
    return lambda fig: draw_patterns(fig, [panels], f"Attention patterns: induction, n = {n}")


def test_the_induction_mechanism_figure_has_no_overlapping_text():
    assert overlaps_as_saved(induction_mechanism(16)) == []


def test_the_khop_mechanism_figure_has_no_overlapping_text():
    # the quick report's: k = 4 and 4 layers × 2 heads beside the construction's 4 layers
    assert overlaps_as_saved(khop_mechanism(khop_series(16, 4, 4, 4, 2))) == []


@pytest.mark.parametrize(
    "case",
    [
        "two-layer construction, n = MAX_DRAW",
        "two-layer construction, n = 8",
        "2 layers × 3 heads, hop-prefix, S = 12, n = MAX_DRAW",
        "one head, n = 6",
    ],
)
def test_analyze_patterns_of_multi_layer_models_has_no_overlapping_text(case):
    draw = {
        "two-layer construction, n = MAX_DRAW": lambda: patterns(
            two_layer_induction(MAX_DRAW, 4), MAX_DRAW, 4
        ),
        "two-layer construction, n = 8": lambda: patterns(two_layer_induction(8, 4), 8, 4),
        # two-digit symbols and the hop token "k=2": labels wider than their cells
        "2 layers × 3 heads, hop-prefix, S = 12, n = MAX_DRAW": lambda: patterns(
            random_model(2, 3, 12 + 2, MAX_DRAW + 1, 12), MAX_DRAW, 12, "hop-prefix"
        ),
        "one head, n = 6": lambda: patterns(random_model(1, 1, 4, 6, 4), 6, 4),
    }[case]()
    assert overlaps_as_saved(draw) == []


def test_wide_labels_stand_upright_and_small_cells_label_every_kth_token():
    fig = plt.figure(dpi=DPI)
    tokens = ["k=2"] + [str(s) for s in range(12)] * 2
    ticks = axis_ticks(fig, tokens, 0.16 * len(tokens))
    assert ticks.positions == tuple(range(len(tokens)))  # 10 pt labels in 11.5 pt cells
    assert ticks.upright == {0} | {i for i, t in enumerate(tokens) if len(t) == 2}
    crowded = axis_ticks(fig, tokens, 0.06 * len(tokens))  # 4.3 pt cells: every third label
    assert crowded.positions == tuple(range(0, len(tokens), 3))
    assert TICK_FONT >= 10
    plt.close(fig)
