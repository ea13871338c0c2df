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


def _hooked(model, kv_heads: int) -> tuple[dict, dict]:
    """A HookedTransformer (TransformerLens 2/3) state dict and config of an imported llama-style
    model, written from its weights dict: property names, grouped K/V as attn._W_K / _W_V, the
    buffers HookedTransformer saves, and every attention bias (zeros)."""
    w = model.weights()
    H, d, dh = w["blocks.0.attn.W_Q"].shape
    group = H // kv_heads
    state = {
        "embed.W_E": w["W_E"],
        "unembed.W_U": w["W_U"],
        "unembed.b_U": np.zeros(w["W_U"].shape[1]),
    }
    state["ln_final.w"] = w["ln_final.w"]
    for l in range(len(model.layers)):
        p = f"blocks.{l}."
        for k in ("ln1.w", "ln2.w", "mlp.W_in", "mlp.b_in", "mlp.W_out", "mlp.b_out", "mlp.W_gate"):
            state[p + k] = w[p + k]
        state[p + "attn.W_Q"], state[p + "attn.W_O"] = w[p + "attn.W_Q"], w[p + "attn.W_O"]
        state[p + "attn.b_Q"] = w.get(p + "attn.b_Q", np.zeros((H, dh)))
        state[p + "attn.b_O"] = w.get(p + "attn.b_O", np.zeros(d))
        for k in ("K", "V"):
            state[p + f"attn._W_{k}"] = w[p + f"attn.W_{k}"][::group]
            state[p + f"attn._b_{k}"] = w.get(p + f"attn.b_{k}", np.zeros((H, dh)))[::group]
        state[p + "attn.mask"] = np.tril(np.ones((8, 8)))
        state[p + "attn.IGNORE"] = np.array(-1e5)
        state[p + "attn.rotary_sin"] = state[p + "attn.rotary_cos"] = np.zeros((8, dh))
    config = {
        "n_layers": len(model.layers), "d_model": d, "d_head": dh, "n_heads": H, "n_ctx": 8,
        "d_vocab": w["W_E"].shape[0], "d_mlp": w["blocks.0.mlp.W_in"].shape[1], "act_fn": "silu",
        "normalization_type": "RMS", "final_rms": True, "positional_embedding_type": "rotary",
        "rotary_dim": model.layers[0].rotary.dims, "rotary_base": model.layers[0].rotary.theta,
        "rotary_adjacent_pairs": False, "gated_mlp": True, "n_key_value_heads": kv_heads,
        "eps": model.ln_final.eps, "use_attn_scale": True, "attn_scale": dh**0.5,
    }  # fmt: skip
    return state, config


@pytest.mark.parametrize(("index", "kv_heads"), [(0, 2), (2, 4)], ids=["gqa", "mha"])
def test_hooked_transformer_state_dicts_read_as_their_model(index, kv_heads, tmp_path):
    import json

    from headcount.core.model import load_model
    from headcount.interop.transformer_lens_io import read_hooked_transformer

    model = _imported(index)
    state, config = _hooked(model, kv_heads)
    torch.save(
        {k: torch.from_numpy(np.asarray(v, dtype=np.float64)) for k, v in state.items()},
        tmp_path / "m.pt",
    )
    (tmp_path / "cfg.json").write_text(json.dumps(config))
    read = read_hooked_transformer(tmp_path / "m.pt", tmp_path / "cfg.json")
    _same_function(model, read, TOKENS, 1e-12)
    assert read.extensions == model.extensions
    import_transformer_lens(tmp_path / "m.pt", tmp_path / "h.safetensors", tmp_path / "cfg.json")
    _same_function(model, load_model(tmp_path / "h.safetensors"), TOKENS, 1e-12)
    hostile = {
        "shortformer": config | {"positional_embedding_type": "shortformer"},
        "solu": config | {"act_fn": "solu_ln"},
        "kv 3": config | {"n_key_value_heads": 3},
        "no heads": {k: v for k, v in config.items() if k != "n_heads"},
        "scaling": config | {"use_NTK_by_parts_rope": True},
        "LNPre mix": config | {"normalization_type": "weird"},
    }
    for label, bad in hostile.items():
        (tmp_path / "bad.json").write_text(json.dumps(bad))
        with pytest.raises(InputError) as info:
            read_hooked_transformer(tmp_path / "m.pt", tmp_path / "bad.json")
        assert "\n" not in str(info.value), label
    with pytest.raises(InputError, match="config"):
        import_transformer_lens(tmp_path / "m.pt", tmp_path / "x.safetensors")


def _tl_attn_only_shortformer(state: dict, cfg: dict, tokens: np.ndarray) -> np.ndarray:
    """HookedTransformer's logits for an attention-only shortformer model, in NumPy: the residual
    starts at W_E, and each layer's q and k read ln1(x) + W_pos."""

    def ln(x, w, b):
        c = x - x.mean(-1, keepdims=True)
        return c / np.sqrt((c * c).mean(-1, keepdims=True) + cfg["eps"]) * w + b

    n = tokens.shape[1]
    x, pos = state["embed.W_E"][tokens], state["pos_embed.W_pos"][:n]
    for l in range(cfg["n_layers"]):
        p = f"blocks.{l}."
        a = ln(x, state[p + "ln1.w"], state[p + "ln1.b"])
        q = (
            np.einsum("bnd,hde->bhne", a + pos, state[p + "attn.W_Q"])
            + state[p + "attn.b_Q"][:, None]
        )
        k = (
            np.einsum("bnd,hde->bhne", a + pos, state[p + "attn.W_K"])
            + state[p + "attn.b_K"][:, None]
        )
        v = np.einsum("bnd,hde->bhne", a, state[p + "attn.W_V"]) + state[p + "attn.b_V"][:, None]
        s = q @ k.transpose(0, 1, 3, 2) / cfg["attn_scale"]
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -np.inf)
        pattern = np.exp(s - s.max(-1, keepdims=True))
        z = (pattern / pattern.sum(-1, keepdims=True)) @ v
        x = x + np.einsum("bhne,hed->bnd", z, state[p + "attn.W_O"]) + state[p + "attn.b_O"]
    x = ln(x, state["ln_final.w"], state["ln_final.b"])
    return x @ state["unembed.W_U"] + state["unembed.b_U"]


def test_attention_only_shortformer_state_dicts_read_as_transformer_lens_computes(tmp_path):
    """The toy models induction heads were found in (TransformerLens's attn-only models): LN,
    attention only, shortformer positions. Read from a HookedTransformer state dict, the model
    computes what HookedTransformer computes; TL's native model has no shortformer, so it is not
    exported there."""
    import json

    from headcount.interop.transformer_lens_io import read_hooked_transformer

    rng = np.random.default_rng(7)
    L, H, d, dh, n_ctx, vocab = 2, 2, 8, 4, 8, 6
    g = lambda *shape: rng.standard_normal(shape)  # noqa: E731
    state = {"embed.W_E": g(vocab, d), "pos_embed.W_pos": g(n_ctx, d), "unembed.W_U": g(d, vocab)}
    state |= {"unembed.b_U": g(vocab), "ln_final.w": 1 + 0.1 * g(d), "ln_final.b": g(d)}
    for l in range(L):
        p = f"blocks.{l}."
        state |= {p + "ln1.w": 1 + 0.1 * g(d), p + "ln1.b": g(d), p + "attn.b_O": g(d)}
        state |= {p + f"attn.W_{k}": g(H, d, dh) for k in "QKV"} | {p + "attn.W_O": g(H, dh, d)}
        state |= {p + f"attn.b_{k}": g(H, dh) for k in "QKV"}
        state |= {p + "attn.mask": np.tril(np.ones((n_ctx, n_ctx))), p + "attn.IGNORE": g(1)}
    cfg = {
        "n_layers": L, "d_model": d, "d_head": dh, "n_heads": H, "n_ctx": n_ctx, "d_vocab": vocab,
        "attn_only": True, "normalization_type": "LN", "positional_embedding_type": "shortformer",
        "eps": 1e-5, "attn_scale": dh**0.5, "act_fn": "gelu_new",
    }  # fmt: skip
    torch.save({k: torch.from_numpy(v) for k, v in state.items()}, tmp_path / "m.pt")
    (tmp_path / "cfg.json").write_text(json.dumps(cfg))
    model = read_hooked_transformer(tmp_path / "m.pt", tmp_path / "cfg.json")
    assert "shortformer" in model.extensions and model.positions == "qk"
    tokens = rng.integers(0, vocab, size=(3, n_ctx))
    theirs = _tl_attn_only_shortformer(state, cfg, tokens)
    _same = _logits(model, tokens)
    assert np.abs(_same - theirs).max() <= 1e-12 * np.abs(theirs).max()
    with pytest.raises(InputError, match="shortformer"):
        transformer_lens_parts(model)
    weights, options = model.weights(), model.weight_options()
    from headcount.core.model import Transformer

    again = Transformer.from_weights(weights, **options)
    assert np.array_equal(residual_stream(again, tokens), residual_stream(model, tokens))
    from headcount.core.model import load_model

    save_model(model, tmp_path / "s.safetensors")
    loaded = load_model(tmp_path / "s.safetensors")
    assert loaded.positions == "qk"
    assert np.array_equal(residual_stream(loaded, tokens), residual_stream(model, tokens))
