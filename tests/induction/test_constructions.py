"""The constructions solve the task exactly: exhaustive over small Σ^n, certified, at any (n, S)."""

import numpy as np
import pytest

from headcount.core.evaluate import certified_predict, predict
from headcount.core.precision import EXACT, fixed, parse_precision
from headcount.core.table import OneLayerTable
from headcount.induction import task
from headcount.induction.certify import certify_induction
from headcount.induction.constructions import TWO_LAYER_DIM, one_layer_induction, two_layer_induction

SMALL = [(1, 2), (2, 2), (5, 2), (8, 2), (3, 3), (6, 3), (4, 4), (5, 5)]


@pytest.mark.parametrize("n,S", SMALL)
@pytest.mark.parametrize("build", [two_layer_induction, one_layer_induction])
def test_exhaustive_zero_errors_and_certified(build, n, S):
    model = build(n, S)
    tokens = task.all_sequences(n, S)
    target = task.induction_targets(tokens)
    assert np.array_equal(predict(model, tokens), target)
    got, proven = certified_predict(model, tokens, EXACT)
    assert np.array_equal(got, target)
    assert proven.all()


@pytest.mark.parametrize("n,S", [(64, 2), (64, 64), (200, 17), (300, 3)])
def test_two_layer_random_and_adversarial(n, S):
    model = two_layer_induction(n, S)
    rng = np.random.default_rng(n + S)
    for name, generate in task.GENERATORS.items():
        if name == "index" and S < 3:
            continue
        tokens = generate(rng, 4, n, S)
        assert np.array_equal(predict(model, tokens), task.induction_targets(tokens)), name


def test_dimension_and_heads_are_constant():
    for n, S in [(2, 2), (16, 3), (1024, 1024), (4096, 64), (20000, 7)]:
        model = two_layer_induction(n, S)
        assert model.d_model == TWO_LAYER_DIM == 19
        assert model.heads == [2, 1]


def test_two_layer_weights_are_dyadic_and_bounded():
    # integer / power-of-two weights make fixed:p rounding exact wherever values fit
    model = two_layer_induction(1024, 16)
    for layer in model.layers:
        for head in layer.heads:
            for w in (head.W_Q, head.W_K, head.W_V, head.W_O):
                assert np.array_equal(w * 2**20, np.round(w * 2**20))


def test_one_layer_is_table_form_with_dim_n_plus_1():
    model = one_layer_induction(12, 3)
    assert isinstance(model, OneLayerTable)
    assert model.d_model == 13 and model.heads == [1]
    assert not model.Q.any() and not model.K.any()  # uniform causal attention


def test_one_layer_certifies_exact_reads_at_low_precision():
    # in fixed:p the reads i·y_j are exact dyadic products: the rigorous pass proves them without
    # widening, even where they land near k + 1/2 (the readout rounds half up by definition)
    model = one_layer_induction(10, 2)
    tokens = task.all_sequences(10, 2)
    target = task.induction_targets(tokens)
    got, proven = certified_predict(model, tokens, fixed(4))
    assert np.array_equal(got, target) and proven.all()


def test_one_layer_needs_log_n_bits():
    # the head output (σ+1)/i must be resolved to 1/(2i): p ≈ log2 n + 1 — fails a bit below that
    n, S = 40, 3
    model = one_layer_induction(n, S)
    tokens = task.uniform(np.random.default_rng(1), 64, n, S)
    target = task.induction_targets(tokens)
    assert np.array_equal(predict(model, tokens, fixed(8)), target)
    assert not np.array_equal(predict(model, tokens, fixed(4)), target)


def test_certificate_fields_two_layer_exhaustive():
    result = certify_induction(two_layer_induction(7, 3), 7, 3)
    assert result["exhaustive"] is True
    assert result["inputs_checked"] == 3**7 and result["positions_checked"] == 7 * 3**7
    assert result["errors"] == 0 and result["errors_at_precision_bits"] == 0
    assert result["certified"] is True and result["uncertified_positions"] == 0
    p = result["precision_bits"]
    assert isinstance(p, int) and 1 <= p <= 16
    assert result["size"] == 3 * 19 * p
    assert "float64" in result["dtypes_exact"] and result["float32_exact"] is True
    # p is minimal: one bit less makes an error somewhere on Σ^7
    tokens = task.all_sequences(7, 3)
    assert not np.array_equal(
        predict(two_layer_induction(7, 3), tokens, fixed(p - 1)), task.induction_targets(tokens)
    )


def test_certificate_sampled_is_seeded_and_covers_families():
    model = two_layer_induction(40, 5)
    a = certify_induction(model, 40, 5, samples=16, seed=3)
    b = certify_induction(model, 40, 5, samples=16, seed=3)
    a.pop("seconds"), b.pop("seconds")
    assert a == b
    assert a["exhaustive"] is False and a["errors"] == 0 and a["certified"]
    assert set(a["families"]) == {"uniform", "no_adjacent_repeats", *task.ADVERSARIAL_FAMILIES}


def test_certificate_reports_counterexample_for_a_broken_model():
    model = two_layer_induction(6, 3)
    broken_W_U = model.decoder.W_U.copy()
    broken_W_U[:, -1] = 0  # ⊥ logit can no longer win
    from dataclasses import replace

    broken = replace(
        model,
        decoder=replace(
            model.decoder, W_U=broken_W_U, b_U=np.where(np.arange(4) == 3, -1e9, model.decoder.b_U)
        ),
    )
    result = certify_induction(broken, 6, 3)
    assert result["errors"] > 0 and result["certified"] is False
    cex = result["first_counterexample"]
    tokens = np.array(cex["input"])
    expected = task.induction_targets(tokens)[cex["position"] - 1]
    assert cex["expected"] == ("⊥" if expected < 0 else str(expected))
    assert cex["model_output"] != cex["expected"]


def test_precision_bits_grow_logarithmically():
    bits = [
        certify_induction(two_layer_induction(n, 8), n, 8, samples=8)["precision_bits"] for n in (16, 64, 256)
    ]
    assert bits[0] < bits[1] < bits[2]
    assert bits[2] - bits[0] <= 2 * 4  # n grows 16× (4 doublings); c ≤ 2 bits per doubling allows ≤ 8


def test_float32_exact_and_bfloat16_not_at_1024():
    model = two_layer_induction(1024, 16)
    tokens = task.uniform(np.random.default_rng(0), 2, 1024, 16)
    target = task.induction_targets(tokens)
    assert np.array_equal(predict(model, tokens, parse_precision("float32")), target)
    with np.errstate(all="ignore"):
        assert not np.array_equal(predict(model, tokens, parse_precision("bfloat16")), target)


def test_minimal_precision_bits_is_the_first_correct_p():
    from headcount.core.certify import confirmed_error, minimal_precision_bits

    model = two_layer_induction(9, 3)
    tokens = task.all_sequences(9, 3)
    target = task.induction_targets(tokens)
    p = minimal_precision_bits(model, tokens, target)
    assert p is not None
    assert np.array_equal(predict(model, tokens, fixed(p)), target)
    for q in range(1, p):  # every smaller p: an input the exact fixed:q model is proven to get wrong
        wrong = confirmed_error(model, tokens, target, q)
        assert wrong is not None and wrong["p"] == q
        prefix = np.array([wrong["input"]])
        assert (
            task.induction_targets(prefix)[0, wrong["position"] - 1]
            != predict(model, prefix, fixed(q))[0, wrong["position"] - 1]
        )
    assert minimal_precision_bits(model, tokens, target, start=p + 3) == p + 3
