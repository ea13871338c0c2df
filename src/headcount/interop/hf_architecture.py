"""Hugging Face configs of the model families headcount reads (issue 32) → one checked description
of the network, `Architecture`. Each family is a named adapter (FAMILIES: transformers' model_type);
any other model_type is refused by name. This module reads config.json values only; hf_layout.py
checks a checkpoint's tensors against an Architecture.

What each family means (transformers 4.40 … 5.x, old and new config keys):

    gpt2      LayerNorm, learned positions, plain MLP, biases everywhere (interop.gpt2 imports it)
    gpt_neox  LayerNorm, rotary (rotate_half on the first `partial_rotary_factor` of each head, also
              spelled rotary_pct), parallel residual when use_parallel_residual (the default),
              biases unless attention_bias is false, untied readout by default (Pythia)
    llama     RMSNorm, rotary, gated MLP (silu), grouped-query attention (num_key_value_heads),
              biases only where attention_bias / mlp_bias say
    mistral   llama's block; sliding_window kept as `window` (inputs longer than it are refused
              downstream: within the window the attention is the plain causal one)
    qwen2     llama's block with biases on q, k and v (never on o); use_sliding_window refused
    gemma     llama's block with RMSNorm weights used as 1 + w, embeddings scaled by √d_model, the
              tanh GELU gate (hidden_activation), tied readout by default

Rotary positions: only gpt_neox rotates part of each head; the llama-style families rotate whole
heads (transformers ignores a partial_rotary_factor there, so one other than 1 is refused as
ambiguous). θ (rope_theta, rotary_emb_base or rope_parameters.rope_theta) must lie in
1..MAX_THETA; any rope scaling other than "default" (linear, dynamic, yarn, llama3, …) is refused by
name, as are configs whose heads do not split d_model evenly where the family requires it, or whose
num_key_value_heads does not divide num_attention_heads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from headcount.common.errors import InputError
from headcount.common.files import MAX_HEADS_PER_LAYER, check_json_types, one_line
from headcount.core.model import Rotary
from headcount.core.model.files import MAX_LAYERS
from headcount.interop.gpt2 import ACTIVATIONS as GPT2_ACTIVATIONS

FAMILIES = ("gpt2", "gpt_neox", "llama", "mistral", "qwen2", "gemma")
# transformers' activation names → headcount's (core.model.parts.ACTIVATIONS, and silu for gates)
ACTIVATIONS = {**GPT2_ACTIVATIONS, "silu": "silu", "swish": "silu"}
MAX_THETA = 1e12  # released models use 10^4 … 10^7; beyond this θ is a typo or an attack
MAX_SIZE = 2**31  # any stated size above this is refused before anything is allocated

_SIZE = "integer?"
CONFIG_TYPES: dict[str, Any] = {
    "model_type": "string",
    **dict.fromkeys(
        (
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "head_dim",
            "intermediate_size",
            "vocab_size",
            "max_position_embeddings",
            "sliding_window",
        ),
        _SIZE,
    ),
    **dict.fromkeys(("hidden_act", "hidden_activation"), "string?"),
    **dict.fromkeys(("rms_norm_eps", "layer_norm_eps"), "number"),
    **dict.fromkeys(("rope_theta", "rotary_emb_base", "rotary_pct"), "number"),
    "partial_rotary_factor": "number",
    **dict.fromkeys(
        (
            "tie_word_embeddings",
            "attention_bias",
            "mlp_bias",
            "use_parallel_residual",
            "use_sliding_window",
        ),
        "boolean",
    ),
    "rope_scaling": "any",
    "rope_parameters": {
        "rope_theta": "number",
        "rope_type": "string",
        "partial_rotary_factor": "number",
    },
}


@dataclass(frozen=True)
class Architecture:
    """One network as its config states it; sizes the tensors also state are checked against them
    (hf_layout.py)."""

    family: str  # one of FAMILIES
    layers: int
    d_model: int
    heads: int
    kv_heads: int  # heads share key/value heads in groups of heads // kv_heads
    d_head: int
    d_mlp: int
    vocab: int
    n_ctx: int | None  # max_position_embeddings (None: not stated)
    norm: str  # "layernorm" | "rmsnorm"
    norm_eps: float
    norm_offset: float  # the norm's weight enters as offset + w (gemma: 1)
    rotary: Rotary | None  # None: learned absolute positions
    gated: bool  # down(act(gate(x)) · up(x)) instead of out(act(in(x)))
    activation: str  # headcount's name (ACTIVATIONS)
    parallel: bool  # x + attn(ln1(x)) + mlp(ln2(x)) (NeoX) instead of two residual steps
    qkv_bias: bool
    o_bias: bool
    mlp_bias: bool
    tied: bool  # readout = token embeddingᵀ
    embedding_scale: float  # embeddings times this (gemma: √d_model)
    window: int | None = None  # sliding-window attention (mistral): None, or its width

    @property
    def attn_scale(self) -> float:
        return self.d_head**-0.5


def _get(obj: dict, *keys: str, default: Any = None) -> Any:
    return next((obj[k] for k in keys if obj.get(k) is not None), default)


def _size(
    obj: dict, name: str, *keys: str, default: int | None = None, low: int = 1, high: int = MAX_SIZE
) -> int:
    value = _get(obj, *keys, default=default)
    if value is None:
        raise InputError(f"{name} has no {keys[0]}: the family's config must state it")
    if type(value) is not int or not low <= value <= high:
        raise InputError(
            f"{name}: {keys[0]} must be an integer in {low}..{high:,}, got "
            f"{one_line(repr(value), 40)}"
        )
    return value


def _flag(obj: dict, key: str, default: bool) -> bool:
    value = obj.get(key)
    return default if value is None else bool(value)


def _eps(obj: dict, name: str, key: str, default: float) -> float:
    eps = obj.get(key, default)
    if not (isinstance(eps, (int, float)) and not isinstance(eps, bool) and 0 < eps < 1):
        raise InputError(f"{name}: {key} must be a number in (0, 1), got {one_line(repr(eps), 40)}")
    return float(eps)


def _activation(obj: dict, name: str, keys: tuple[str, ...], default: str) -> str:
    act = _get(obj, *keys, default=default)
    if act not in ACTIVATIONS:
        raise InputError(
            f"{name}: {keys[0]} {one_line(repr(act), 40)} is not supported; headcount computes "
            f"{', '.join(map(repr, ACTIVATIONS))}"
        )
    return ACTIVATIONS[act]


def _rope_scaling(obj: dict, name: str) -> None:
    """Refuse every rope scaling but the plain one, by name."""
    kinds = []
    scaling = obj.get("rope_scaling")
    if scaling not in (None, {}):
        if not isinstance(scaling, dict):
            raise InputError(f"{name}: rope_scaling must be a JSON object or null")
        kinds.append(scaling.get("rope_type", scaling.get("type", "unnamed")))
    kinds.append((obj.get("rope_parameters") or {}).get("rope_type", "default"))
    for kind in kinds:
        if kind != "default":
            raise InputError(
                f"{name}: rope scaling {one_line(repr(kind), 40)} is not supported (only the "
                "plain rotary embedding, rope_type 'default')"
            )


def _rotary(obj: dict, name: str, d_head: int, neox: bool) -> Rotary:
    """θ and the rotated part of each head (NeoX's default part is a quarter, as transformers')."""
    _rope_scaling(obj, name)
    params = obj.get("rope_parameters") or {}
    theta = _get(params, "rope_theta", default=_get(obj, "rope_theta", "rotary_emb_base"))
    theta = 10000.0 if theta is None else theta
    if not (isinstance(theta, (int, float)) and 1 <= theta <= MAX_THETA):
        raise InputError(
            f"{name}: rope_theta must be a number in 1..{MAX_THETA:.0e}, got "
            f"{one_line(repr(theta), 40)}"
        )
    keys = ("rotary_pct", "partial_rotary_factor") if neox else ("partial_rotary_factor",)
    fraction = _get(params, "partial_rotary_factor", default=_get(obj, *keys))
    if not neox and fraction not in (None, 1, 1.0):
        raise InputError(
            f"{name}: partial_rotary_factor = {one_line(repr(fraction), 40)}, but transformers' "
            "llama-style models rotate whole heads whatever it says; remove it or set it to 1"
        )
    fraction = (0.25 if neox else 1.0) if fraction is None else fraction
    if not (isinstance(fraction, (int, float)) and 0 < fraction <= 1):
        raise InputError(
            f"{name}: the partial rotary factor must be a number in (0, 1], got "
            f"{one_line(repr(fraction), 40)}"
        )
    dims = int(d_head * fraction)  # as transformers computes it
    if dims < 2 or dims % 2:
        raise InputError(
            f"{name}: the rotary part of each head is {dims} entries (head_dim {d_head} × "
            f"{fraction}); it must be even and at least 2"
        )
    return Rotary(float(theta), dims)


def _heads(obj: dict, name: str, d_model: int, head_keys: tuple[str, ...]) -> tuple[int, int, int]:
    heads = _size(obj, name, "num_attention_heads")
    if heads > MAX_HEADS_PER_LAYER:
        raise InputError(
            f"{name}: num_attention_heads must be at most {MAX_HEADS_PER_LAYER}, got {heads}"
        )
    kv_heads = _size(obj, name, "num_key_value_heads", default=heads)
    if heads % kv_heads:
        raise InputError(
            f"{name}: num_key_value_heads = {kv_heads} does not divide num_attention_heads = "
            f"{heads} (grouped-query attention shares each key/value head among equal groups)"
        )
    stated = _get(obj, *head_keys) if head_keys else None
    if stated is None and d_model % heads:
        raise InputError(
            f"{name}: hidden_size {d_model} is not divisible by num_attention_heads {heads}"
        )
    d_head = (
        _size(obj, name, "head_dim", default=d_model // heads) if head_keys else d_model // heads
    )
    return heads, kv_heads, d_head


def _family(obj: Any, name: str) -> str:
    """The config's family, once its types are checked and family-wide refusals made."""
    if not isinstance(obj, dict):
        raise InputError(f"{name} must be a JSON object (a transformers config)")
    check_json_types(obj, CONFIG_TYPES, name)
    family = obj.get("model_type")
    if family not in FAMILIES:
        raise InputError(
            f"{name}: model_type {one_line(repr(family), 40)} is not a family headcount reads; "
            f"it reads {', '.join(FAMILIES)}"
        )
    if family == "gpt2":
        raise InputError(f"{name}: GPT-2 configs are read by interop.gpt2 (gpt2_config)")
    if family == "qwen2" and obj.get("use_sliding_window"):
        raise InputError(
            f"{name}: use_sliding_window is true: sliding-window attention across "
            "layers (qwen2) is not supported"
        )
    return family


def architecture(obj: Any, name: str) -> Architecture:
    """The Architecture of a config.json value (`name` in messages): InputError, one line, for
    another model_type (named), a mistyped or absurd field, or a feature the formal model does not
    have."""
    family = _family(obj, name)
    d_model = _size(obj, name, "hidden_size")
    neox = family == "gpt_neox"
    heads, kv_heads, d_head = _heads(obj, name, d_model, () if neox else ("head_dim",))
    if neox and kv_heads != heads:
        raise InputError(f"{name}: gpt_neox has no grouped-query attention (num_key_value_heads)")
    rotary = _rotary(obj, name, d_head, neox)
    n_ctx = obj.get("max_position_embeddings")
    if n_ctx is not None:
        n_ctx = _size(obj, name, "max_position_embeddings")
    window = obj.get("sliding_window") if family == "mistral" else None
    if window is not None:
        window = _size(obj, name, "sliding_window")
    bias_default = neox  # NeoX has every bias; Llama-style families none but what the config says
    attention_bias = _flag(obj, "attention_bias", bias_default)
    return Architecture(
        family=family,
        layers=_size(obj, name, "num_hidden_layers", high=MAX_LAYERS),
        d_model=d_model,
        heads=heads,
        kv_heads=kv_heads,
        d_head=d_head,
        d_mlp=_size(obj, name, "intermediate_size"),
        vocab=_size(obj, name, "vocab_size"),
        n_ctx=n_ctx,
        norm="layernorm" if neox else "rmsnorm",
        norm_eps=_eps(obj, name, *(("layer_norm_eps", 1e-5) if neox else ("rms_norm_eps", 1e-6))),
        norm_offset=1.0 if family == "gemma" else 0.0,
        rotary=rotary,
        gated=not neox,
        activation=_activation(
            obj,
            name,
            ("hidden_activation", "hidden_act") if family == "gemma" else ("hidden_act",),
            "gelu_pytorch_tanh" if family == "gemma" else ("gelu" if neox else "silu"),
        ),
        parallel=neox and _flag(obj, "use_parallel_residual", True),
        qkv_bias=attention_bias or family == "qwen2",
        o_bias=attention_bias,
        mlp_bias=neox or _flag(obj, "mlp_bias", False),
        tied=_flag(obj, "tie_word_embeddings", family == "gemma"),
        embedding_scale=math.sqrt(d_model) if family == "gemma" else 1.0,
        window=window,
    )
