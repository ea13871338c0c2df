"""Hugging Face configs and checkpoint listings of the families of issue 32 (GPT-NeoX, Llama,
Mistral, Qwen2, Gemma): random-init transformers models of several shapes read as their configs say,
their tensors found where the layout says; hostile configs and listings refused with one line."""

from __future__ import annotations

import json
import math

import pytest

transformers = pytest.importorskip("transformers")

from headcount.common.errors import InputError  # noqa: E402
from headcount.common.files import read_header  # noqa: E402
from headcount.interop.hf_architecture import MAX_THETA, architecture  # noqa: E402
from headcount.interop.hf_layout import hf_layout  # noqa: E402

COMMON = dict(vocab_size=11, hidden_size=16, intermediate_size=24, max_position_embeddings=32)

# (family, config class, model class, extra config, what the architecture must say)
SHAPES = [
    ("llama", "LlamaConfig", "LlamaForCausalLM",
     dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2),
     dict(kv_heads=2, d_head=4, tied=False, qkv_bias=False, rotary_dims=4)),
    ("llama", "LlamaConfig", "LlamaForCausalLM",
     dict(num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, attention_bias=True,
          mlp_bias=True, tie_word_embeddings=True, head_dim=12),
     dict(kv_heads=1, d_head=12, tied=True, qkv_bias=True, rotary_dims=12)),
    ("llama", "LlamaConfig", "LlamaForCausalLM",
     dict(num_hidden_layers=3, num_attention_heads=4, rope_theta=500000.0),
     dict(kv_heads=4, d_head=4, tied=False, qkv_bias=False, rotary_dims=4)),
    ("gpt_neox", "GPTNeoXConfig", "GPTNeoXForCausalLM",
     dict(num_hidden_layers=2, num_attention_heads=4, rotary_pct=0.5),
     dict(kv_heads=4, d_head=4, tied=False, qkv_bias=True, rotary_dims=2, parallel=True)),
    ("gpt_neox", "GPTNeoXConfig", "GPTNeoXForCausalLM",
     dict(num_hidden_layers=1, num_attention_heads=2, use_parallel_residual=False,
          attention_bias=False),
     dict(kv_heads=2, d_head=8, tied=False, qkv_bias=False, rotary_dims=2, parallel=False)),
    ("gpt_neox", "GPTNeoXConfig", "GPTNeoXForCausalLM",
     dict(num_hidden_layers=2, num_attention_heads=2, rotary_pct=1.0, tie_word_embeddings=True),
     dict(kv_heads=2, d_head=8, tied=True, qkv_bias=True, rotary_dims=8, parallel=True)),
    ("qwen2", "Qwen2Config", "Qwen2ForCausalLM",
     dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2),
     dict(kv_heads=2, d_head=4, tied=False, qkv_bias=True, o_bias=False, rotary_dims=4)),
    ("qwen2", "Qwen2Config", "Qwen2ForCausalLM",
     dict(num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
          tie_word_embeddings=True),
     dict(kv_heads=2, d_head=8, tied=True, qkv_bias=True, o_bias=False, rotary_dims=8)),
    ("mistral", "MistralConfig", "MistralForCausalLM",
     dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, sliding_window=8),
     dict(kv_heads=2, d_head=4, tied=False, window=8, rotary_dims=4)),
    ("gemma", "GemmaConfig", "GemmaForCausalLM",
     dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, head_dim=4),
     dict(kv_heads=2, d_head=4, tied=True, norm_offset=1.0, rotary_dims=4,
          embedding_scale=4.0, activation="gelu_tanh")),
    ("gemma", "GemmaConfig", "GemmaForCausalLM",
     dict(num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1, head_dim=8,
          tie_word_embeddings=False),
     dict(kv_heads=1, d_head=8, tied=False, norm_offset=1.0, rotary_dims=8)),
]  # fmt: skip


def _model(config_class: str, model_class: str, extra: dict):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(**COMMON, **extra)
    return config, getattr(transformers, model_class)(config)


@pytest.mark.parametrize(("family", "config_class", "model_class", "extra", "says"), SHAPES)
def test_random_init_models_read_as_their_config_says(
    tmp_path, family, config_class, model_class, extra, says
):
    config, model = _model(config_class, model_class, extra)
    arch = architecture(json.loads(config.to_json_string()), "config.json")
    assert (arch.family, arch.layers, arch.d_model, arch.heads, arch.d_mlp, arch.vocab) == (
        family,
        extra["num_hidden_layers"],
        16,
        extra["num_attention_heads"],
        24,
        11,
    )
    expected = dict(says)
    assert arch.rotary is not None and arch.rotary.dims == expected.pop("rotary_dims")
    assert {key: getattr(arch, key) for key in expected} == expected
    assert arch.attn_scale == arch.d_head**-0.5
    listed = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    layout = hf_layout(listed, arch, "state dict")
    assert set(layout.weights) <= set(listed) and layout.ignored == ()
    # what save_pretrained writes: a tied readout is not stored, and the listing still checks
    model.save_pretrained(tmp_path)
    _, header = read_header(str(tmp_path / "model.safetensors"))
    saved = hf_layout({name: shape for name, (shape, _) in header.items()}, arch, "saved")
    assert (saved.readout is None) == arch.tied
    assert saved.prefix == layout.prefix


def test_old_config_keys_and_buffers():
    neox = {
        "model_type": "gpt_neox",
        "hidden_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 32,
        "vocab_size": 7,
        "rotary_emb_base": 500,
        "layer_norm_eps": 1e-5,
    }
    arch = architecture(neox, "pythia")
    assert arch.rotary.theta == 500.0 and arch.rotary.dims == 2  # NeoX's default quarter of 8
    assert architecture(neox | {"rotary_pct": 0.5}, "pythia").rotary.dims == 4
    llama = {"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 1,
             "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 5,
             "rope_theta": 1e6, "head_dim": None}  # fmt: skip
    assert architecture(llama, "c").rotary.theta == 1e6
    _, model = _model("GPTNeoXConfig", "GPTNeoXForCausalLM",
                      dict(num_hidden_layers=1, num_attention_heads=2))  # fmt: skip
    listed = {name: tuple(t.shape) for name, t in model.state_dict().items()}
    listed = {
        ("embed_out.weight" if name == "lm_head.weight" else name): shape
        for name, shape in listed.items()
    }  # the readout's name before transformers 5
    listed |= {
        "gpt_neox.layers.0.attention.rotary_emb.inv_freq": (2,),
        "gpt_neox.layers.0.attention.bias": (1, 1, 32, 32),
        "gpt_neox.layers.0.attention.masked_bias": (),
    }
    arch = architecture(json.loads(model.config.to_json_string()), "c")
    layout = hf_layout(listed, arch, "pythia")
    assert layout.readout == "embed_out.weight" and len(layout.ignored) == 3


def _llama(**changes) -> dict:
    config = {"model_type": "llama", "hidden_size": 16, "num_hidden_layers": 2,
              "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 24,
              "vocab_size": 11, "max_position_embeddings": 32}  # fmt: skip
    config.update(changes)
    return {key: value for key, value in config.items() if value is not ...}


HOSTILE_CONFIGS = [
    ([1, 2], "must be a JSON object"),
    (_llama(model_type="falcon"), "model_type 'falcon' is not a family headcount reads"),
    (_llama(model_type=None), "model_type"),
    (_llama(rope_theta=0), "rope_theta must be a number in 1.."),
    (_llama(rope_theta=-1.0), "rope_theta must be a number in 1.."),
    (_llama(rope_theta=1e300), "rope_theta must be a number in 1.."),
    (_llama(rope_theta=math.inf), "rope_theta must be a number in 1.."),
    (_llama(rope_theta="big"), "'rope_theta' must be a number"),
    (_llama(rope_theta=True), "'rope_theta' must be a number"),
    (_llama(rope_scaling={"rope_type": "yarn", "factor": 4.0}), "rope scaling 'yarn'"),
    (_llama(rope_parameters={"rope_type": "llama3", "rope_theta": 5e5}), "rope scaling 'llama3'"),
    (_llama(rope_scaling=[1]), "rope_scaling must be a JSON object"),
    (_llama(num_key_value_heads=3), "num_key_value_heads = 3 does not divide"),
    (_llama(num_key_value_heads=0), "num_key_value_heads must be an integer in 1.."),
    (_llama(num_attention_heads=3, num_key_value_heads=...), "not divisible by num_attention"),
    (_llama(num_attention_heads=10**6, num_key_value_heads=...), "at most"),
    (_llama(hidden_size=-16), "hidden_size must be an integer in 1.."),
    (_llama(hidden_size=2**40), "hidden_size must be an integer in 1.."),
    (_llama(hidden_size=16.0), "'hidden_size' must be an integer"),
    (_llama(vocab_size=...), "has no vocab_size"),
    (_llama(model_type="gpt_neox", num_key_value_heads=..., rotary_pct=0.1), "must be even"),
    (_llama(model_type="gpt_neox", num_key_value_heads=..., rotary_pct=2.0), "in (0, 1]"),
    (_llama(partial_rotary_factor=0.5), "llama-style models rotate whole heads"),
    (_llama(rms_norm_eps=0), "rms_norm_eps must be a number in (0, 1)"),
    (_llama(hidden_act="quick_gelu"), "hidden_act 'quick_gelu' is not supported"),
    (_llama(model_type="qwen2", use_sliding_window=True), "use_sliding_window is true"),
    (_llama(model_type="gpt_neox"), "gpt_neox has no grouped-query attention"),
    (_llama(model_type="mistral", sliding_window=0), "sliding_window must be an integer in 1.."),
    (_llama(model_type="gpt2"), "GPT-2 configs are read by interop.gpt2"),
]


@pytest.mark.parametrize(("config", "message"), HOSTILE_CONFIGS)
def test_hostile_configs_are_refused_in_one_line(config, message):
    with pytest.raises(InputError) as err:
        architecture(config, "config.json")
    assert message in str(err.value) and "\n" not in str(err.value)


def test_theta_bounds_are_inclusive():
    assert architecture(_llama(rope_theta=1), "c").rotary.theta == 1.0
    assert architecture(_llama(rope_theta=MAX_THETA), "c").rotary.theta == MAX_THETA


def _listing() -> tuple[dict, object]:
    shape = dict(num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    config, model = _model("LlamaConfig", "LlamaForCausalLM", shape)
    arch = architecture(json.loads(config.to_json_string()), "config.json")
    return {name: tuple(t.shape) for name, t in model.state_dict().items()}, arch


def test_hostile_listings_are_refused_in_one_line():
    listed, arch = _listing()
    cases = [
        ({k: v for k, v in listed.items() if "layers.1.mlp.up_proj" not in k},
         "lacks 1 tensor(s) of its llama model (2 layers as its config states): "
         "'model.layers.1.mlp.up_proj.weight'"),
        (listed | {"model.layers.2.mlp.up_proj.weight": (24, 16)}, "holds 1 tensor(s) that"),
        (listed | {"model.layers.0.self_attn.k_proj.weight": (16, 16)},
         "'model.layers.0.self_attn.k_proj.weight': (16, 16), expected (8, 16)"),
        ({k.replace("model.", "net."): v for k, v in listed.items()}, "'net.lm_head.weight'"),
        (listed | {"model.x": (1,)}, "holds 1 tensor(s) that are not part of its llama model"),
        ({k: v for k, v in listed.items() if "embed_tokens" not in k}, "has no token embedding"),
        (listed | {"other.model.embed_tokens.weight": (11, 16)}, "several tensors end in"),
        ({k: v for k, v in listed.items() if k != "lm_head.weight"}, "'lm_head.weight'"),
    ]  # fmt: skip
    for listing, message in cases:
        with pytest.raises(InputError) as err:
            hf_layout(listing, arch, "ckpt")
        assert message in str(err.value) and "\n" not in str(err.value), (message, err.value)
