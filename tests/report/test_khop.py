"""report/learning/khop.py: its claims are registered through CLAIM_MODULES, `headcount experiment`
finds its drawings, and the figures label every cell with its error and certified precision."""

from __future__ import annotations

import matplotlib.pyplot as plt

from headcount.learn.summaries import summarize_khop
from headcount.report.figures import FIGURES, save_figure
from headcount.report.learning import claims as learning
from headcount.report.learning import khop
from headcount.report.reproduce import CLAIM_MODULES, load_claims


def summary(errors: dict[int, list[float]], bits: dict[tuple[int, int], int] | None):
    rows = []
    for L, row in errors.items():
        metrics = {"accuracy_by_hop": {str(k): 1 - e for k, e in enumerate(row, 1)}}
        if bits is not None:
            metrics["certificates_by_hop"] = {
                str(k): {
                    "precision_bits": bits.get((L, k)),
                    "certified": (L, k) in bits,
                    "dtypes_exact": [],
                }
                for k in range(1, len(row) + 1)
            }
        rows.append({"config": {"layers": L}, "metrics": metrics})
    return summarize_khop(rows)


GPT2 = summary({2: [0.001, 0.6], 3: [0.0, 0.02]}, {(2, 1): 5, (3, 1): 3, (3, 2): 7})
ATTENTION = summary({2: [0.002, 0.7], 3: [0.0, 0.5]}, None)


def texts(fig: plt.Figure) -> list[list[str]]:
    """The cell labels of each heat map of the figure (the colour bar's axes have none)."""
    return [[t.get_text() for t in ax.texts] for ax in fig.axes if ax.texts]


def test_registered_through_claim_modules():
    assert khop in CLAIM_MODULES
    claims = load_claims()
    assert (
        claims["learning.khop.depth"].module
        == claims["learning.khop.gpt2"].module
        == "headcount.report.learning.khop"
    )
    assert FIGURES["learning_khop_gpt2"].claim == "learning.khop.gpt2"
    assert FIGURES["learning_khop_heatmap"].claim == "learning.khop.depth"
    assert (
        learning.DRAW["khop"] is khop.draw_khop
        and learning.DRAW["khop-gpt2"] is khop.draw_khop_gpt2
    )


def test_comparison_labels_error_and_precision(tmp_path):
    fig = plt.figure()
    caption = khop.draw_comparison(fig, khop.KhopComparison(GPT2, ATTENTION))
    attention, gpt2 = texts(fig)
    # cells in imshow order (row L = 2 first): error % and, where measured, p (— : not certified)
    assert attention == ["0.2", "70.0", "0.0", "50.0"]  # attention-only runs without certificates
    assert gpt2 == ["0.1\np=5", "60.0\n—", "0.0\np=3", "2.0\np=7"]
    assert "p = the smallest fixed:p" in caption and "Sanford, Hsu & Telgarsky" in caption
    plt.close(fig)
    fig = plt.figure()
    khop.draw_comparison(
        fig, khop.KhopComparison(GPT2, None)
    )  # attention-only not measured: one panel
    assert texts(fig) == [gpt2]
    plt.close(fig)
    saved = save_figure(
        lambda f: khop.draw_comparison(f, khop.KhopComparison(GPT2, ATTENTION)),
        tmp_path,
        "cmp",
        {},
        lambda path, data: path.write_bytes(data),
    )
    assert (tmp_path / saved["png"]).stat().st_size > 1000 and saved["caption"] == caption


def test_single_heat_maps():
    fig = plt.figure()
    caption = khop.draw_khop(fig, ATTENTION)
    assert texts(fig) == [["0.2", "70.0", "0.0", "50.0"]] and "p = " not in caption
    plt.close(fig)
    fig = plt.figure()
    caption = khop.draw_khop_gpt2(fig, GPT2)
    assert (
        texts(fig)[0][1] == "60.0\n—" and "GPT-2-style" in caption and "p = the smallest" in caption
    )
    plt.close(fig)
    fig = plt.figure()
    assert khop.draw_comparison(fig, khop.KhopComparison(summarize_khop([]), None)) == (
        "No k-hop runs were measured."
    )
    plt.close(fig)
