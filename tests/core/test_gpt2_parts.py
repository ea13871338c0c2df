"""The GPT-2 parts of the formal model (issue 14): LayerNorm, biases, attention scale, GELU, final
LayerNorm, the vocab decoder and vocabulary map — float forward pass against PyTorch, files round
trip, refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file, save_file

from headcount.common.errors import InputError
from headcount.core.certify.evaluate import emulate
from headcount.core.model import AttentionHead, Layer, LinearDecoder, Transformer
from headcount.core.model.files import ModelFileError, load_model, save_model
from headcount.core.model.symbols import BOTTOM, OTHER, token_text
from headcount.core.model.vocab import VocabMap, bind_task
from headcount.core.numbers.precision import FLOAT64, parse_precision
from headcount.core.passes.forward import residual_stream
from tests.core.gpt2_models import _ln, gpt2_like  # noqa: F401 — gpt2_like is imported from here too


def torch_reference(model: Transformer, tokens: np.ndarray) -> np.ndarray:
    """The same model written with torch's own layer_norm, gelu and softmax, in float64."""
    F = torch.nn.functional
    t = lambda a: torch.from_numpy(np.asarray(a, dtype=np.float64))  # noqa: E731
    n = tokens.shape[1]
    x = t(model.W_E)[torch.from_numpy(tokens)] + t(model.W_pos)[:n]
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))

    def ln(v, p):
        return F.layer_norm(v, (v.shape[-1],), t(p.w), t(p.b), p.eps)

    for layer in model.layers:
        a = ln(x, layer.ln1)
        update = t(layer.b_O).expand_as(x).clone()
        for h in layer.heads:
            q, k, v = (a @ t(W) + t(b) for W, b in ((h.W_Q, h.b_Q), (h.W_K, h.b_K), (h.W_V, h.b_V)))
            s = (q @ k.transpose(-1, -2)) * layer.attn_scale
            update = update + torch.softmax(s.masked_fill(~causal, -torch.inf), -1) @ v @ t(h.W_O)
        x = x + update
        m = layer.mlp
        pre = ln(x, layer.ln2) @ t(m.W_in) + t(m.b_in)
        act = F.gelu(pre, approximate="tanh" if m.activation == "gelu_tanh" else "none")
        x = x + act @ t(m.W_out) + t(m.b_out)
    return ln(x, model.ln_final).numpy()


@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh"])
def test_float64_forward_matches_torch(activation):
    model = gpt2_like(1, activation=activation)
    tokens = np.random.default_rng(2).integers(0, model.alphabet, (16, model.n_ctx))
    ours, theirs = residual_stream(model, tokens, FLOAT64), torch_reference(model, tokens)
    assert np.abs(ours - theirs).max() <= 1e-12 * np.abs(theirs).max()


def test_plain_models_have_no_extensions_and_each_part_is_named():
    model = gpt2_like()
    assert model.extensions == ["attention biases", "attention scale", "gelu", "layernorm"]
    plain = Transformer(
        np.eye(2),
        np.zeros((3, 2)),
        (Layer((AttentionHead(*[np.eye(2)] * 4),)),),
        LinearDecoder(np.eye(2, 3), np.zeros(3)),
    )
    assert plain.extensions == []


@pytest.mark.parametrize("readout", ["tied", "lm-head", "hidden"])
def test_files_round_trip_every_part(tmp_path, readout):
    vmap = (
        {"symbols": [3, 5, 7], "hops": [9, 10], "hops_from": 1, "none": 11}
        if readout != "hidden"
        else {"symbols": [1, 2]}
    )
    model = gpt2_like(3, readout=readout, vmap=vmap)
    path = tmp_path / "m.safetensors"
    save_model(model, path)
    back = load_model(path)
    tokens = np.random.default_rng(4).integers(0, model.alphabet, (8, model.n_ctx))
    assert np.array_equal(residual_stream(back, tokens), residual_stream(model, tokens))
    assert back.decoder.vocab_map == model.decoder.vocab_map and back.decoder.readout == readout
    for prec in ("float64", "float32", "bfloat16", "fixed:6"):
        assert np.array_equal(
            emulate(back, tokens, parse_precision(prec)),
            emulate(model, tokens, parse_precision(prec)),
        )


def test_plain_model_files_are_unchanged(tmp_path):
    """A model without GPT-2 parts writes the same config as before issue 14 (no new keys)."""
    plain = Transformer(
        np.eye(2),
        np.zeros((3, 2)),
        (Layer((AttentionHead(*[np.eye(2)] * 4),)),),
        LinearDecoder(np.eye(2, 3), np.zeros(3)),
    )
    save_model(plain, tmp_path / "p.safetensors")
    from safetensors import safe_open

    with safe_open(str(tmp_path / "p.safetensors"), "np") as f:
        config = json.loads(f.metadata()["headcount"])
        names = set(f.keys())
    assert config["layers"] == [{"heads": 1, "mlp": False}] and "ln_final" not in config
    assert names == {"W_E", "W_pos"} | {
        f"layers.0.heads.0.{w}" for w in ("W_Q", "W_K", "W_V", "W_O")
    } | {
        "decoder.W_U",
        "decoder.b_U",
    }


def _edit(tmp_path, change):
    model = gpt2_like(5, layers=1)
    path = tmp_path / "m.safetensors"
    save_model(model, path)
    from safetensors import safe_open

    with safe_open(str(path), "np") as f:
        config = json.loads(f.metadata()["headcount"])
    tensors = load_file(str(path))
    change(config, tensors)
    save_file(tensors, str(path), metadata={"headcount": json.dumps(config)})
    return path


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda c, t: c["layers"][0].update(activation="swish"), "'activation' must be one of"),
        (
            lambda c, t: c["layers"][0].update(ln1={"eps": -1}),
            'must be an object {"eps": a positive number}',
        ),
        (
            lambda c, t: c["layers"][0].update(ln1=1e-5),
            'must be an object {"eps": a positive number}',
        ),
        (
            lambda c, t: c["layers"][0].update(attn_scale="big"),
            "'attn_scale' must be a finite number",
        ),
        (lambda c, t: c["layers"][0].update(mlp=False), "'activation' must be one of"),
        (lambda c, t: t.pop("layers.0.b_O"), "'layers.0.b_O' is missing"),
        (lambda c, t: t.update({"layers.0.ln1.w": np.zeros(3)}), "layers.0.ln1.w"),
        (lambda c, t: t.update({"ln_final.extra": np.zeros(3)}), "ln_final.extra"),
        (
            lambda c, t: c["decoder"]["config"].update(vocab_map={"symbols": [1, 1]}),
            "must be distinct",
        ),
        (
            lambda c, t: c["decoder"]["config"].update(vocab_map={"colour": 1}),
            "unknown keys ['colour']",
        ),
        (lambda c, t: c["decoder"]["config"].update(readout="sideways"), "unknown readout"),
    ],
)
def test_bad_gpt2_parts_in_files_are_refused(tmp_path, change, message):
    with pytest.raises(ModelFileError) as err:
        load_model(_edit(tmp_path, change))
    assert message in str(err.value)


def test_vocabulary_map_identity_and_explicit():
    identity = VocabMap.from_json(None)
    assert identity.input_ids(3, 2).tolist() == [0, 1, 2, 3, 4]
    assert identity.output_labels(3, 6).tolist() == [0, 1, 2, BOTTOM, OTHER, OTHER]
    explicit = VocabMap.from_json(
        {"symbols": [10, 11, 12, 13], "hops": {"1": 20, "2": 21, "3": 22}, "none": 0}
    )
    assert explicit.input_ids(3, 2).tolist() == [10, 11, 12, 20, 21]
    labels = explicit.output_labels(3, 25)
    assert labels[[10, 11, 12, 13, 0, 20]].tolist() == [0, 1, 2, OTHER, BOTTOM, OTHER]
    assert token_text(OTHER) == "other" and token_text(BOTTOM) == "⊥"
    assert VocabMap.from_json(explicit.to_json()) == explicit


@pytest.mark.parametrize(
    "obj, message",
    [
        ([1, 2], "must be a JSON object"),
        ({"symbols": [0, -1]}, "token id 0 ≤ id < 2^31"),
        ({"symbols": [0, True]}, "token id"),
        ({"symbols": "abc"}, "must be a list"),
        ({"symbols": [1, 2], "hops": {"1": 2}}, "distinct"),
        ({"symbols": [1, 2], "none": 2}, "also a symbol's id"),
    ],
)
def test_bad_vocabulary_maps_are_refused(obj, message):
    with pytest.raises(InputError) as err:
        VocabMap.from_json(obj)
    assert message in str(err.value)


def test_bind_task_gathers_embedding_rows_and_labels_outputs():
    vmap = {"symbols": [7, 8, 9], "hops": [20, 21], "hops_from": 1, "none": 29}
    model = gpt2_like(6, vocab=30, vmap=vmap)
    bound = bind_task(model, 3, 2)
    assert bound.alphabet == 5 and np.array_equal(bound.W_E, model.W_E[[7, 8, 9, 20, 21]])
    tokens = np.random.default_rng(0).integers(0, 5, (32, model.n_ctx))
    raw = emulate(model, np.array([7, 8, 9, 20, 21])[tokens])  # the model's own ids, unlabelled
    labelled = emulate(bound, tokens)
    expect = np.where(raw == 29, BOTTOM, np.where((raw >= 7) & (raw <= 9), raw - 7, OTHER))
    assert np.array_equal(labelled, expect)
    with pytest.raises(InputError, match="has 3 symbols; alphabet 4 needs 4") as refused:
        bind_task(model, 4, 0)
    assert refused.value.param == "alphabet"
    with pytest.raises(InputError, match="no token for hop count 3; it names hop counts 1..2"):
        bind_task(model, 3, 3)
    with pytest.raises(InputError, match="reads 12 ids"):
        bind_task(gpt2_like(6, vmap={"symbols": [0, 1, 40]}), 3, 0)


def test_bind_task_checks_headcount_models_too():
    plain = Transformer(
        np.eye(3),
        np.zeros((3, 3)),
        (Layer((AttentionHead(*[np.eye(3)] * 4),)),),
        LinearDecoder(np.eye(3, 3), np.zeros(3)),
    )
    assert bind_task(plain, 2, 1) is plain
    with pytest.raises(InputError, match="2 symbols and 2 hop tokens need 4"):
        bind_task(plain, 2, 2)


def test_the_table_form_and_the_exact_evaluator_refuse_gpt2_parts():
    from headcount.core.model.table import table_from_weights
    from headcount.core.passes.exact_fixed import exact_fixed_predict, exact_supported

    model = gpt2_like(7, layers=1)
    with pytest.raises(InputError, match="the seed's plain model; this model has attention biases"):
        table_from_weights(model)
    assert "not attention biases, attention scale, gelu, layernorm" in exact_supported(
        bind_task(model, 3)
    )
    with pytest.raises(ValueError, match="exact evaluation"):
        exact_fixed_predict(bind_task(model, 3), np.zeros((1, 3), dtype=int), 4)


def test_exact_logit_ties_are_decided_by_the_lowest_class_rule():
    from headcount.core.model import argmax_bounds

    lmid = np.array([[1.0, 1.0, 0.0], [0.0, 2.0, 2.0], [3.0, 1.0, 3.0], [1.0, 1.0, 0.0]])
    lrad = np.zeros_like(lmid)
    lrad[3, 1] = 1e-300  # one tied logit is not exact: the tie is open
    cls, decided = argmax_bounds(lmid, lrad)
    assert cls.tolist() == [0, 1, 0, 0] and decided.tolist() == [True, True, True, False]
    cls, decided = argmax_bounds(np.array([[0.0, np.nan]]), np.zeros((1, 2)))
    assert not decided.any()
