"""Tests for the one-layer table form (headcount.core.model.table)."""

from __future__ import annotations

import numpy as np
import pytest

from headcount.core.certify.evaluate import certified_predict, predict
from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.table import OneLayerTable, table_from_weights
from headcount.core.numbers.precision import EXACT, FLOAT64, fixed
from headcount.core.passes.forward import residual_stream
from headcount.core.passes.table_form import table_residual, table_residual_bounds
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.readout import InductionReadoutDecoder
from headcount.induction.task import all_sequences, induction_targets


def random_one_layer(
    seed: int, mask: str, heads: int = 3, with_mlp: bool = False, layers: int = 1
) -> Transformer:
    rng = np.random.default_rng(seed)
    d = int(rng.integers(2, 7))
    n_ctx = int(rng.integers(2, 8))
    alphabet = int(rng.integers(2, 5))
    layer_list = []
    for _ in range(layers):
        hs = []
        for _ in range(heads):
            d_head, d_value = (
                int(rng.integers(1, 5)),
                int(rng.integers(1, 5)),
            )  # heads of different widths
            hs.append(
                AttentionHead(
                    rng.normal(size=(d, d_head)),
                    rng.normal(size=(d, d_head)),
                    rng.normal(size=(d, d_value)),
                    rng.normal(size=(d_value, d)),
                )
            )
        mlp = (
            MLP(
                rng.normal(size=(d, 3)),
                rng.normal(size=3),
                rng.normal(size=(3, d)),
                rng.normal(size=d),
            )
            if with_mlp
            else None
        )
        layer_list.append(Layer(tuple(hs), mlp))
    decoder = LinearDecoder(rng.normal(size=(d, alphabet + 1)), rng.normal(size=alphabet + 1))
    return Transformer(
        rng.normal(size=(alphabet, d)),
        rng.normal(size=(n_ctx, d)),
        tuple(layer_list),
        decoder,
        mask,
        {"seed": seed},
    )


@pytest.mark.parametrize("mask", ["causal", "full"])
@pytest.mark.parametrize("seed", range(12))
def test_table_from_weights_agrees_with_weight_form(seed, mask):
    model = random_one_layer(seed, mask, heads=1 + seed % 3)
    table = table_from_weights(model)
    assert isinstance(table, OneLayerTable)
    assert (
        table.n_ctx == model.n_ctx
        and table.alphabet == model.alphabet
        and table.d_model == model.d_model
    )
    assert table.heads_per_layer == model.heads_per_layer
    assert table.mask == mask and table.decoder is model.decoder
    assert table.info == model.info and table.info is not model.info
    assert table.size(7) == model.size(7)
    rng = np.random.default_rng(100 + seed)
    tokens = rng.integers(0, model.alphabet, size=(64, model.n_ctx))
    x_weights = residual_stream(model, tokens, FLOAT64)
    x_table = table_residual(table, tokens, FLOAT64)
    np.testing.assert_allclose(x_table, x_weights, rtol=1e-12, atol=1e-12)
    # prefixes too
    short = tokens[:, : max(1, model.n_ctx - 1)]
    np.testing.assert_allclose(
        table_residual(table, short), residual_stream(model, short), rtol=1e-12, atol=1e-12
    )
    # predictions agree except where two logits are within rounding of each other
    logits = x_weights @ model.decoder.W_U + model.decoder.b_U
    top2 = np.sort(logits, axis=-1)[..., -2:]
    clear = top2[..., 1] - top2[..., 0] > 1e-9
    np.testing.assert_array_equal(predict(table, tokens)[clear], predict(model, tokens)[clear])


def test_table_from_weights_table_entries():
    model = random_one_layer(3, "causal", heads=2)
    table = table_from_weights(model)
    i, s = 1, 0
    embed = model.W_E[s] + model.W_pos[i]
    np.testing.assert_array_equal(table.embed[i, s], embed)
    for h, head in enumerate(model.layers[0].heads):
        w = head.W_Q.shape[1]
        np.testing.assert_allclose(table.Q[h, i, s, :w], embed @ head.W_Q, rtol=1e-14)
        np.testing.assert_allclose(table.K[h, i, s, :w], embed @ head.W_K, rtol=1e-14)
        np.testing.assert_array_equal(table.Q[h, :, :, w:], 0.0)  # narrower heads are zero-padded
        np.testing.assert_allclose(table.V[h, i, s], embed @ head.W_V @ head.W_O, rtol=1e-13)


@pytest.mark.parametrize(
    "kwargs", [{"layers": 2}, {"with_mlp": True}, {"layers": 2, "with_mlp": True}, {"layers": 0}]
)
def test_table_from_weights_refuses_other_models(kwargs):
    model = random_one_layer(5, "causal", **kwargs)
    with pytest.raises(ValueError, match="one-layer"):
        table_from_weights(model)


def test_table_from_weights_refuses_the_two_layer_construction():
    with pytest.raises(ValueError):
        table_from_weights(two_layer_induction(4, 2))


def test_table_constructor_validates_shapes():
    embed = np.zeros((3, 2, 4))
    Q = np.zeros((1, 3, 2, 1))
    dec = LinearDecoder(np.zeros((4, 3)), np.zeros(3))
    OneLayerTable(embed, Q, Q, np.zeros((1, 3, 2, 4)), dec)
    with pytest.raises(ValueError):
        OneLayerTable(
            embed, Q, np.zeros((1, 3, 2, 2)), np.zeros((1, 3, 2, 4)), dec
        )  # Q, K widths differ
    with pytest.raises(ValueError):
        OneLayerTable(embed, Q, Q, np.zeros((1, 3, 2, 3)), dec)  # V not in R^d_model
    with pytest.raises(ValueError):
        OneLayerTable(embed, Q, Q, np.zeros((2, 3, 2, 4)), dec)  # V has a different head count
    with pytest.raises(ValueError):
        OneLayerTable(
            embed, np.zeros((1, 4, 2, 1)), np.zeros((1, 4, 2, 1)), np.zeros((1, 4, 2, 4)), dec
        )
    with pytest.raises(ValueError, match="mask"):
        OneLayerTable(embed, Q, Q, np.zeros((1, 3, 2, 4)), dec, "sideways")


@pytest.mark.parametrize("n", [1, 2, 5, 7])
def test_one_layer_construction_is_a_valid_table(n):
    table = one_layer_induction(n, 3)
    assert isinstance(table, OneLayerTable)
    assert table.d_model == n + 1 and table.n_ctx == n and table.alphabet == 3
    assert table.heads_per_layer == [1] and table.layers == ("table",)
    assert table.mask == "causal"
    assert isinstance(table.decoder, InductionReadoutDecoder) and table.decoder.n_ctx == n
    assert table.embed.dtype == np.float64
    assert table.size(4) == (n + 1) * 4
    # ψ_in(i, σ) = (σ+1)·e_{n+1}; Ṽ[j, σ] = (σ+1)·e_j
    for i in range(n):
        for s in range(3):
            expected = np.zeros(n + 1)
            expected[n] = s + 1
            np.testing.assert_array_equal(table.embed[i, s], expected)
            expected = np.zeros(n + 1)
            expected[i] = s + 1
            np.testing.assert_array_equal(table.V[0, i, s], expected)
    np.testing.assert_array_equal(table.Q, 0.0)
    np.testing.assert_array_equal(table.K, 0.0)


def test_one_layer_construction_solves_induction_everywhere():
    table = one_layer_induction(6, 3)
    tokens = all_sequences(6, 3)
    want = induction_targets(tokens)
    np.testing.assert_array_equal(predict(table, tokens), want)
    out, ok = certified_predict(table, tokens, EXACT)
    assert ok.all()
    np.testing.assert_array_equal(out, want)
    # the averaged vector: y_j = (σ_j + 1)/i for j ≤ i (1-based i), and σ_i + 1 in the last
    # coordinate
    x = table_residual(table, tokens[-1:])[0]
    seq = tokens[-1]
    for i in range(1, 7):
        for j in range(1, i + 1):
            assert x[i - 1, j - 1] == pytest.approx((seq[j - 1] + 1) / i, rel=1e-15)
        np.testing.assert_array_equal(x[i - 1, i:6], 0.0)
        assert x[i - 1, 6] == seq[i - 1] + 1


def test_one_layer_construction_fixed_precision():
    table = one_layer_induction(5, 3)
    tokens = all_sequences(5, 3)
    want = induction_targets(tokens)
    out, ok = certified_predict(table, tokens, fixed(12))
    assert ok.all()
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(predict(table, tokens, fixed(12)), want)
    # one fractional bit cannot separate (σ+1)/i for i = 5: some answer is wrong or uncertified
    out1, ok1 = certified_predict(table, tokens, fixed(1))
    assert not (ok1.all() and np.array_equal(out1, want))


def test_table_residual_bounds_contain_float_evaluation():
    model = random_one_layer(8, "full", heads=2)
    table = table_from_weights(model)
    tokens = np.random.default_rng(0).integers(0, model.alphabet, size=(20, model.n_ctx))
    mid, rad = table_residual_bounds(table, tokens, EXACT)
    x = table_residual(table, tokens)
    assert np.all(np.abs(x - mid) <= rad + 1e-15 * np.abs(x))
    assert np.all(rad < 1e-12)


def test_first_layer_tables_of_a_two_layer_model():
    from headcount.induction.construction import two_layer_induction

    model = two_layer_induction(8, 3)
    with pytest.raises(ValueError, match="first_layer_only"):
        table_from_weights(model)
    table = table_from_weights(model, first_layer_only=True)
    assert table.heads_per_layer == [2] and table.info["first_layer_of"] == 2
    # ψ_in table = W_E[σ] + W_pos[i]; Ṽ = ψ_in W_V W_O of each head
    head = model.layers[0].heads[1]
    np.testing.assert_array_equal(table.embed[3, 2], model.W_E[2] + model.W_pos[3])
    np.testing.assert_allclose(table.V[1, 3, 2], table.embed[3, 2] @ head.W_V @ head.W_O)
