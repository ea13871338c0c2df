"""The learning lab's GPT-2 block (pre-LayerNorm, GELU MLPs) exports to the formal model and back:
float64 logits agree to 1e-12 both ways, what a SequenceModel cannot hold is refused on import, and
a trained LayerNorm + GELU model goes through certify_induction."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
import torch

from headcount.common.errors import InputError
from headcount.core.certify.evaluate import certified_predict, emulate
from headcount.core.model import (
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    LinearDecoder,
    Transformer,
)
from headcount.core.model.files import load_model, save_model
from headcount.core.numbers.precision import FLOAT64, IEEE_DTYPES, Precision, fixed
from headcount.core.passes.forward import residual_stream
from headcount.induction import task
from headcount.induction.certification import certify_induction, induction_inputs
from headcount.learn.models import (
    SequenceConfig,
    SequenceModel,
    sequence_model_from_transformer,
    sequence_model_to_transformer,
)
from headcount.learn.train import train_induction
from tests.cli_run import refused, run

TOL = 1e-12


def core_logits(core: Transformer, tokens: np.ndarray) -> np.ndarray:
    """The formal model's float64 logits [batch pos classes]: residual stream (after ln_final),
    decoder."""
    return residual_stream(core, tokens) @ core.decoder.W_U + core.decoder.b_U


def torch_logits(model: SequenceModel, tokens: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return model(torch.from_numpy(tokens)).numpy()


def assert_logits_equal(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape
    assert np.max(np.abs(a - b)) <= TOL * max(1.0, np.max(np.abs(b))), np.max(np.abs(a - b))


def randomised(cfg: SequenceConfig, seed: int) -> SequenceModel:
    """A float64 SequenceModel with every parameter random, LayerNorm weights and biases included
    (their initial 1 and 0 would hide a swapped weight and bias)."""
    torch.manual_seed(seed)
    model = SequenceModel(cfg).double()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "ln" in name:
                p.copy_(torch.randn_like(p) * 0.5 + (1.0 if name.endswith("weight") else 0.0))
            elif name.endswith(("b_in", "b_out", "b_U")):
                p.copy_(torch.randn_like(p) * 0.3)
    return model


GPT2_CONFIGS = [
    dict(layers=2, heads=2, dim=8, mlp=True, layernorm=True, activation="gelu"),
    dict(layers=3, heads=1, dim=6, d_head=4, mlp=True, layernorm=True, activation="gelu_tanh"),
    dict(layers=1, heads=3, dim=9, mlp=False, layernorm=True, positional="circle"),
    dict(layers=2, heads=2, dim=8, mlp=True, layernorm=False, activation="gelu"),
]


@pytest.mark.parametrize("kw", GPT2_CONFIGS)
def test_export_agrees_to_1e12_and_imports_back(kw):
    n, S = 7, 3
    model = randomised(SequenceConfig(vocab=S + 2, alphabet=S, n_ctx=n, **kw), seed=len(str(kw)))
    core = sequence_model_to_transformer(model)
    expected = {"layernorm"} if kw["layernorm"] else set()
    if kw.get("activation", "relu") != "relu" and kw["mlp"]:
        expected.add("gelu")
    assert set(core.extensions) == expected
    if kw["layernorm"]:
        assert core.ln_final is not None and all(layer.ln1 is not None for layer in core.layers)
        assert all((layer.ln2 is not None) == kw["mlp"] for layer in core.layers)
        ln = model.blocks[0].ln_attn
        assert np.array_equal(core.layers[0].ln1.w, ln.weight.detach().numpy())
        assert (
            np.array_equal(core.layers[0].ln1.b, ln.bias.detach().numpy())
            and core.layers[0].ln1.eps == ln.eps
        )
    if kw["mlp"]:
        assert {layer.mlp.activation for layer in core.layers} == {kw["activation"]}
    tokens = np.random.default_rng(0).integers(0, S + 2, size=(64, n))
    assert_logits_equal(torch_logits(model, tokens), core_logits(core, tokens))
    # and back: the formal model loads into an equal SequenceModel, which exports to the same
    # weights
    again = sequence_model_from_transformer(core)
    assert again.cfg.layernorm == kw["layernorm"] and again.cfg.activation == model.cfg.activation
    assert_logits_equal(torch_logits(again, tokens), core_logits(core, tokens))
    back = sequence_model_to_transformer(again)
    for a, b in zip(back.layers, core.layers):
        for name in ("ln1", "ln2"):
            pa, pb = getattr(a, name), getattr(b, name)
            assert (pa is None) == (pb is None)
            if pa is not None:
                assert (
                    np.array_equal(pa.w, pb.w) and np.array_equal(pa.b, pb.b) and pa.eps == pb.eps
                )
        assert (a.mlp is None) == (b.mlp is None)
        if a.mlp is not None:
            assert np.array_equal(a.mlp.W_in, b.mlp.W_in) and a.mlp.activation == b.mlp.activation


def gpt2_core(
    rng: np.random.Generator, n: int = 6, S: int = 3, d: int = 5, eps: float = 1e-5, **layer
):
    """A random core model with GPT-2's LayerNorms and a GELU MLP in the second layer; `layer`
    overrides fields of the first layer (biases, attn_scale)."""
    g = rng.standard_normal

    def ln() -> LayerNorm:
        return LayerNorm(1 + 0.3 * g(d), 0.3 * g(d), eps)

    heads1 = (
        AttentionHead(g((d, 3)), g((d, 3)), g((d, 2)), g((2, d))),
        AttentionHead(g((d, 1)), g((d, 1)), g((d, 4)), g((4, d))),
    )
    heads2 = (AttentionHead(g((d, 2)), g((d, 2)), g((d, 2)), g((2, d))),)
    first = dataclasses.replace(Layer(heads1, ln1=ln()), **layer)
    second = Layer(heads2, MLP(g((d, 7)), g(7), g((7, d)), g(d), "gelu_tanh"), ln1=ln(), ln2=ln())
    decoder = LinearDecoder(g((d, S + 1)), g(S + 1))
    return Transformer(g((S, d)), g((n, d)), (first, second), decoder, ln_final=ln())


@pytest.mark.parametrize("eps", [1e-5, 0.25])
def test_core_gpt2_model_loads_and_agrees(eps):
    core = gpt2_core(np.random.default_rng(3), eps=eps, attn_scale=0.375)
    model = sequence_model_from_transformer(core)
    cfg = model.cfg
    assert cfg.layernorm and cfg.mlp and cfg.activation == "gelu_tanh" and cfg.d_head == 4
    assert all(m.eps == eps for m in model.modules() if isinstance(m, torch.nn.LayerNorm))
    tokens = task.all_sequences(6, 3)
    assert_logits_equal(torch_logits(model, tokens), core_logits(core, tokens))
    back = sequence_model_to_transformer(model)  # the attention scale is folded into W_Q
    assert (
        back.layers[0].attn_scale == 1.0
        and back.layers[0].mlp is None
        and back.layers[1].ln2 is not None
    )
    np.testing.assert_array_equal(back.layers[0].heads[0].W_Q, 0.375 * core.layers[0].heads[0].W_Q)
    assert_logits_equal(core_logits(back, tokens), core_logits(core, tokens))


def test_import_refusals():
    rng = np.random.default_rng(4)
    core = gpt2_core(rng)
    head = core.layers[0].heads[0]
    cases = [
        (dict(b_O=np.ones(5)), "attention biases"),
        (dict(heads=(dataclasses.replace(head, b_Q=np.ones(3)),)), "attention biases"),
        (dict(ln1=None), "LayerNorm in ln_final, .* but not in layer 0 ln1"),
        (dict(ln1=LayerNorm(np.ones(5), np.zeros(5), 1e-3)), r"different eps \[1e-05, 0.001\]"),
    ]
    for change, match in cases:
        bad = dataclasses.replace(
            core, layers=(dataclasses.replace(core.layers[0], **change), core.layers[1])
        )
        with pytest.raises(InputError, match=match):
            sequence_model_from_transformer(bad)
    relu = dataclasses.replace(core.layers[1].mlp, activation="relu")
    mixed = dataclasses.replace(
        core,
        layers=(
            dataclasses.replace(core.layers[0], mlp=relu, ln2=core.layers[1].ln2),
            core.layers[1],
        ),
    )
    with pytest.raises(InputError, match=r"different activations \['gelu_tanh', 'relu'\]"):
        sequence_model_from_transformer(mixed)
    with pytest.raises(InputError, match="but not in ln_final"):
        sequence_model_from_transformer(dataclasses.replace(core, ln_final=None))


def test_stored_config_keeps_old_keys():
    cfg = SequenceConfig(vocab=3, alphabet=3, n_ctx=4)
    assert "activation" not in cfg.stored() and cfg.stored() == {
        k: v for k, v in dataclasses.asdict(cfg).items() if k not in ("activation", "arch")
    }
    assert (
        SequenceConfig(vocab=3, alphabet=3, n_ctx=4, mlp=True, activation="gelu").stored()[
            "activation"
        ]
        == "gelu"
    )
    with pytest.raises(InputError, match="unknown activation 'tanh'"):
        SequenceConfig(vocab=3, alphabet=3, n_ctx=4, activation="tanh")


def proves_anything(core: Transformer, tokens: np.ndarray) -> bool:
    """Whether the rigorous bounds prove any output of this model at a generous precision (False
    while core/passes/bounds.py has no LayerNorm / GELU bounds: extended models then certify
    nothing)."""
    return bool(certified_predict(core, tokens, fixed(40))[1].any())


def test_trained_layernorm_gelu_model_certifies(tmp_path):
    """A tiny GPT-2-style model (LayerNorm + GELU MLP) trained on induction heads exports and
    certifies: the certificate's float64 errors and dtypes are exactly what
    core.certify.evaluate.emulate says on its inputs, and once the bounds cover LayerNorm and GELU
    (core/passes/bounds.py) the model, right on every sample, is certified at a reported
    precision_bits, the proof checked again here."""
    n, S, samples = 8, 3, 64
    path = tmp_path / "gpt2.safetensors"
    run = train_induction(
        layers=2, heads=1, dim=16, n=n, alphabet=S, steps=150, batch=32, lr=1e-2,
        mlp=True, layernorm=True, activation="gelu", out=path,
    )  # fmt: skip
    core = load_model(path)
    assert core.extensions == ["gelu", "layernorm"]
    save_model(core, tmp_path / "again.safetensors")  # the file round-trips LayerNorm and GELU
    assert np.array_equal(
        load_model(tmp_path / "again.safetensors").layers[1].ln2.w, core.layers[1].ln2.w
    )

    cert = certify_induction(core, n, S, samples=samples, seed=1, exhaustive=False, from_file=True)
    out = cert.to_json()
    assert out["scope"] == "sampled" and out["file_label"] is None and out["seed"] == 1
    stream, exhaustive = induction_inputs(n, S, samples, seed=1, exhaustive=False)
    chunks = list(stream())
    assert not exhaustive and out["inputs_checked"] == sum(len(t) for _, t in chunks)
    errors = sum(
        int((emulate(core, t, FLOAT64) != task.induction_targets(t)).sum()) for _, t in chunks
    )
    assert out["errors"] == errors and out["positions_checked"] == out["inputs_checked"] * n
    dtypes = [
        name
        for name in IEEE_DTYPES
        if all(
            np.array_equal(emulate(core, t, Precision(name)), task.induction_targets(t))
            for _, t in chunks
        )
    ]
    assert out["dtypes_exact"] == dtypes and isinstance(out["dtypes_exact"], list)
    assert run.metrics.accuracy > 0.5  # it learned something: the certificate is about a real model

    p = out["precision_bits"]
    assert p is None or (isinstance(p, int) and 1 <= p <= 60)
    if errors:  # a float64 error is an error at every precision: nothing is certified
        assert not out["certified"]
    tokens = np.concatenate([t for _, t in chunks])
    if proves_anything(core, tokens):  # the LayerNorm / GELU bounds exist: the "done when"
        assert out["certified"] == (errors == 0 and out["uncertified_positions"] == 0)
        if errors == 0:  # (150 steps learn this task: errors is 0 with the seed here)
            assert isinstance(p, int) and out["certified"], out
            got, proven = certified_predict(core, tokens, fixed(p))
            assert proven.all() and np.array_equal(got, task.induction_targets(tokens))
    else:  # no bounds yet: nothing is proven, so nothing is certified
        assert not out["certified"]
        assert p is None or out["uncertified_positions"] == out["positions_checked"]


def test_cli_activation(capsys, tmp_path):
    path = tmp_path / "m.safetensors"
    args = ["train", "induction", "--layers", "1", "--dim", "8", "--n", "5", "--alphabet", "3"]
    args += ["--steps", "2"]
    code, out, _ = run(
        capsys, *args, "--mlp", "--activation", "gelu_tanh", "--out", str(path), "--json"
    )
    assert code == 0 and json.loads(out)["mlp"]
    model = load_model(path)
    assert model.layers[0].mlp.activation == "gelu_tanh" and model.extensions == ["gelu"]
    refused(
        capsys, *args, "--activation", "swish", needles=("unknown activation 'swish'", "gelu_tanh")
    )
    refused(
        capsys, *args, "--activation", "gelu", needles=("activation 'gelu' is the MLP's", "--mlp")
    )
