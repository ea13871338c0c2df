"""PyTorch models load the theory's models exactly and export to them: same predictions, round
trips, files, and the exported models go through the certificates, verifiers and INDEX tools."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from headcount.boolean.construction import construct
from headcount.boolean.model import BooleanHead, BooleanLayer, Readout, model_sign_exact
from headcount.boolean.model_file import load_boolean, save_boolean
from headcount.boolean.task import parse_function
from headcount.core.certify.evaluate import predict
from headcount.core.model import MLP, AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.files import ModelFileError, load_model, save_model
from headcount.core.model.symbols import BOTTOM
from headcount.core.model.table import table_from_weights
from headcount.core.numbers.precision import fixed
from headcount.core.passes.forward import residual_stream
from headcount.induction import task
from headcount.induction.certification import certify_induction
from headcount.induction.construction import one_layer_induction, two_layer_induction
from headcount.induction.lower_bound.refute import refute
from headcount.learn.models import (
    BooleanNet,
    MinMaxNet,
    SequenceConfig,
    SequenceModel,
    boolean_net_from_model,
    boolean_net_to_model,
    minmax_net_from_model,
    minmax_net_to_model,
    monomial_exponents,
    positional_table,
    sequence_model_from_transformer,
    sequence_model_to_transformer,
)
from headcount.minmax import construction
from headcount.minmax.model import forward as minmax_forward
from headcount.minmax.model import predict as minmax_predict
from headcount.minmax.model import random_single_head


def torch_predict(model: SequenceModel, tokens: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        cls = model(torch.from_numpy(tokens)).argmax(-1).numpy()
    return np.where(cls == model.cfg.alphabet, BOTTOM, cls)


def inputs(n: int, S: int, seed: int = 0, per_family: int = 32) -> np.ndarray:
    """Random plus every generator's inputs (the index family where it applies)."""
    rng = np.random.default_rng(seed)
    parts = [
        gen(rng, per_family, n, S)
        for name, gen in task.GENERATORS.items()
        if not (name == "index" and S < 3)
    ]
    return np.concatenate(parts)


# --- sequence models ------------------------------------------------------------------------------


@pytest.mark.parametrize("n,S", [(16, 4), (64, 8), (9, 2)])
def test_two_layer_construction_loads_exactly(n, S):
    core = two_layer_induction(n, S)
    model = sequence_model_from_transformer(core)
    assert model.W_E.dtype == torch.float64 and model.cfg.positional == "fixed"
    assert (model.cfg.layers, model.cfg.heads, model.cfg.dim) == (2, 2, core.d_model)
    tokens = inputs(n, S)
    expected = predict(core, tokens)
    assert np.array_equal(torch_predict(model, tokens), expected)
    assert np.array_equal(
        expected, task.induction_targets(tokens)
    )  # the construction is right, too
    with torch.no_grad():
        logits = model(torch.from_numpy(tokens)).numpy()
    core_logits = residual_stream(core, tokens) @ core.decoder.W_U + core.decoder.b_U
    np.testing.assert_allclose(
        logits, core_logits, rtol=1e-9, atol=1e-9 * np.abs(core_logits).max()
    )

    back = sequence_model_to_transformer(model)
    assert (
        back.heads_per_layer == core.heads_per_layer == [2, 1]
    )  # the zero head padding layer 2 is dropped again
    for la, lb in zip(back.layers, core.layers):
        for ha, hb in zip(la.heads, lb.heads):
            for name in ("W_Q", "W_K", "W_V", "W_O"):
                assert np.array_equal(getattr(ha, name), getattr(hb, name)), name
    assert np.array_equal(predict(back, tokens), expected)
    assert np.array_equal(predict(back, tokens, fixed(16)), predict(core, tokens, fixed(16)))


def random_core(rng: np.random.Generator, n: int = 6, S: int = 3, d: int = 5) -> Transformer:
    """Heads of different widths (2 + 1), an MLP in the second layer only."""
    g = rng.standard_normal
    heads1 = (
        AttentionHead(g((d, 3)), g((d, 3)), g((d, 2)), g((2, d))),
        AttentionHead(g((d, 1)), g((d, 1)), g((d, 4)), g((4, d))),
    )
    heads2 = (AttentionHead(g((d, 2)), g((d, 2)), g((d, 2)), g((2, d))),)
    mlp = MLP(g((d, 7)), g(7), g((7, d)), g(d))
    return Transformer(
        g((S, d)),
        g((n, d)),
        (Layer(heads1), Layer(heads2, mlp)),
        LinearDecoder(g((d, S + 1)), g(S + 1)),
    )


def test_mixed_widths_and_partial_mlp_round_trip():
    core = random_core(np.random.default_rng(1))
    model = sequence_model_from_transformer(core)
    assert model.cfg.mlp and model.cfg.d_head == 4 and model.cfg.d_mlp == 7
    tokens = task.all_sequences(6, 3)
    assert np.array_equal(torch_predict(model, tokens), predict(core, tokens))
    back = sequence_model_to_transformer(model)
    assert (
        back.heads_per_layer == [2, 1]
        and back.layers[0].mlp is None
        and back.layers[1].mlp is not None
    )
    assert np.array_equal(predict(back, tokens), predict(core, tokens))


CONFIGS = [
    dict(layers=1, heads=1, dim=8),
    dict(layers=2, heads=2, dim=10, d_head=3, positional="sinusoidal"),
    dict(layers=2, heads=3, dim=9, positional="circle", mlp=True),
]


@pytest.mark.parametrize("kw", CONFIGS)
def test_random_model_exports_saves_and_certifies(kw, tmp_path):
    torch.manual_seed(0)
    n, S = 6, 2
    model = SequenceModel(SequenceConfig(vocab=S, alphabet=S, n_ctx=n, **kw)).double()
    core = sequence_model_to_transformer(model, {"note": "random"})
    tokens = task.all_sequences(n, S)  # 64 sequences: the certificate below is exhaustive
    got = torch_predict(model, tokens)
    assert np.array_equal(predict(core, tokens), got)
    path = tmp_path / "m.safetensors"
    save_model(core, path)
    loaded = load_model(path)
    assert loaded.info["note"] == "random" and loaded.info["config"]["positional"] == kw.get(
        "positional", "learned"
    )
    assert np.array_equal(predict(loaded, tokens), got)
    cert = certify_induction(loaded, n, S, dtypes=False).to_json()
    assert cert["exhaustive"] and cert["inputs_checked"] == len(tokens)
    assert cert["errors"] == int((got != task.induction_targets(tokens)).sum())


def test_one_layer_export_works_with_table_form_and_refute():
    torch.manual_seed(3)
    n, S, k = 9, 3, 4
    model = SequenceModel(
        SequenceConfig(vocab=S, alphabet=S, n_ctx=n, layers=1, heads=2, dim=6)
    ).double()
    core = sequence_model_to_transformer(model)
    table = table_from_weights(core)
    tokens = inputs(n, S)
    assert np.array_equal(predict(table, tokens), predict(core, tokens))
    result = refute(core, k, 12)
    assert (
        result.found and result.model_output != result.expected
    )  # a random model is wrong somewhere on INDEX


def test_forward_shapes_patterns_and_dtypes():
    torch.manual_seed(0)
    cfg = SequenceConfig(
        vocab=5, alphabet=4, n_ctx=7, layers=2, heads=3, dim=12, mlp=True, layernorm=True
    )
    model = SequenceModel(cfg)
    tokens = torch.randint(0, 5, (4, 7))
    logits, patterns = model(tokens, return_patterns=True)
    assert logits.shape == (4, 7, 5) and logits.dtype == torch.float32
    assert len(patterns) == 2 and patterns[0].shape == (4, 3, 7, 7)
    torch.testing.assert_close(patterns[1].sum(-1), torch.ones(4, 3, 7))
    assert torch.all(torch.triu(patterns[0], diagonal=1) == 0)  # causal
    assert model(tokens[:, :3]).shape == (4, 3, 5)  # shorter inputs use the first positions
    logits64 = model.double()(tokens)
    assert logits64.dtype == torch.float64
    torch.testing.assert_close(logits64.float(), logits, rtol=1e-4, atol=1e-4)
    core = sequence_model_to_transformer(
        model
    )  # LayerNorm models export (tests/learn/test_gpt2_block.py)
    assert core.extensions == ["layernorm"] and core.ln_final is not None


def test_positional_tables():
    circle = positional_table("circle", 8, 6)
    assert torch.allclose(circle[:, :2].norm(dim=1), torch.full((8,), math.sqrt(6)))
    assert torch.all(circle[:, 2:] == 0)
    sin = positional_table("sinusoidal", 5, 7)
    assert sin.shape == (5, 7) and torch.all(sin[0, 1::2] == 1)
    model = SequenceModel(SequenceConfig(vocab=2, alphabet=2, n_ctx=8, dim=6, positional="circle"))
    assert "W_pos" not in dict(model.named_parameters())  # fixed encodings are not trained


@pytest.mark.parametrize(
    "bad,match",
    [
        (dict(positional="rope"), "positional"),
        (dict(heads=0), "heads"),
        (dict(dim=1, positional="circle"), "dim ≥ 2"),
        (dict(mlp=1), "mlp"),
        (dict(d_head=0), "d_head"),
    ],
)
def test_bad_config(bad, match):
    with pytest.raises(ValueError, match=match):
        SequenceConfig(**{"vocab": 3, "alphabet": 3, "n_ctx": 4, **bad})


def test_bad_tokens():
    model = SequenceModel(SequenceConfig(vocab=3, alphabet=3, n_ctx=4))
    for tokens, match in [
        (torch.tensor([[0, 3]]), "0..2"),
        (torch.zeros(1, 5, dtype=torch.long), "context length"),
        (torch.zeros(1, 2), "integers"),
        (torch.zeros(1, 0, dtype=torch.long), "shape"),
    ]:
        with pytest.raises(ValueError, match=match):
            model(tokens)
    with pytest.raises(ValueError, match="Transformer, got OneLayerTable"):
        sequence_model_from_transformer(one_layer_induction(4, 2))
    with pytest.raises(ValueError, match="causal"):
        sequence_model_from_transformer(dataclasses.replace(two_layer_induction(4, 2), mask="full"))


# --- min / max ------------------------------------------------------------------------------------


def minmax_inputs(M: int, n: int) -> np.ndarray:
    return np.random.default_rng(M * n).integers(1, M + 1, size=(200, n))


@pytest.mark.parametrize("build", ["two_head", "random"])
def test_minmax_conversions_exact(build):
    M, n = 9, 5
    if build == "two_head":
        model = construction.two_head_layer(M, n, construction.compact_code(M))
    else:
        model = random_single_head(np.random.default_rng(2), M, 3)
    net = minmax_net_from_model(model)
    x = minmax_inputs(M, n)
    with torch.no_grad():
        z = net.layer(torch.from_numpy(x)).numpy()
        lmin, lmax = (t.numpy() for t in net(x))
    np.testing.assert_allclose(z, minmax_forward(model, x), rtol=1e-12, atol=1e-12)
    pmin, pmax = minmax_predict(model, x)
    assert np.array_equal(lmin.argmax(1) + 1, pmin) and np.array_equal(lmax.argmax(1) + 1, pmax)
    if build == "two_head":  # the construction is right: min and max
        assert np.array_equal(pmin, x.min(1)) and np.array_equal(pmax, x.max(1))
    back = minmax_net_to_model(net)
    for a, b in zip(back.layer.heads, model.layer.heads):
        assert np.array_equal(a.scores, b.scores) and np.array_equal(a.values, b.values)
    assert np.array_equal(back.classifier_min.theta, model.classifier_min.theta)
    with pytest.raises(ValueError, match="1..9"):
        net.layer(np.zeros((1, 3), dtype=np.int64))


def test_minmax_net_float32():
    torch.manual_seed(0)
    net = MinMaxNet(5, heads=2, dim=3)
    lmin, lmax = net(torch.tensor([[1, 5, 2], [3, 3, 3]]))
    assert lmin.shape == lmax.shape == (2, 5) and lmin.dtype == torch.float32
    z = net.layer(
        torch.tensor([[3, 3, 3]])
    )  # one distinct token: every head returns its value exactly
    torch.testing.assert_close(z[0], net.values[:, 2].sum(0))


# --- Boolean --------------------------------------------------------------------------------------


def test_monomials():
    for d, D in [(1, 1), (2, 2), (3, 4)]:
        exps = monomial_exponents(d, D)
        assert len(exps) == math.comb(d + D, D) == len(set(exps)) and exps[0] == (0,) * d
        assert all(sum(K) <= D for K in exps)


@pytest.mark.parametrize(
    "function,n,D,H",
    [
        ("xor", 6, 2, 3),
        ("xor", 8, 4, 2),
        ("majority", 7, 1, 1),
        ("exact:3", 8, 1, 2),
        ("mod:3", 8, 2, 3),
    ],
)
def test_theorem3_construction_same_signs(function, n, D, H, tmp_path):
    F = parse_function(function, n)
    built = construct(F, n, D, H)
    layer, readout = built.layer, built.readout
    exact = model_sign_exact(layer, readout, n)
    assert exact == list(F)
    net = boolean_net_from_model(layer, readout, n)
    with torch.no_grad():
        g = net.score(torch.arange(n + 1)).numpy()
        bits = np.array([[int(b) for b in np.binary_repr(i, n)] for i in range(2**n)])
        g_bits = net(bits).numpy()
    assert list(np.sign(g).astype(int)) == exact
    np.testing.assert_array_equal(g_bits, g[bits.sum(1)])  # forward on bits = score at t = |x|
    # exact files: the construction round-trips exactly
    save_boolean(layer, readout, tmp_path / "b.safetensors", {"function": function})
    loaded = load_boolean(tmp_path / "b.safetensors")
    layer2, readout2, info = loaded.layer, loaded.readout, loaded.info
    assert info == {"function": function} and layer2 == layer and readout2.terms == readout.terms
    assert readout2.degree == readout.degree and readout2.dim == readout.dim
    # export of the float net: the same signs in exact arithmetic
    assert model_sign_exact(*boolean_net_to_model(net), n) == exact


def test_boolean_export_is_exact_for_the_floats():
    torch.manual_seed(0)
    net = BooleanNet(5, heads=2, dim=2, degree=2).double()
    layer, readout = boolean_net_to_model(net)
    again = boolean_net_from_model(layer, readout, 5)
    for name in ("values", "coef"):
        assert torch.equal(getattr(again, name), getattr(net, name))
    r = lambda m: m.logw[:, 1] - m.logw[:, 0]  # noqa: E731 — only the ratio w1/w0 matters
    torch.testing.assert_close(r(again), r(net), rtol=0, atol=1e-14)
    with torch.no_grad():
        g = net.score(torch.arange(6)).numpy()
    assert list(np.sign(g).astype(int)) == model_sign_exact(layer, readout, 5)


def test_boolean_bad_input_and_bad_file(tmp_path):
    net = BooleanNet(4, 1, 1, 1)
    with pytest.raises(ValueError, match="n = 4 bits"):
        net(np.zeros((1, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="0..1"):
        net(np.full((1, 4), 2))
    path = tmp_path / "m.safetensors"
    save_model(two_layer_induction(4, 2), path)
    with pytest.raises(ModelFileError, match="headcount-boolean"):
        load_boolean(path)
    layer = BooleanLayer((BooleanHead(1, 2, (1,), (-1,)),))
    with pytest.raises(ValueError, match="d = 2"):
        save_boolean(layer, Readout({(1, 0): 1}, 1, 2), path)


@pytest.mark.parametrize("n,S", [(8, 3), (16, 4), (32, 8)])
def test_one_layer_construction_loads_into_table_model(n, S):
    """The one-layer construction (table form, documented readout) in torch: same residual up to
    float64 summation order, identical predictions on random and every adversarial family, and back
    again."""
    from headcount.core.certify.evaluate import predict
    from headcount.core.passes.table_form import table_residual
    from headcount.induction.task import GENERATORS
    from headcount.learn.models import TableModel, table_model_to_table

    table = one_layer_induction(n, S)
    m = TableModel(table)
    rng = np.random.default_rng(n)
    for name, generate in GENERATORS.items():
        tokens = generate(rng, 32, n, S)
        residual, patterns = m(tokens, return_patterns=True)
        np.testing.assert_allclose(
            residual.detach().numpy(), table_residual(table, tokens), rtol=0, atol=1e-12
        )
        assert patterns[0].shape == (32, 1, n, n)
        expected = predict(table, tokens)
        assert np.array_equal(m.predict(tokens), expected), name
        assert np.array_equal(predict(table_model_to_table(m), tokens), expected), name
