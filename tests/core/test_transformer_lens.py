"""TransformerLens in and out (issue 15, interop/transformer_lens_io.py, _state.py and _config.py):
round trips headcount → TransformerLens → headcount bit-identical (constructions, trained models,
GPT-2-style and imported GPT-2 models), float64 logits within 1e-12 of headcount's with the same
argmax, each trap of TL 4.x, refusals, the exported files and their load.py snippet. TL's own tools
on exports (issue 30, interop/transformer_lens_tokens.py): the symbols' tokenizer without BOS,
detect_head finding the construction's heads, padded heads flagged. Skipped without the extra."""

from __future__ import annotations

import dataclasses
import json
import os
import runpy
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("transformer_lens")

import torch  # noqa: E402
from transformer_lens.config import TransformerBridgeConfig  # noqa: E402
from transformer_lens.head_detector import detect_head  # noqa: E402
from transformer_lens.model_bridge import TransformerBridge  # noqa: E402

from headcount.common.errors import InputError  # noqa: E402
from headcount.common.files import ModelFileError  # noqa: E402
from headcount.core.certify.evaluate import attention_patterns, predict  # noqa: E402
from headcount.core.model import (
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    LinearDecoder,
    Transformer,
)  # noqa: E402
from headcount.core.model.files import load_model  # noqa: E402
from headcount.core.model.symbols import BOTTOM, token_text  # noqa: E402
from headcount.core.model.vocab import VocabDecoder, bind_task  # noqa: E402
from headcount.core.passes.forward import residual_stream  # noqa: E402
from headcount.induction.construction import one_layer_induction, two_layer_induction  # noqa: E402
from headcount.interop.gpt2 import import_gpt2  # noqa: E402
from headcount.interop.transformer_lens_io import (  # noqa: E402
    TL_MISSING,
    from_transformer_lens,
    read_transformer_lens,
    to_transformer_lens,
    write_transformer_lens,
)
from headcount.interop.transformer_lens_state import transformer_lens_parts  # noqa: E402
from headcount.interop.transformer_lens_tokens import PAD, UNK  # noqa: E402
from headcount.learn.models.sequence import (  # noqa: E402
    SequenceConfig,
    SequenceModel,
    sequence_model_to_transformer,
)
from tests.core import gpt2_checkpoints as ckpt  # noqa: E402
from tests.core.test_gpt2_parts import gpt2_like  # noqa: E402

TOL = 1e-12  # |TL logit − headcount logit| ≤ TOL · max |headcount logit|


# --- helpers
# -----------------------------------------------------------------------------------------------


def hc_logits(model: Transformer, tokens: np.ndarray) -> np.ndarray:
    x = residual_stream(model, tokens)
    dec = model.decoder
    return x @ dec.W_U + dec.b_U if isinstance(dec, LinearDecoder) else dec._logits(x)


def tl_logits(bridge, tokens: np.ndarray) -> np.ndarray:
    with torch.no_grad():
        return bridge(torch.from_numpy(tokens)).numpy()


def labels_of(model: Transformer, classes: np.ndarray) -> np.ndarray:
    """The predictions a decoder makes from argmax classes (⊥ last for linear; vocab labels)."""
    dec = model.decoder
    if isinstance(dec, LinearDecoder):
        return np.where(classes == dec.alphabet, BOTTOM, classes)
    return classes if dec.labels is None else dec.labels[classes]


def assert_same_function(model: Transformer, bridge, tokens: np.ndarray) -> None:
    ours, theirs = hc_logits(model, tokens), tl_logits(bridge, tokens)
    assert theirs.dtype == np.float64 and theirs.shape == ours.shape
    assert np.abs(theirs - ours).max() <= TOL * np.abs(ours).max(), np.abs(theirs - ours).max()
    assert np.array_equal(theirs.argmax(-1), ours.argmax(-1))
    assert np.array_equal(labels_of(model, theirs.argmax(-1)), predict(model, tokens))


def _bits(value):
    if isinstance(value, np.ndarray):
        return (value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, float):
        return np.float64(value).tobytes()
    if isinstance(value, dict):
        return {k: _bits(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_bits(v) for v in value]
    return value


def anatomy(model: Transformer) -> dict:
    """Every array and setting of a model, for bit-for-bit comparison."""
    out = {"W_E": model.W_E, "W_pos": model.W_pos, "mask": model.mask, "info": model.info}
    ln = lambda n: None if n is None else (n.w, n.b, n.eps)  # noqa: E731
    for l, layer in enumerate(model.layers):
        for h, head in enumerate(layer.heads):
            out[f"{l}.{h}"] = [
                getattr(head, n) for n in ("W_Q", "W_K", "W_V", "W_O", "b_Q", "b_K", "b_V")
            ]
        m = layer.mlp
        out[f"{l}.mlp"] = None if m is None else (m.W_in, m.b_in, m.W_out, m.b_out, m.activation)
        out[f"{l}.rest"] = (
            len(layer.heads),
            layer.b_O,
            layer.attn_scale,
            ln(layer.ln1),
            ln(layer.ln2),
        )
    dec = model.decoder
    out["decoder"] = (dec.kind, dec.config(), dec.tensors(), getattr(dec, "labels", None))
    return out | {"ln_final": ln(model.ln_final), "layers": len(model.layers)}


def assert_identical(a: Transformer, b: Transformer) -> None:
    left, right = _bits(anatomy(a)), _bits(anatomy(b))
    assert left.keys() == right.keys()
    for key in left:
        assert left[key] == right[key], key


def tokens_for(model: Transformer, batch: int = 24, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, model.alphabet, (batch, model.n_ctx))


def round_trip(model: Transformer, tokens: np.ndarray | None = None):
    bridge = to_transformer_lens(model)
    assert_same_function(model, bridge, tokens_for(model) if tokens is None else tokens)
    assert_identical(model, from_transformer_lens(bridge))
    return bridge


def sequence_model(seed: int, **cfg) -> Transformer:
    torch.manual_seed(seed)
    m = SequenceModel(SequenceConfig(vocab=5, alphabet=4, n_ctx=8, **cfg))
    with torch.no_grad():  # biases and LayerNorm parameters away from their initial 0 and 1
        for name, p in m.named_parameters():
            if "ln" in name or name.endswith(("b_in", "b_out", "b_U")):
                p.add_(0.3 * torch.randn_like(p))
    return sequence_model_to_transformer(m)


def foreign_bridge(**fields):
    """A TL-native bridge booted by TransformerLens itself (random GPT-2-style init), float64."""
    base = dict(
        d_model=8, d_head=2, n_layers=2, n_ctx=6, n_heads=4, d_vocab=7, act_fn="gelu_new", seed=3
    )
    cfg = TransformerBridgeConfig.from_dict(base | fields | {"dtype": torch.float64})
    bridge = TransformerBridge.boot_native(cfg, dtype=torch.float64)
    with torch.no_grad():  # every bias and LayerNorm parameter non-trivial
        for p in bridge.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return bridge


# --- round trips
# -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "alphabet"), [(4, 2), (8, 3), (16, 4), (32, 6)])
def test_two_layer_construction_round_trips_bit_identically(n, alphabet):
    model = two_layer_induction(n, alphabet)
    tokens = np.vstack([tokens_for(model, 40, n), np.zeros((1, n), dtype=np.int64)])
    round_trip(model, tokens)


@pytest.mark.parametrize("hops", [2, 5, 16])
def test_khop_construction_round_trips_bit_identically(hops):
    """The pointer-doubling construction: ReLU MLPs in every layer after the first, heads (2, 1, 1,
    …)."""
    from headcount.induction.multihop.construction import khop_construction

    round_trip(khop_construction(24, 4, hops))


def test_variable_hop_construction_round_trips_bit_identically():
    from headcount.induction.multihop.construction import variable_hop_construction

    round_trip(variable_hop_construction(12, 3, 8))


@pytest.mark.parametrize(
    "cfg",
    [
        {"layers": 2, "heads": 2, "dim": 16},
        {"layers": 2, "heads": 3, "dim": 12, "mlp": True},
        {"layers": 2, "heads": 2, "dim": 16, "mlp": True, "layernorm": True, "activation": "gelu"},
        {
            "layers": 1,
            "heads": 4,
            "dim": 8,
            "mlp": True,
            "layernorm": True,
            "activation": "gelu_tanh",
        },
    ],
    ids=["plain", "mlp", "layernorm-gelu", "layernorm-gelu_tanh"],
)
def test_trained_models_round_trip_bit_identically(cfg):
    round_trip(sequence_model(1, **cfg))


@pytest.mark.parametrize("extra", [{}, {"mlp": True, "layernorm": True, "activation": "gelu"}])
def test_models_trained_by_train_induction_round_trip_bit_identically(tmp_path, extra):
    """A model out of the training loop (a few AdamW steps: weights no initialisation would
    give)."""
    from headcount.learn.train import train_induction

    path = tmp_path / "m.safetensors"
    train_induction(
        layers=2, heads=2, dim=16, n=8, alphabet=3, steps=30, batch=16, out=path, **extra
    )
    round_trip(load_model(path))


@pytest.mark.parametrize("readout", ["tied", "lm-head", "hidden"])
def test_gpt2_style_models_round_trip_bit_identically(readout):
    vmap = {"symbols": [3, 1, 4], "none": 0} if readout == "lm-head" else None
    model = gpt2_like(seed=5, d=8, vocab=8, heads=2, readout=readout, vmap=vmap)
    round_trip(model)
    round_trip(bind_task(model, 3))  # a bound model: its output labels travel in the record


def test_gpt2_scale_one_over_sqrt3_keeps_w_q_exact():
    model = gpt2_like(seed=2, d=12, vocab=9, heads=4, activation="gelu")  # d_head 3: scale 1/√3
    config, tensors = transformer_lens_parts(model)
    assert config["attn_scale"] == 1 / model.layers[0].attn_scale  # TL divides by 1/s, W_Q unscaled
    q = tensors["blocks.0.attn.q.weight"]
    assert np.array_equal(q[:3], model.layers[0].heads[0].W_Q.T)
    round_trip(model)


def test_an_imported_gpt2_checkpoint_round_trips_bit_identically(tmp_path):
    folder = ckpt.write_folder(
        tmp_path / "ckpt", ckpt.state_dict(seed=4, lm_head=True), ckpt.config()
    )
    import_gpt2(folder, tmp_path / "g.safetensors")
    round_trip(load_model(tmp_path / "g.safetensors"))


def test_tls_attention_patterns_are_headcounts():
    model = two_layer_induction(8, 3)
    bridge, tokens = to_transformer_lens(model), tokens_for(model, 6)
    with torch.no_grad():
        _, cache = bridge.run_with_cache(torch.from_numpy(tokens))
    for l, ours in enumerate(attention_patterns(model, tokens)):
        theirs = cache[f"blocks.{l}.attn.hook_pattern"].numpy()[:, : ours.shape[1]]
        assert np.abs(theirs - ours).max() <= 1e-12


# --- the traps of TL 4.x
# -----------------------------------------------------------------------------------


def test_tl_refuses_attn_scale_one_so_plain_models_get_scale_two_and_w_q_times_two():
    with pytest.raises(ValueError, match="attn_scale=1.0"):
        TransformerBridge.boot_native(
            TransformerBridgeConfig(
                d_model=4, d_head=2, n_layers=1, n_ctx=3, n_heads=1, d_vocab=3, attn_scale=1.0
            )
        )
    model = two_layer_induction(8, 3)
    bridge = to_transformer_lens(model)
    assert bridge.cfg.attn_scale == 2.0 and bridge.blocks[0].attn.original_component.scale == 2.0
    W_Q = bridge.state_dict()["blocks.1.attn.q.weight"].numpy()
    assert np.array_equal(W_Q[:5], 2 * model.layers[1].heads[0].W_Q.T)  # exact: a power of two


def test_scores_are_divided_by_sqrt_d_head_even_with_scaling_off():
    bridge = foreign_bridge(use_attn_scale=False, d_head=4, n_heads=2)
    assert bridge.blocks[0].attn.original_component.scale == 2.0  # √4, although "off"
    model = from_transformer_lens(bridge)
    assert [layer.attn_scale for layer in model.layers] == [0.5, 0.5]
    assert_same_function(model, bridge, tokens_for(model))


@pytest.mark.parametrize(
    ("scales", "exact"), [((0.5, 0.125), True), ((-1.0, 2.0), True), ((0.5, 1 / 3), False)]
)
def test_layer_scales_a_power_of_two_apart_stay_exact(tmp_path, scales, exact):
    base = gpt2_like(seed=7, d=8, vocab=6, heads=2)
    model = dataclasses.replace(
        base,
        layers=tuple(dataclasses.replace(l, attn_scale=s) for l, s in zip(base.layers, scales)),
    )
    bridge = to_transformer_lens(model)
    assert_same_function(model, bridge, tokens_for(model))
    result = write_transformer_lens(model, tmp_path / "tl")
    assert result.exact_round_trip is exact
    back = read_transformer_lens(tmp_path / "tl")
    if exact:
        assert_identical(model, back)
        return
    assert back.layers[1].attn_scale == 1 / 3  # the scale itself is kept; W_Q was rounded once
    for h, g in zip(model.layers[1].heads, back.layers[1].heads):
        assert np.allclose(h.W_Q, g.W_Q, rtol=2**-52, atol=0) and np.array_equal(h.W_K, g.W_K)


def test_weights_are_float64_and_never_processed():
    model = gpt2_like(seed=1)
    bridge = to_transformer_lens(model)
    _, tensors = transformer_lens_parts(model)
    state = bridge.state_dict()
    assert state.keys() == tensors.keys() and not bridge._weights_processed
    assert all(
        state[k].dtype == torch.float64 and np.array_equal(state[k].numpy(), v)
        for k, v in tensors.items()
    )
    bridge.process_weights()
    with pytest.raises(InputError, match="processed"):
        from_transformer_lens(bridge)


def test_the_unembedding_bias_is_written_as_zeros_when_there_is_none():
    model = gpt2_like(seed=3, readout="lm-head")  # VocabDecoder without b_U
    bridge = round_trip(model)
    assert not bridge.unembed.b_U.any() and bridge.cfg.headcount["decoder"]["b_U"] is False
    nonzero = dataclasses.replace(
        model, decoder=dataclasses.replace(model.decoder, b_U=np.arange(12.0))
    )
    assert np.array_equal(round_trip(nonzero).unembed.b_U.numpy(), np.arange(12.0))


def test_heads_and_widths_that_differ_are_zero_padded():
    model = two_layer_induction(8, 3)  # W_Q widths 4, 4 | 5; W_V widths 4, 1 | 2; heads 2 then 1
    bridge = round_trip(model)
    assert (bridge.cfg.n_heads, bridge.cfg.d_head) == (2, 5)
    state = {k: v.numpy() for k, v in bridge.state_dict().items()}
    assert (
        not state["blocks.0.attn.q.weight"][[4, 9]].any()
        and not state["blocks.0.attn.v.weight"][6:].any()
    )
    assert (
        not state["blocks.1.attn.q.weight"][5:].any()
        and not state["blocks.1.attn.o.weight"][:, 2:].any()
    )


def mixed_model() -> Transformer:
    """Heads 3, 1, 0 by layer, of different widths, with and without biases and MLPs."""
    rng = np.random.default_rng(0)
    d = 6
    r = lambda *s: rng.standard_normal(s)  # noqa: E731
    heads0 = (
        AttentionHead(r(d, 2), r(d, 2), r(d, 3), r(3, d), b_K=r(2)),
        AttentionHead(r(d, 1), r(d, 1), r(d, 1), r(1, d)),
        AttentionHead(r(d, 3), r(d, 3), r(d, 2), r(2, d), b_Q=r(3), b_V=r(2)),
    )
    layers = (
        Layer(heads0, MLP(r(d, 5), r(5), r(5, d), r(d)), b_O=r(d)),
        Layer((AttentionHead(r(d, 2), r(d, 2), r(d, 2), r(2, d)),)),
        Layer((), MLP(r(d, 2), r(2), r(2, d), r(d))),
    )
    return Transformer(r(5, d), r(7, d), layers, LinearDecoder(r(d, 6), r(6)), info={"k": [1, "x"]})


def test_mixed_heads_mlps_and_biases_are_padded_and_restored(tmp_path):
    model = mixed_model()
    bridge = round_trip(model)
    assert (bridge.cfg.n_heads, bridge.cfg.d_head, bridge.cfg.d_mlp) == (3, 3, 5)
    assert write_transformer_lens(model, tmp_path).padded


def test_a_full_mask_goes_bidirectional():
    model = dataclasses.replace(two_layer_induction(8, 3), mask="full")
    bridge = round_trip(model)
    assert bridge.cfg.attention_dir == "bidirectional"


def test_a_foreign_bridge_gets_the_plain_reading():
    bridge = foreign_bridge()
    model = from_transformer_lens(bridge)
    assert model.heads_per_layer == [4, 4] and {
        h.W_Q.shape[1] for l in model.layers for h in l.heads
    } == {2}
    assert isinstance(model.decoder, VocabDecoder) and model.decoder.readout == "lm-head"
    assert model.extensions == ["attention biases", "attention scale", "gelu", "layernorm"]
    assert_same_function(model, bridge, tokens_for(model))
    assert_identical(model, from_transformer_lens(to_transformer_lens(model)))


def test_without_the_record_a_headcount_bridge_reads_plainly():
    model = two_layer_induction(8, 3)
    bridge = to_transformer_lens(model)
    del bridge.cfg.headcount
    plain = from_transformer_lens(bridge)
    assert plain.heads_per_layer == [2, 2] and plain.layers[0].attn_scale == 0.5
    assert_same_function(plain, bridge, tokens_for(model))


def test_a_stale_record_is_refused():
    bridge = to_transformer_lens(two_layer_induction(8, 3))
    with torch.no_grad():
        bridge.blocks[1].attn.original_component.o.weight[:, 7] = 1.0  # a padded head's W_O
    with pytest.raises(InputError, match="not zero"):
        from_transformer_lens(bridge)


# --- refusals
# ----------------------------------------------------------------------------------------------


def _small(**changes) -> Transformer:
    return dataclasses.replace(gpt2_like(seed=0), **changes)


def _layers(model: Transformer, **changes) -> tuple[Layer, ...]:
    return (dataclasses.replace(model.layers[0], **changes), *model.layers[1:])


REFUSALS = {
    "table": (lambda: one_layer_induction(5, 3), "table model"),
    "readout": (
        lambda: dataclasses.replace(
            two_layer_induction(5, 3), decoder=one_layer_induction(5, 3).decoder
        ),
        "not a linear unembedding",
    ),
    "mixed layernorm": (lambda: _small(ln_final=None), "LayerNorm in some places"),
    "eps": (lambda: _small(ln_final=LayerNorm(np.ones(8), np.zeros(8), 1e-6)), "different eps"),
    "activation": (
        lambda: _small(
            layers=_layers(
                gpt2_like(), mlp=dataclasses.replace(gpt2_like().layers[0].mlp, activation="relu")
            )
        ),
        "different activations",
    ),
    "scale 0": (lambda: _small(layers=_layers(gpt2_like(), attn_scale=0.0)), "attention scale 0"),
    "W_U width": (
        lambda: _small(decoder=VocabDecoder(np.ones((5, 3)), None, "lm-head")),
        "d_model = 8",
    ),
}


@pytest.mark.parametrize("case", REFUSALS)
def test_what_transformer_lens_cannot_hold_is_refused_saying_why(case, tmp_path):
    make, needle = REFUSALS[case]
    for call in (to_transformer_lens, lambda m: write_transformer_lens(m, tmp_path / "x")):
        with pytest.raises(InputError, match=needle):
            call(make())
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("fields", "needle"),
    [
        ({"normalization_type": "RMS"}, "final_rms"),  # RMS blocks, a LayerNorm at the end
        ({"normalization_type": "LNPre"}, "normalization_type"),
        ({"attn_scores_soft_cap": 30.0}, "soft cap"),
        ({"act_fn": "solu"}, "act_fn"),
    ],
)
def test_tl_features_headcount_lacks_are_refused_by_name(fields, needle):
    with pytest.raises(InputError, match=needle):
        from_transformer_lens(foreign_bridge(**fields))


def test_a_foreign_llama_style_bridge_reads_as_the_function_it_computes():
    """RMSNorm, TL's interleaved rotary on part of each head, a gated SiLU MLP and grouped-query
    heads (issue 32): read without a record, the model computes the bridge's logits (TL runs RMSNorm
    and its rotary tables in float32: 1e-5 relative)."""
    bridge = foreign_bridge(
        normalization_type="RMS", final_rms=True, positional_embedding_type="rotary",
        rotary_dim=2, rotary_base=500.0, gated_mlp=True, act_fn="silu", n_key_value_heads=2,
    )  # fmt: skip
    model = from_transformer_lens(bridge)
    assert {"rmsnorm", "rotary", "gated mlp", "silu"} <= set(model.extensions)
    assert model.layers[0].rotary.layout == "interleaved"
    tokens = np.array([[0, 3, 6, 1, 2, 5]])
    with torch.no_grad():
        theirs = bridge(torch.from_numpy(tokens)).numpy()
    dec = model.decoder
    ours = residual_stream(model, tokens) @ dec.W_U + (0 if dec.b_U is None else dec.b_U)
    assert np.abs(ours - theirs).max() <= 1e-5 * np.abs(theirs).max()


def test_a_missing_extra_is_an_input_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "transformer_lens", None)
    monkeypatch.setitem(sys.modules, "transformer_lens.config", None)
    monkeypatch.setitem(sys.modules, "transformer_lens.model_bridge", None)
    for call in (
        lambda: to_transformer_lens(two_layer_induction(4, 2)),
        lambda: from_transformer_lens(None),
    ):
        with pytest.raises(InputError) as err:
            call()
        assert (
            str(err.value)
            == TL_MISSING
            == "TransformerLens is not installed: pip install 'headcount[tl]'"
        )


def test_only_bridges_are_read():
    with pytest.raises(InputError, match="TransformerBridge, got dict"):
        from_transformer_lens({})


def test_importing_headcount_never_imports_transformer_lens():
    code = (
        "import sys, headcount.cli, headcount.interop.transformer_lens_io; "
        "assert 'transformer_lens' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# --- files
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "padded"),
    [
        (lambda: two_layer_induction(8, 3), True),
        (lambda: gpt2_like(seed=9, readout="hidden"), False),
    ],
)
def test_export_files_and_the_snippet_load_the_same_model(tmp_path, make, padded):
    model = make()
    result = write_transformer_lens(model, tmp_path / "new" / "tl")
    folder = tmp_path / "new" / "tl"
    names = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
    assert sorted(os.listdir(folder)) == sorted((*names, "load.py"))
    assert result.files == tuple(str(folder / n) for n in (*names, "load.py"))
    assert result.exact_round_trip and result.heads == tuple(model.heads_per_layer)
    assert result.padded is padded
    assert (folder / "load.py").read_text().count("\n") == 4
    assert_identical(model, read_transformer_lens(folder))
    bridge = runpy.run_path(str(folder / "load.py"))["bridge"]  # the snippet, run as written
    assert_same_function(model, bridge, tokens_for(model))
    assert_identical(model, from_transformer_lens(bridge))
    config = json.loads((folder / "config.json").read_text())
    assert TransformerBridgeConfig.from_dict(config).d_model == model.d_model
    assert result.to_json()["config"] == {k: v for k, v in config.items() if k != "headcount"}


def test_files_need_no_transformer_lens(tmp_path, monkeypatch):
    for name in ("transformer_lens", "transformers", "tokenizers"):
        monkeypatch.setitem(sys.modules, name, None)
    model = sequence_model(2, layers=2, heads=2, dim=8, mlp=True, layernorm=True, activation="gelu")
    write_transformer_lens(model, tmp_path)
    assert_identical(model, read_transformer_lens(tmp_path))


def test_a_config_without_the_record_reads_plainly(tmp_path):
    model = two_layer_induction(8, 3)
    write_transformer_lens(model, tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(
        json.dumps({k: v for k, v in config.items() if k != "headcount"})
    )
    plain = read_transformer_lens(tmp_path)
    assert plain.heads_per_layer == [2, 2] and plain.info == {}
    assert (
        np.abs(hc_logits(plain, tokens_for(model)) - hc_logits(model, tokens_for(model))).max()
        < 1e-12
    )


def _edit_config(folder, change):
    config = json.loads((folder / "config.json").read_text())
    change(config)
    (folder / "config.json").write_text(json.dumps(config))


HOSTILE_CONFIGS = {
    "d_model a string": (lambda c: c.update(d_model="19"), "d_model must be an integer"),
    "n_layers huge": (lambda c: c.update(n_layers=10**9), "n_layers must be an integer in 0..256"),
    "n_heads a bool": (lambda c: c.update(n_heads=True), "n_heads must be an integer"),
    "d_model mismatched": (lambda c: c.update(d_model=20), "has shape"),
    "eps NaN": (lambda c: c.update(eps=float("nan")), "eps must be a positive number"),
    "RMS": (lambda c: c.update(normalization_type="RMS"), "normalization_type"),
    "direction": (lambda c: c.update(attention_dir="sideways"), "attention_dir"),
    "record version": (lambda c: c["headcount"].update(version=2), "record is not"),
    "record widths": (
        lambda c: c["headcount"]["layers"][0]["heads"][0].update(d_head=9),
        "layer 0",
    ),
    "record layers": (lambda c: c["headcount"].update(layers=[]), "layers"),
    "record scale": (lambda c: c["headcount"]["layers"][1].update(q_factor=0), "layer 1"),
    "record decoder": (lambda c: c["headcount"].update(decoder={"kind": "tree"}), "decoder"),
    "record info": (lambda c: c["headcount"].update(info=[1]), "'info'"),
    "record stale": (
        lambda c: c["headcount"]["layers"][0]["heads"][0].update(d_head=1),
        "not zero",
    ),
    "not an object": (lambda c: c.clear() or c.update(x=[]), "d_model"),
}


@pytest.mark.parametrize("case", HOSTILE_CONFIGS)
def test_hostile_configs_are_refused_on_one_line(tmp_path, case):
    write_transformer_lens(two_layer_induction(8, 3), tmp_path)
    change, needle = HOSTILE_CONFIGS[case]
    _edit_config(tmp_path, change)
    with pytest.raises(InputError, match=needle) as err:
        read_transformer_lens(tmp_path)
    assert "\n" not in str(err.value)


def test_hostile_folders_and_weights_are_refused(tmp_path):
    model = two_layer_induction(8, 3)
    good = tmp_path / "good"
    write_transformer_lens(model, good)
    cases = {
        "file": (good / "load.py", "not a folder"),
        "missing folder": (tmp_path / "nothing", "not a folder"),
    }
    for name in ("config.json", "model.safetensors"):
        folder = tmp_path / f"no-{name}"
        write_transformer_lens(model, folder)
        (folder / name).unlink()
        cases[f"no {name}"] = (folder, "does not exist")
    for name, payload, needle in (
        ("list", "[1, 2]", "JSON object"),
        ("deep", "[" * 100_000 + "]" * 100_000, "nests"),
        ("digits", '{"d_model": ' + "9" * 5000 + "}", "digits"),
        ("text", "not json", "not JSON"),
    ):
        folder = tmp_path / f"config-{name}"
        write_transformer_lens(model, folder)
        (folder / "config.json").write_text(payload)
        cases[f"config {name}"] = (folder, needle)
    _, tensors = transformer_lens_parts(model)
    from safetensors.numpy import save_file

    for name, change, needle in (
        ("nan", lambda t: t["embed.weight"].__setitem__((0, 0), np.nan), "NaN"),
        ("extra", lambda t: t.update(extra=np.zeros(2)), "does not describe"),
        ("missing", lambda t: t.pop("unembed.bias"), "missing"),
        ("shape", lambda t: t.update({"pos_embed.weight": np.zeros((3, 19))}), "has shape"),
    ):
        folder = tmp_path / f"weights-{name}"
        write_transformer_lens(model, folder)
        edited = {k: v.copy() for k, v in tensors.items()}
        change(edited)
        save_file(edited, str(folder / "model.safetensors"))
        cases[f"weights {name}"] = (folder, needle)
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "config.json").write_text((good / "config.json").read_text())
    (tmp_path / "garbage" / "model.safetensors").write_bytes(b"\x00" * 64)
    cases["garbage weights"] = (tmp_path / "garbage", "not a safetensors file")
    fifo = tmp_path / "fifo"
    write_transformer_lens(model, fifo)
    (fifo / "config.json").unlink()
    os.mkfifo(fifo / "config.json")
    cases["fifo config"] = (fifo, "not a regular file")
    for name, (folder, needle) in cases.items():
        with pytest.raises(InputError, match=needle) as err:
            read_transformer_lens(folder)
        assert "\n" not in str(err.value), name
    assert isinstance(
        pytest.raises(ModelFileError, read_transformer_lens, tmp_path / "weights-nan").value,
        InputError,
    )


def test_out_must_be_a_folder(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="not a folder"):
        write_transformer_lens(two_layer_induction(4, 2), tmp_path / "file")


# --- TransformerLens's own tools on exports (issue 30)
# ---------------------------------------------------------------------


def exported_bridges(model: Transformer, tmp_path) -> dict:
    """{"memory": to_transformer_lens(model), "files": the bridge the export's load.py builds}."""
    write_transformer_lens(model, tmp_path / "tl")
    files = runpy.run_path(str(tmp_path / "tl" / "load.py"))["bridge"]
    return {"memory": to_transformer_lens(model), "files": files}


def test_the_tokenizer_is_the_symbols_and_no_bos_is_prepended(tmp_path):
    model = two_layer_induction(8, 3)
    tokens = tokens_for(model, 3)
    for where, bridge in exported_bridges(model, tmp_path).items():
        tok = bridge.tokenizer
        symbols = {i: tok.convert_ids_to_tokens(i) for i in range(3)}
        assert symbols == {i: token_text(i) for i in range(3)}, where
        assert (len(tok), tok.unk_token_id, tok.pad_token_id) == (5, 3, 4)
        assert (tok.convert_ids_to_tokens(3), tok.convert_ids_to_tokens(4)) == (UNK, PAD)
        assert not bridge.cfg.default_prepend_bos and not bridge.cfg.tokenizer_prepends_bos
        assert bridge.to_tokens("0 1 2 0").tolist() == [[0, 1, 2, 0]]  # exactly, no BOS
        assert bridge.to_str_tokens("2  1\t0") == ["2", "1", "0"]
        texts = [bridge.to_string(torch.from_numpy(row)) for row in tokens]
        assert texts == [" ".join(map(token_text, row)) for row in tokens]
        assert np.array_equal(bridge.to_tokens(texts).numpy(), tokens)
        with torch.no_grad():  # text runs exactly as the tokens do
            by_text, cache = bridge.run_with_cache(texts)
        assert np.array_equal(by_text.numpy(), tl_logits(bridge, tokens))
        for l, ours in enumerate(attention_patterns(model, tokens)):
            theirs = cache[f"blocks.{l}.attn.hook_pattern"].numpy()[:, : ours.shape[1]]
            assert np.abs(theirs - ours).max() <= 1e-12
        # what is not the symbols never runs: neither mapped to a symbol nor silently shifted
        assert bridge.to_tokens("0 7 1").tolist() == [[0, 3, 1]]
        assert bridge.to_tokens("0 1", prepend_bos=True).tolist() == [[4, 0, 1]]
        for text, bos in (("0 7 1", False), ("0 1", True)):
            with pytest.raises(IndexError):
                bridge(bridge.to_tokens(text, prepend_bos=bos))


def test_tl_detect_head_finds_the_constructions_heads(tmp_path):
    """transformer_lens.head_detector.detect_head on the two-layer construction (heads (2, 1): the
    previous-token head L0H0, the duplicate-token head L0H1, the induction head L1H0; L1H1 is
    padding) and a repeated random sequence ranks each built head first among the real heads, and
    the induction head's score is the highest TL's "mul" measure allows: TL divides the attention
    on its detection pattern by all rows, and rows without an earlier occurrence of their token have
    no detection cell, so a perfect induction head scores (rows with one) / length (here 10/14), not
    1. TL's detect_head has no threshold: "highest" is what it can say. It takes text only (a token
    tensor goes through bridge.to_string)."""
    model = two_layer_induction(16, 4)
    half = np.random.default_rng(5).integers(0, 4, 7)
    tokens = np.concatenate([half, half])  # 14 tokens: detect_head wants fewer than n_ctx = 16
    earlier = (tokens[:, None] == tokens[None, :]) & np.tri(14, k=-1, dtype=bool)
    best = earlier.any(axis=1).sum() / 14
    built = {"previous_token_head": 0, "duplicate_token_head": 1, "induction_head": 2}
    for where, bridge in exported_bridges(model, tmp_path).items():
        text = bridge.to_string(torch.from_numpy(tokens))
        real = {l: list(range(k)) for l, k in enumerate(bridge.cfg.headcount_heads_per_layer)}
        for name, first in built.items():
            scores = detect_head(bridge, text, name).numpy()
            only_real = detect_head(bridge, text, name, heads=real).numpy()
            assert only_real[1, 1] == -1 and np.array_equal(only_real[:, :1], scores[:, :1])
            flat = [scores[0, 0], scores[0, 1], scores[1, 0]]  # the real heads, in order
            assert int(np.argmax(flat)) == first, (where, name, scores)
        induction = detect_head(bridge, text, "induction_head").numpy()
        assert abs(induction[1, 0] - best) <= 1e-6 and best == 10 / 14
        assert induction[1, 0] > induction.flatten()[[0, 1, 3]].max()  # the phantom L1H1 too


def test_unequal_heads_per_layer_are_flagged_and_their_padding_is_phantom(tmp_path):
    """TL holds 3 heads in every layer of a model with heads 3, 1, 0: the 5 padded heads are
    listed on the config, attend uniformly (zero W_Q, W_K) and write nothing (zero W_V, W_O), and
    the way back has exactly the true heads."""
    model = mixed_model()
    phantoms = [[1, 1], [1, 2], [2, 0], [2, 1], [2, 2]]
    tokens = tokens_for(model, 4)
    uniform = np.tri(7) / np.arange(1, 8)[:, None]
    for where, bridge in exported_bridges(model, tmp_path).items():
        assert bridge.cfg.n_heads == 3
        assert bridge.cfg.headcount_heads_per_layer == [3, 1, 0], where
        assert bridge.cfg.headcount_padded_heads == phantoms
        with torch.no_grad():
            _, cache = bridge.run_with_cache(torch.from_numpy(tokens))
        for l, h in phantoms:
            pattern = cache[f"blocks.{l}.attn.hook_pattern"][:, h].numpy()
            assert np.abs(pattern - uniform).max() <= 1e-15
            assert not cache[f"blocks.{l}.attn.hook_z"][:, :, h].numpy().any()
        back = from_transformer_lens(bridge)
        assert back.heads_per_layer == [3, 1, 0]
        assert_identical(model, back)
    config = json.loads((tmp_path / "tl" / "config.json").read_text())
    assert config["headcount_heads_per_layer"] == [3, 1, 0]
    assert config["headcount_padded_heads"] == phantoms
    assert_identical(model, read_transformer_lens(tmp_path / "tl"))
    assert to_transformer_lens(two_layer_induction(8, 3)).cfg.headcount_padded_heads == [[1, 1]]
    same = to_transformer_lens(gpt2_like(seed=9, readout="hidden")).cfg
    assert same.headcount_padded_heads == [] and len(set(same.headcount_heads_per_layer)) == 1


def test_the_tokenizer_files_are_data_the_reader_never_opens(tmp_path):
    model = two_layer_induction(8, 3)
    write_transformer_lens(model, tmp_path)
    tokenizer = json.loads((tmp_path / "tokenizer.json").read_text())
    assert tokenizer["model"]["type"] == "WordLevel" and tokenizer["post_processor"] is None
    assert tokenizer["model"]["vocab"] == {"0": 0, "1": 1, "2": 2, UNK: 3, PAD: 4}
    settings = json.loads((tmp_path / "tokenizer_config.json").read_text())
    assert "bos_token" not in settings and settings["model_max_length"] == 8
    (tmp_path / "tokenizer.json").write_bytes(b"\x80\x04cos\nsystem\n.")  # pickle opcodes
    (tmp_path / "tokenizer_config.json").write_text("[" * 100_000)
    assert_identical(model, read_transformer_lens(tmp_path))
