"""Attention-pattern figures (report/views/attention.py, `headcount analyze patterns`): the tokens
on the axes (as the command line prints them), one panel per head with its pattern on the first
scored input, the causal triangle blank, one colour scale, square panels, PNG + SVG + HTML files,
the side-by-side of two models, and the refusals. The layout's overlaps:
test_attention_layout.py; the interactive page: test_attention_html.py."""

from __future__ import annotations

import json

import matplotlib.pyplot as plt
import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.certify.evaluate import attention_patterns
from headcount.core.model import AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.files import save_model
from headcount.induction.construction import build_construction
from headcount.induction.heads import analyze_heads
from headcount.induction.layouts import lay_out, task_characters
from headcount.report.views.attention import (
    MAX_COLUMNS,
    answer_labels,
    draw_patterns,
    model_patterns,
    panel_title,
    token_labels,
)
from headcount.report.views.attention_files import attention_figure
from headcount.report.views.attention_layout import panel_inches
from tests.cli_run import refused, run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def random_model(
    layers: int, heads: int, vocab: int, n_ctx: int, alphabet: int, seed: int = 0
) -> Transformer:
    """A plain causal model with seeded random weights (d_model 6, d_head 3)."""
    rng = np.random.default_rng(seed)
    w = lambda *shape: rng.normal(size=shape)
    layer = lambda: Layer(
        tuple(AttentionHead(w(6, 3), w(6, 3), w(6, 3), w(3, 6)) for _ in range(heads))
    )
    decoder = LinearDecoder(w(6, alphabet + 1), np.zeros(alphabet + 1))
    return Transformer(w(vocab, 6), w(n_ctx, 6), tuple(layer() for _ in range(layers)), decoder)


def test_tokens_are_numbers_and_the_hop_token_as_the_cli_prints_them():
    sigma = np.array([2, 0, 1, 11])
    assert token_labels(sigma, "plain", 12, 1) == ("2", "0", "1", "11")
    assert token_labels(sigma, "hop-prefix", 12, 4) == ("k=4", "2", "0", "1", "11")
    # the answers at the query positions: ⊥ as `induction solve` prints it, none at the hop token
    sigma = np.array([0, 1, 0, 1, 2])
    assert answer_labels(sigma, "plain", 1) == ("⊥", "⊥", "1", "0", "⊥")
    assert answer_labels(sigma, "hop-prefix", 2) == ("", "⊥", "⊥", "⊥", "1", "⊥")


def test_patterns_are_the_first_scored_input_cropped():
    model = build_construction(2, 12, 3)
    full = model_patterns(model, "construction", n=12, alphabet=3, seed=5, samples=32)
    sigma = task_characters("induction", 32, 12, 3, 5)[:1]
    expected = [
        layer[0, h] for layer in attention_patterns(model, sigma) for h in range(layer.shape[1])
    ]
    assert len(full.patterns) == 3 and full.heads_per_layer == (2, 1) and full.causal
    assert all(np.array_equal(a, b) for a, b in zip(full.patterns, expected))
    assert full.tokens == tuple(str(s) for s in sigma[0])
    assert full.answers == answer_labels(sigma[0], "plain", 1)
    assert full.scores == tuple(analyze_heads(model, n=12, alphabet=3, samples=32, seed=5).heads)
    cropped = model_patterns(model, "construction", n=12, alphabet=3, seed=5, samples=32, draw=5)
    assert cropped.tokens == full.tokens[:5] and cropped.scores == full.scores
    assert all(np.array_equal(c, f[:5, :5]) for c, f in zip(cropped.patterns, full.patterns))
    assert panel_title(full.scores[0]).startswith("layer 0 head 0: previous_token\nprevious 1.00")


def _images(fig: plt.Figure) -> list:
    return [im for ax in fig.axes for im in ax.images]


def test_one_panel_per_head_blank_triangle_and_one_scale():
    model = build_construction(2, 8, 3)
    patterns = model_patterns(model, "", n=8, alphabet=3, samples=16)
    fig = plt.figure()
    draw_patterns(fig, [patterns])
    heat = _images(fig)
    assert len(heat) == 3 and len(fig.axes) == 3 + 1  # three heads and the colour bar
    titles = [ax.get_title() for ax in fig.axes if ax.images]
    assert [t.split("\n")[0] for t in titles] == [
        "layer 0 head 0: previous_token",
        "layer 0 head 1: duplicate_token",
        "layer 1 head 0: induction",
    ]
    for im, pattern in zip(heat, patterns.patterns):
        data = np.ma.getdata(im.get_array())
        upper = np.triu_indices(8, 1)
        assert np.isnan(data[upper]).all() and np.array_equal(
            data[np.tril_indices(8)], pattern[np.tril_indices(8)]
        )
        assert im.get_clim() == (0.0, 1.0)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == list(patterns.tokens) and all(label.isdigit() for label in labels)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == labels
    plt.close(fig)


def test_two_models_side_by_side():
    built = model_patterns(build_construction(2, 8, 3), "construction", n=8, alphabet=3, samples=16)
    other = model_patterns(random_model(2, 1, 3, 8, 3), "trained", n=8, alphabet=3, samples=16)
    fig = plt.figure()
    draw_patterns(fig, [built, other])
    assert len(_images(fig)) == 3 + 2
    ylabels = [ax.get_ylabel() for ax in fig.axes if ax.get_ylabel()]
    assert ylabels[:2] == ["construction\nquery", "construction\nquery"]
    assert "trained\nquery" in ylabels
    # square panels of one size: the smallest (8 tokens), widened to fill the footer's 8 inches
    width, height = fig.get_size_inches()
    sides = {
        (round(ax.get_position().width * width, 6), round(ax.get_position().height * height, 6))
        for ax in fig.axes
        if ax.images
    }
    (side,) = {w for w, _ in sides}
    assert sides == {(side, side)} and side == pytest.approx(panel_inches(8))
    plt.close(fig)


def test_figure_files_and_json(tmp_path):
    model = random_model(1, 2, 3 + 2, 6, 3)  # hop tokens 3, 4: the hop-prefix layout
    result = attention_figure(
        model, tmp_path / "out", "khop", None, 5, 3, seed=1, hops=2, samples=8
    )
    got = result.to_json()
    assert got["files"] == {
        "png": str(tmp_path / "out/attention.png"),
        "svg": str(tmp_path / "out/attention.svg"),
        "html": str(tmp_path / "out/attention.html"),
    }
    page = (tmp_path / "out/attention.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count('<table class="grid"') == 2
    assert (tmp_path / "out/attention.png").read_bytes()[:8] == PNG_MAGIC
    assert (tmp_path / "out/attention.svg").read_text().lstrip().startswith("<?xml")
    sigma = task_characters("khop", 8, 5, 3, 1)[:1]
    assert got["input"] == lay_out(sigma, "hop-prefix", 3, 2)[0].tolist() and got["input"][0] == 4
    assert got["tokens"][0] == "k=2" and len(got["tokens"]) == 6
    assert (got["layout"], got["n"], got["samples"], len(got["heads"])) == ("hop-prefix", 5, 8, 2)
    assert "the first of 8 inputs" in got["caption"]


def test_refusals(tmp_path):
    model = build_construction(2, 8, 3)
    with pytest.raises(InputError, match="^n must be ≤ 32") as err:
        attention_figure(model, tmp_path, n=33)
    assert err.value.param == "n"
    with pytest.raises(InputError, match="characters drawn must be ≤ 8"):
        model_patterns(model, "", n=8, alphabet=3, draw=9)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is not a folder"):
        attention_figure(model, tmp_path / "file", n=8, alphabet=3)
    with pytest.raises(InputError, match="cannot be made"):
        attention_figure(model, tmp_path / "file" / "sub", n=8, alphabet=3)
    with pytest.raises(InputError, match="empty"):
        attention_figure(model, "", n=8, alphabet=3)
    with pytest.raises(InputError, match="context holds 8"):
        attention_figure(model, tmp_path, n=9, alphabet=3)
    wide = random_model(1, MAX_COLUMNS + 1, 3, 4, 3)
    with pytest.raises(InputError, match="at most 12 layers and 12 heads"):
        attention_figure(wide, tmp_path / "wide", n=4, alphabet=3, samples=4)
    assert not list(tmp_path.glob("*.png"))


def test_cli_writes_the_figure_and_refuses_bad_options(capsys, tmp_path):
    path = tmp_path / "two.safetensors"
    save_model(build_construction(2, 8, 3), path)
    out = tmp_path / "figs"
    base = ("analyze", "patterns", "--model", str(path), "--out", str(out))
    code, stdout, err = run(
        capsys, *base, "--n", "8", "--alphabet", "3", "--samples", "16", "--json"
    )
    assert code == 0, err
    got = json.loads(stdout)
    assert [h["role"] for h in got["heads"]] == ["previous_token", "duplicate_token", "induction"]
    assert (out / "attention.png").stat().st_size > 1000 and (out / "attention.svg").exists()
    assert got["files"]["html"] == str(out / "attention.html") and (out / "attention.html").exists()
    assert got["tokens"] == [str(t) for t in got["input"]]
    code, stdout, err = run(capsys, *base, "--n", "8", "--alphabet", "3", "--samples", "16")
    assert code == 0 and stdout.strip().endswith(
        "L0H0 previous_token, L0H1 duplicate_token, L1H0 induction"
    )
    refused(capsys, *base, "--n", "40", needles=("--n must be ≤ 32",))
    refused(capsys, *base, "--n", "8", "--task", "hop", needles=("--task",))
    refused(capsys, *base, "--n", "8", "--samples", "0", needles=("--samples must be ≥ 1",))
    refused(capsys, *base[:-1], str(path), "--n", "8", needles=("is not a folder",))
    missing = str(tmp_path / "missing.safetensors")
    refused(
        capsys, "analyze", "patterns", "--model", missing, "--out", str(out), needles=("missing",)
    )


def test_an_overflowing_model_draws_blank_cells_not_a_crash(capsys, tmp_path):
    """Weights of 1e308 overflow the float64 pass: the weights are NaN (float64's answer), which the
    PNG paints blank and the HTML leaves blank — no warning, no internal error (a fuzz finding)."""
    import dataclasses

    model = build_construction(2, 8, 3)
    path = tmp_path / "big.safetensors"
    save_model(dataclasses.replace(model, W_E=np.full_like(model.W_E, 1e308)), path)
    code, _, err = run(
        capsys, "analyze", "patterns", "--model", str(path), "--n", "8", "--alphabet", "3",
        "--out", str(tmp_path / "fig"), "--json",
    )  # fmt: skip
    assert code == 0 and "Warning" not in err and "internal error" not in err, err
    html = next((tmp_path / "fig").glob("*.html")).read_text(encoding="utf-8")
    assert "data-w=nan" in html
