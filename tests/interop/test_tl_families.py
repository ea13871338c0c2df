"""The Llama-family parts through TransformerLens (issue 32; interop.transformer_lens_blocks):
every imported shape TL's native model can hold goes to a TransformerBridge that computes it (TL
runs RMSNorm and its rotary tables in float32, so to 1e-5 relative, the argmax exactly), comes back
bit-identically, and reads the same without headcount's record (TL's own interleaved rotation);
files written by `export transformer-lens` import back the same; what TL cannot hold is refused by
name."""

from __future__ import annotations

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.model import save_model
from headcount.core.passes import residual_stream
from headcount.interop.hf import hf_from_module
from headcount.interop.transformer_lens_state import model_from_parts, transformer_lens_parts
from tests.interop.test_hf_families import SHAPES, _model

pytest.importorskip("transformer_lens")
torch = pytest.importorskip("torch")
from headcount.interop.transformer_lens_io import (  # noqa: E402
    export_transformer_lens,
    from_transformer_lens,
    import_transformer_lens,
    to_transformer_lens,
)

TOKENS = np.array([[3, 1, 4, 1, 5, 9, 2, 6]])
# the shapes TL's native model cannot hold, and why
REFUSED = {
    1: "has biases",
    3: "parallel residual",
    5: "parallel residual",
    9: "1 \\+ w",
    10: "1 \\+ w",
}


def _imported(index: int):
    _, config_class, model_class, extra, _ = SHAPES[index]
    _, hf = _model(config_class, model_class, extra)
    return hf_from_module(hf.double(), n_ctx=8)


def _logits(model, tokens):
    x = residual_stream(model, tokens)
    return x @ model.decoder.W_U + (0 if model.decoder.b_U is None else model.decoder.b_U)


def _same_function(a, b, tokens, tolerance: float) -> None:
    ours, theirs = _logits(a, tokens), _logits(b, tokens)
    assert np.abs(ours - theirs).max() <= tolerance * np.abs(ours).max()


@pytest.mark.parametrize("index", range(len(SHAPES)), ids=[s[0] for s in SHAPES])
def test_families_through_transformer_lens(index, tmp_path):
    model = _imported(index)
    if index in REFUSED:
        with pytest.raises(InputError, match=REFUSED[index]):
            to_transformer_lens(model)
        return
    bridge = to_transformer_lens(model)
    with torch.no_grad():
        theirs = bridge(torch.tensor(TOKENS)).double().numpy()
    ours = _logits(model, TOKENS)
    assert np.abs(ours - theirs).max() <= 1e-5 * np.abs(ours).max()
    assert np.array_equal(ours.argmax(-1), theirs.argmax(-1))
    back = from_transformer_lens(bridge)
    assert np.array_equal(residual_stream(back, TOKENS), residual_stream(model, TOKENS))
    assert back.extensions == model.extensions and back.layers[0].rotary == model.layers[0].rotary
    for mine, theirs_layer in zip(model.layers, back.layers):
        for h, g in zip(mine.heads, theirs_layer.heads):
            assert all(np.array_equal(getattr(h, n), getattr(g, n)) for n in ("W_Q", "W_K", "W_V"))
    # without the record: TL's own reading (interleaved rotation of permuted coordinates)
    config, tensors = transformer_lens_parts(model)
    plain = model_from_parts({k: v for k, v in config.items() if k != "headcount"}, tensors)
    assert plain.layers[0].rotary.layout == "interleaved"
    _same_function(model, plain, TOKENS, 1e-12)
    # the files
    save_model(model, tmp_path / "m.safetensors")
    export_transformer_lens(tmp_path / "m.safetensors", tmp_path / "tl")
    import_transformer_lens(tmp_path / "tl", tmp_path / "back.safetensors")
    from headcount.core.model import load_model

    again = load_model(tmp_path / "back.safetensors")
    assert np.array_equal(residual_stream(again, TOKENS), residual_stream(model, TOKENS))


def test_grouped_heads_go_as_key_value_heads():
    model = _imported(0)  # 4 heads, 2 key/value heads
    config, tensors = transformer_lens_parts(model)
    assert config["n_key_value_heads"] == 2 and config["normalization_type"] == "RMS"
    assert tensors["blocks.0.attn.k.weight"].shape == (2 * 4, 16)
    assert config["positional_embedding_type"] == "rotary" and "pos_embed.weight" not in tensors
    assert config["gated_mlp"] and "blocks.0.mlp.gate.weight" in tensors


def test_what_transformer_lens_cannot_hold_is_refused():
    neox = _imported(3)  # parallel residual
    with pytest.raises(InputError, match="parallel residual"):
        transformer_lens_parts(neox)
    gemma = _imported(9)
    with pytest.raises(InputError, match="1 \\+ w"):
        transformer_lens_parts(gemma)
    config, tensors = transformer_lens_parts(_imported(0))
    scaled = config | {"rope_scaling": {"type": "linear", "factor": 2.0}}
    with pytest.raises(InputError, match="rope_scaling"):
        model_from_parts(scaled, tensors)
    with pytest.raises(InputError, match="does not divide"):
        model_from_parts(config | {"n_key_value_heads": 3}, tensors)
