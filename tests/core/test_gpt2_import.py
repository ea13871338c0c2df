"""The GPT-2 importer (interop.gpt2, interop.gpt2_layout): random Hugging Face GPT-2 models of
several shapes, saved the ways people save them, imported and compared with transformers' own
forward pass — float64 hidden states within 1e-10 relative, float32 predictions identical — and the
layout, dtypes and checks on state dicts built here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from headcount.common.errors import InputError
from headcount.common.resources import memory_limit_of
from headcount.core.certify.evaluate import emulate
from headcount.core.model.files import load_model
from headcount.core.model.vocab import VocabDecoder, VocabMap
from headcount.core.numbers.precision import FLOAT64, Precision
from headcount.core.passes.forward import residual_stream
from headcount.interop.gpt2 import import_gpt2
from tests.core.gpt2_checkpoints import config, state_dict, write_folder, write_json

# --- agreement with transformers
# ----------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """One random HF model: its config, class and how it is saved."""

    name: str
    layers: int
    heads: int
    d: int
    vocab: int
    n_ctx: int
    activation: str
    lm_head: bool  # GPT2LMHeadModel (else GPT2Model)
    saved: str  # pretrained | bin | pt | pt-orig-mod | bare
    extra: dict = field(default_factory=dict)
    readout: str | None = None


SHAPES = [
    Shape("1L1H d8 tied, save_pretrained", 1, 1, 8, 11, 6, "gelu_new", True, "pretrained"),
    Shape(
        "2L2H d16 GPT2Model gelu eps1e-6",
        2,
        2,
        16,
        20,
        8,
        "gelu",
        False,
        "pretrained",
        {"layer_norm_epsilon": 1e-6},
    ),
    Shape(
        "3L4H d32 untied, pytorch_model.bin",
        3,
        4,
        32,
        50,
        16,
        "gelu_new",
        True,
        "bin",
        {"tie_word_embeddings": False},
    ),
    Shape(
        "2L2H d24 inverse layer idx, .pt + old buffers",
        2,
        2,
        24,
        30,
        12,
        "gelu",
        True,
        "pt",
        {"scale_attn_by_inverse_layer_idx": True},
    ),
    Shape(
        "4L3H d12 n_inner 20, _orig_mod. .pt",
        4,
        3,
        12,
        17,
        10,
        "gelu_pytorch_tanh",
        False,
        "pt-orig-mod",
        {"n_inner": 20},
    ),
    Shape(
        "1L4H d16 bare .safetensors, hidden readout",
        1,
        4,
        16,
        16,
        9,
        "gelu_new",
        False,
        "bare",
        readout="hidden",
    ),
    Shape(
        "2L1H d8 relu, no attention scale",
        2,
        1,
        8,
        13,
        7,
        "relu",
        True,
        "pretrained",
        {"scale_attn_weights": False},
    ),
]


def _hf_model(shape: Shape, seed: int):
    """A random HF model of `shape` in float64, eval mode, every parameter (LayerNorms, biases)
    random."""
    transformers = pytest.importorskip("transformers")
    import torch

    transformers.logging.set_verbosity_error()
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(
        n_layer=shape.layers,
        n_head=shape.heads,
        n_embd=shape.d,
        vocab_size=shape.vocab,
        n_positions=shape.n_ctx,
        activation_function=shape.activation,
        bos_token_id=0,
        eos_token_id=0,
        attn_implementation="eager",
        **shape.extra,
    )
    cls = transformers.GPT2LMHeadModel if shape.lm_head else transformers.GPT2Model
    model = cls(cfg).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():  # tied weights appear once
            is_scale = ".ln_" in name and name.endswith("weight") or name.endswith("ln_f.weight")
            p.copy_(1 + 0.3 * torch.randn_like(p) if is_scale else 0.5 * torch.randn_like(p))
    return model


def _save(model, shape: Shape, folder: Path) -> tuple[Path, Path | None]:
    """(PATH, config) of `model` saved as `shape.saved` says."""
    import torch

    folder.mkdir()
    prefix = "transformer." if shape.lm_head else ""
    if shape.saved == "pretrained":
        model.save_pretrained(folder)
        return folder, None
    if shape.saved == "bin":
        model.save_pretrained(folder, safe_serialization=False)
        if not (
            folder / "pytorch_model.bin"
        ).exists():  # transformers ≥ 5 writes safetensors regardless
            (folder / "model.safetensors").unlink()
            torch.save(model.state_dict(), folder / "pytorch_model.bin")
        return folder, None
    model.config.to_json_file(folder / "config.json")
    state = dict(model.state_dict())
    if shape.saved == "bare":
        from safetensors.torch import save_file as save_torch

        save_torch({k: v.contiguous() for k, v in state.items()}, folder / "sd.safetensors")
        return folder / "sd.safetensors", folder / "config.json"
    if shape.saved == "pt":  # the causal-mask buffers transformers < 4.27 saved
        n = shape.n_ctx
        for l in range(shape.layers):
            state[f"{prefix}h.{l}.attn.bias"] = torch.tril(torch.ones(n, n, dtype=torch.bool)).view(
                1, 1, n, n
            )
            state[f"{prefix}h.{l}.attn.masked_bias"] = torch.tensor(-1e4)
    else:  # torch.compile's wrapper
        state = {f"_orig_mod.{k}": v for k, v in state.items()}
    torch.save(state, folder / "sd.pt")
    return folder / "sd.pt", folder / "config.json"


@pytest.mark.parametrize("shape", SHAPES, ids=[s.name for s in SHAPES])
def test_hf_gpt2_imports_and_agrees(tmp_path, shape):
    import torch

    model = _hf_model(shape, seed=len(shape.name))
    path, cfg = _save(model, shape, tmp_path / "ckpt")
    out = tmp_path / "m.safetensors"
    result = import_gpt2(path, out, config=cfg, readout=shape.readout)
    ours = load_model(out)
    assert len(result.ignored_buffers) == (2 * shape.layers if shape.saved == "pt" else 0)
    assert result.prefix == {"pt-orig-mod": "_orig_mod."}.get(
        shape.saved, "transformer." if shape.lm_head else ""
    )
    assert (result.layers, result.heads, result.d_model, result.vocab, result.n_ctx) == (
        shape.layers,
        (shape.heads,) * shape.layers,
        shape.d,
        shape.vocab,
        shape.n_ctx,
    )
    assert ours.extensions == sorted(
        {"attention biases", "layernorm"}
        | ({"gelu"} if shape.activation != "relu" else set())
        | ({"attention scale"} if shape.extra.get("scale_attn_weights", True) else set())
    )
    tokens = np.random.default_rng(1).integers(0, shape.vocab, size=(16, shape.n_ctx))
    ids = torch.tensor(tokens)
    body = model.transformer if shape.lm_head else model
    with torch.no_grad():
        hidden = body.double()(ids).last_hidden_state.numpy()
    mine = residual_stream(ours, tokens, FLOAT64)
    assert np.abs(mine - hidden).max() <= 1e-10 * np.abs(hidden).max()

    with torch.no_grad():
        model = model.float()
        if shape.readout == "hidden":
            logits = model(ids).last_hidden_state
        elif shape.lm_head:
            logits = model(ids).logits
        else:
            logits = model(ids).last_hidden_state @ model.wte.weight.T
    assert np.array_equal(emulate(ours, tokens, Precision("float32")), logits.argmax(-1).numpy())


def test_hf_shapes_cover_the_issue():
    """≥ 6 shapes: 1–4 layers, 1–4 heads, several widths, both GELUs, the inverse layer index
    scale."""
    assert len(SHAPES) >= 6
    assert {s.layers for s in SHAPES} >= {1, 2, 3, 4} and {s.heads for s in SHAPES} >= {1, 2, 3, 4}
    assert {"gelu", "gelu_new"} <= {s.activation for s in SHAPES} and len(
        {s.d for s in SHAPES}
    ) >= 4
    assert any(s.extra.get("scale_attn_by_inverse_layer_idx") for s in SHAPES)
    assert {"pretrained", "bin", "pt", "pt-orig-mod", "bare"} <= {s.saved for s in SHAPES}


# --- the layout, without transformers
# -----------------------------------------------------------------


def test_conv1d_layout_splits_heads_by_columns_and_rows(tmp_path):
    state = state_dict(seed=3, layers=2, d=8, lm_head=True, prefix="transformer.")
    folder = write_folder(
        tmp_path / "ckpt", state, config(n_head=2, scale_attn_by_inverse_layer_idx=True)
    )
    result = import_gpt2(folder, tmp_path / "m.safetensors")
    model = load_model(tmp_path / "m.safetensors")
    assert (result.prefix, result.readout, result.lm_head) == (
        "transformer.",
        "lm-head",
        "separate",
    )
    for l, layer in enumerate(model.layers):
        W = state[f"transformer.h.{l}.attn.c_attn.weight"]
        b = state[f"transformer.h.{l}.attn.c_attn.bias"]
        W_O = state[f"transformer.h.{l}.attn.c_proj.weight"]
        for h, head in enumerate(layer.heads):
            cols = slice(4 * h, 4 * h + 4)
            assert np.array_equal(head.W_Q, W[:, :8][:, cols]) and np.array_equal(
                head.W_K, W[:, 8:16][:, cols]
            )
            assert np.array_equal(head.W_V, W[:, 16:][:, cols]) and np.array_equal(
                head.W_O, W_O[cols]
            )
            assert np.array_equal(head.b_Q, b[:8][cols]) and np.array_equal(head.b_V, b[16:][cols])
        assert np.array_equal(layer.b_O, state[f"transformer.h.{l}.attn.c_proj.bias"])
        assert np.array_equal(layer.mlp.W_in, state[f"transformer.h.{l}.mlp.c_fc.weight"])
        assert (
            np.array_equal(layer.ln2.w, state[f"transformer.h.{l}.ln_2.weight"])
            and layer.ln2.eps == 1e-5
        )
        assert layer.attn_scale == 4**-0.5 / (l + 1) and layer.mlp.activation == "gelu_tanh"
    assert np.array_equal(model.decoder.W_U, state["lm_head.weight"].T)
    assert np.array_equal(model.ln_final.b, state["transformer.ln_f.bias"])
    assert model.info["imported"] == "huggingface gpt2"


def test_readouts_tied_lm_head_hidden(tmp_path):
    state = state_dict(seed=4, lm_head=True, prefix="transformer.")
    folder = write_folder(tmp_path / "ckpt", state, config())
    for readout in ("tied", "lm-head", "hidden"):
        out = tmp_path / f"{readout}.safetensors"
        assert import_gpt2(folder, out, readout=readout).readout == readout
        decoder = load_model(out).decoder
        assert isinstance(decoder, VocabDecoder) and decoder.readout == readout
        want = {
            "tied": state["transformer.wte.weight"].T,
            "lm-head": state["lm_head.weight"].T,
            "hidden": None,
        }
        assert (
            (decoder.W_U is None)
            if readout == "hidden"
            else np.array_equal(decoder.W_U, want[readout])
        )
    state["lm_head.weight"] = state[
        "transformer.wte.weight"
    ].copy()  # equal to wte: the default is tied
    folder = write_folder(tmp_path / "tied", state, config())
    result = import_gpt2(folder, tmp_path / "t.safetensors")
    assert (result.readout, result.lm_head) == ("tied", "tied")


def test_prefix_buffers_and_vocab_map_are_reported_and_stored(tmp_path):
    state = state_dict(seed=5, layers=2, prefix="_orig_mod.transformer.", lm_head=True)
    for l in range(2):
        state[f"_orig_mod.transformer.h.{l}.attn.bias"] = np.tril(np.ones((6, 6), np.uint8))[
            None, None
        ]
        state[f"_orig_mod.transformer.h.{l}.attn.masked_bias"] = np.array(-1e4, np.float32)
    save_file(state, str(tmp_path / "sd.safetensors"))
    vocab_map = {"symbols": [3, 4, 5], "hops": {"1": 9}, "none": 10}
    result = import_gpt2(
        tmp_path / "sd.safetensors",
        tmp_path / "m.safetensors",
        config=write_json(
            tmp_path / "c.json", config(n_layer=2, n_embd=8, vocab_size=11, n_positions=6)
        ),
        vocab_map=write_json(tmp_path / "v.json", vocab_map),
    )
    assert result.prefix == "_orig_mod.transformer." and result.lm_head == "separate"
    assert result.ignored_buffers == tuple(
        f"_orig_mod.transformer.h.{l}.attn.{b}" for l in range(2) for b in ("bias", "masked_bias")
    )
    assert result.vocab_map == vocab_map
    assert load_model(tmp_path / "m.safetensors").decoder.vocab_map == VocabMap.from_json(vocab_map)
    assert json.loads(json.dumps(result.to_json()))["ignored_buffers"][0].endswith("h.0.attn.bias")


def test_half_precision_weights_read_exactly(tmp_path):
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as save_torch

    state = state_dict(seed=6, layers=1)
    for dtype, name in ((torch.bfloat16, "BF16"), (torch.float16, "F16")):
        tensors = {k: torch.from_numpy(v).to(dtype) for k, v in state.items()}
        save_torch(tensors, str(tmp_path / f"{name}.safetensors"))
        torch.save(tensors, tmp_path / f"{name}.pt")
        for suffix in ("safetensors", "pt"):
            out = tmp_path / f"{name}-{suffix}.out.safetensors"
            cfg = write_json(tmp_path / "c.json", config())
            assert import_gpt2(tmp_path / f"{name}.{suffix}", out, config=cfg).dtypes == (name,)
            want = tensors["wte.weight"].to(torch.float64).numpy()
            assert np.array_equal(load_model(out).W_E, want)


def test_memory_guard_refuses_before_loading(tmp_path):
    folder = write_folder(tmp_path / "ckpt", state_dict(d=256, vocab=2048, layers=1), config())
    with memory_limit_of("1M"), pytest.raises(InputError, match="needs about .* of memory"):
        import_gpt2(folder, tmp_path / "m.safetensors")
    assert not (tmp_path / "m.safetensors").exists()
