"""The constructions solve the task exactly: exhaustive over small Σ^n, certified, at any (n, S);
the library's input checks (sizes, model choice) and typed results."""

import json

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.certify.evaluate import certified_predict, predict
from headcount.core.model.files import load_model
from headcount.core.model.table import OneLayerTable
from headcount.core.numbers.precision import EXACT, fixed, parse_precision
from headcount.induction import task
from headcount.induction.certification import certify_induction
from headcount.induction.construction import (
    MAX_TABLE_BYTES,
    TWO_LAYER_DIM,
    ModelShape,
    check_sizes,
    one_layer_induction,
    two_layer_induction,
    write_construction,
)
from headcount.induction.lower_bound.setup import load_index_model
from headcount.induction.outputs import predict_input, solve
from headcount.induction.source import ModelSource

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
        assert model.heads_per_layer == [2, 1]


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
    assert model.d_model == 13 and model.heads_per_layer == [1]
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
    cert = result.certificate
    assert result.exhaustive is True and result.scope == "exhaustive" and result.seed is None
    assert cert.inputs_checked == 3**7 and cert.positions_checked == 7 * 3**7
    assert cert.errors == 0 and cert.errors_at_precision_bits == 0
    assert cert.certified is True and cert.uncertified_positions == 0
    p = cert.precision_bits
    assert isinstance(p, int) and 1 <= p <= 16
    assert result.size == 3 * 19 * p
    assert "float64" in cert.dtypes_exact and result.to_json()["float32_exact"] is True
    assert result.shortfalls(need_exhaustive=True) == []
    # the JSON form: the certificate's fields inside the run's, rejections as records
    d = result.to_json()
    json.dumps(d, allow_nan=False)
    assert (
        d["heads"] == [2, 1]
        and d["dim"] == 19
        and d["scope"] == "exhaustive"
        and d["task"] == "induction"
    )
    assert [r["p"] for r in d["rejected"]] == list(range(1, p)) and d["accuracy"] == 1.0
    # p is minimal: one bit less makes an error somewhere on Σ^7
    tokens = task.all_sequences(7, 3)
    assert not np.array_equal(
        predict(two_layer_induction(7, 3), tokens, fixed(p - 1)), task.induction_targets(tokens)
    )


def test_certificate_sampled_is_seeded_and_covers_families():
    model = two_layer_induction(40, 5)
    a = certify_induction(model, 40, 5, samples=16, seed=3).to_json()
    b = certify_induction(model, 40, 5, samples=16, seed=3).to_json()
    a.pop("seconds"), b.pop("seconds")
    assert a == b
    assert a["exhaustive"] is False and a["errors"] == 0 and a["certified"] and a["seed"] == 3
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
    assert result.certificate.errors > 0 and result.certificate.certified is False
    cex = result.certificate.first_counterexample
    tokens = np.array(cex.input)
    expected = task.induction_targets(tokens)[cex.position - 1]
    assert cex.expected == ("⊥" if expected < 0 else str(expected))
    assert cex.model_output != cex.expected
    assert result.shortfalls()[0].startswith(f"n=6 S=3: {result.certificate.errors} float64 errors")


def test_precision_bits_grow_logarithmically():
    bits = [
        certify_induction(two_layer_induction(n, 8), n, 8, samples=8).certificate.precision_bits
        for n in (16, 64, 256)
    ]
    assert bits[0] < bits[1] < bits[2]
    assert (
        bits[2] - bits[0] <= 2 * 4
    )  # n grows 16× (4 doublings); c ≤ 2 bits per doubling allows ≤ 8


def test_float32_exact_and_bfloat16_not_at_1024():
    model = two_layer_induction(1024, 16)
    tokens = task.uniform(np.random.default_rng(0), 2, 1024, 16)
    target = task.induction_targets(tokens)
    assert np.array_equal(predict(model, tokens, parse_precision("float32")), target)
    with np.errstate(all="ignore"):
        assert not np.array_equal(predict(model, tokens, parse_precision("bfloat16")), target)


def test_minimal_precision_bits_is_the_first_correct_p():
    from headcount.core.certify.certify import confirmed_error, minimal_precision_bits

    model = two_layer_induction(9, 3)
    tokens = task.all_sequences(9, 3)
    target = task.induction_targets(tokens)
    p = minimal_precision_bits(model, tokens, target)
    assert p is not None
    assert np.array_equal(predict(model, tokens, fixed(p)), target)
    for q in range(
        1, p
    ):  # every smaller p: an input the exact fixed:q model is proven to get wrong
        wrong = confirmed_error(model, tokens, target, q)
        assert wrong is not None and wrong.p == q
        prefix = np.array([wrong.input])
        assert (
            task.induction_targets(prefix)[0, wrong.position - 1]
            != predict(model, prefix, fixed(q))[0, wrong.position - 1]
        )
    assert minimal_precision_bits(model, tokens, target, start=p + 3) == p + 3


# ---------------------------------------------------------------------------------------------
# The library's input checks and typed results (the CLI only parses and prints them)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "n, alphabet, layers, message, name",
    [
        (0, 3, 2, "n 0 is too small: the sequence length must be ≥ 1", "n"),
        (6, 1, None, "alphabet 1 is too small: the alphabet size must be ≥ 2", "alphabet"),
        (6, 2, 3, "layers 3 is not available: constructions exist for layers 1 or 2", "layers"),
        (
            3,
            5,
            2,
            "alphabet 5 > n 3: the two-layer construction is for alphabet ≤ n (seed 000)",
            "alphabet",
        ),
        (4096, 64, 1, "layers 1 at n=4096, alphabet=64 needs 16.0 GiB of tables", "layers"),
    ],
)
def test_sizes_are_checked_with_the_parameters_names(n, alphabet, layers, message, name):
    with pytest.raises(InputError) as excinfo:
        check_sizes(n, alphabet, layers)
    assert str(excinfo.value).startswith(message)
    assert excinfo.value.param == name
    assert 2 * 8 * 4096 * 64 * 4097 > MAX_TABLE_BYTES


def test_model_choice_needs_exactly_one_source(tmp_path):
    for source in [ModelSource(), ModelSource(tmp_path / "m.safetensors", 2)]:
        with pytest.raises(InputError, match="exactly one of model FILE or layers") as refused:
            source.load(6, 3)
        assert refused.value.param == "model"
    with pytest.raises(InputError, match="layers needs n N and alphabet S"):
        ModelSource(layers=2).load(None, 3)
    with pytest.raises(InputError, match="does not exist"):
        ModelSource(tmp_path / "missing.safetensors").load()
    with pytest.raises(InputError, match="samples 0 must be ≥ 1") as refused:
        certify_induction(ModelSource(layers=2), 6, 3, samples=0)
    assert refused.value.param == "samples"
    with pytest.raises(
        InputError, match="random_seed, heads and dim describe a random INDEX model"
    ):
        ModelSource(layers=2, random_seed=1).load(6, 3)
    with pytest.raises(InputError, match="layers names a construction"):
        load_index_model(ModelSource(layers=2), 3)


def test_a_source_knows_its_shape_before_it_is_built():
    for layers, n, alphabet, hops in [
        (2, 6, 3, 1),
        (1, 5, 3, 1),
        ("auto", 6, 3, 1),
        ("auto", 9, 3, 5),
    ]:
        source = ModelSource(layers=layers)
        shape = source.check(n, alphabet, hops)
        model = source.load(n, alphabet, hops)
        assert shape == source.shape(n, hops) == ModelShape.of(model)
    assert ModelSource("m.safetensors").check(6, 3) is None
    assert ModelSource(random_seed=0, heads=2, dim=3).shape() == ModelShape((2,), 3)


def test_write_construction_and_load_it_back(tmp_path):
    written = write_construction(2, 6, 3, tmp_path / "two.safetensors")
    assert written.to_json() == {
        "path": str(tmp_path / "two.safetensors"),
        "layers": 2,
        "heads": [2, 1],
        "dim": 19,
        "n": 6,
        "alphabet": 3,
    }
    assert (
        ModelSource(written.path).load().heads_per_layer == load_model(written.path).heads_per_layer
    )
    (tmp_path / "a-file").write_text("")
    with pytest.raises(InputError, match="cannot write"):
        write_construction(2, 6, 3, tmp_path / "a-file" / "two.safetensors")


def test_solve_and_predict_input():
    assert solve(np.array([3, 0, 2, 3, 0, 2])).outputs_text == ["⊥", "⊥", "⊥", "0", "2", "3"]
    assert solve(np.array([1, 2, 1, 2, 1]), 2).to_json() == {
        "input": [1, 2, 1, 2, 1],
        "hops": 2,
        "outputs": ["⊥", "⊥", "⊥", "2", "1"],
    }
    assert solve(np.array([0, 1, 0]), 0).outputs_text == ["0", "1", "0"]  # hop 0: the input
    with pytest.raises(InputError, match="hops -1 must be ≥ 0") as refused:
        solve(np.array([0, 1]), -1)
    assert refused.value.param == "hops"
    two = ModelSource(layers=2)
    got = predict_input(np.array([3, 0, 2, 3]), two, "fixed:12", alphabet=4)
    assert got.to_json() == {
        "input": [3, 0, 2, 3],
        "precision": "fixed:12",
        "outputs": ["⊥", "⊥", "⊥", "0"],
    }
    with pytest.raises(InputError, match="fixed:p"):
        predict_input(np.array([0, 1]), two, "fixed:0", alphabet=3)
    with pytest.raises(InputError, match="input token 7 is outside the model's alphabet 0..2"):
        predict_input(np.array([0, 7]), two, n=4, alphabet=3)
    with pytest.raises(
        InputError, match="input has 5 tokens but the model's context length is 4"
    ) as refused:
        predict_input(np.array([0, 1, 0, 1, 0]), two, n=4, alphabet=3)
    assert refused.value.param == "input"
    assert predict_input(np.array([3, 0, 2, 3]), two_layer_induction(4, 4), "fixed:12") == got
