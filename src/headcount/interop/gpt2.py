"""Hugging Face GPT-2 checkpoints → the formal model (issue 14): `import_gpt2` reads a checkpoint
and writes a headcount model file of the same network: a Transformer with the GPT-2 parts and a
"vocab" decoder.

PATH is a folder as save_pretrained writes it (config.json and model.safetensors or
pytorch_model.bin) or one state-dict file (.safetensors, or .pt / .pth / .bin / .ckpt read only with
torch.load(weights_only=True)); interop.checkpoints reads them, bounded, and never runs anything a
file holds. config.json (or `config`) supplies n_head (the weights do not say how d_model splits
into heads), activation_function, layer_norm_epsilon and the attention-scale flags; every size it
states (n_layer, n_embd, vocab_size, n_positions, n_inner) is checked against the shapes, which
decide them.

The layout (transformers' GPT2Model / GPT2LMHeadModel; Conv1D computes x W + b with W [in out]),
which interop.gpt2_layout checks on the checkpoint's listing before any tensor is loaded:

    {prefix}wte.weight [vocab d] → W_E                  {prefix}wpe.weight [n_ctx d] → W_pos
    {prefix}h.{l}.ln_1.{weight,bias} → ln1              {prefix}h.{l}.ln_2.{weight,bias} → ln2
    {prefix}h.{l}.attn.c_attn.weight [d 3d], .bias [3d]: columns q | k | v; head h takes the columns
        h·d_head..(h+1)·d_head of each: its W_Q, W_K, W_V and b_Q, b_K, b_V
    {prefix}h.{l}.attn.c_proj.weight [d d]: rows h·d_head..(h+1)·d_head are head h's W_O; .bias →
    b_O
    {prefix}h.{l}.mlp.c_fc.{weight [d d_mlp], bias}, mlp.c_proj.{weight [d_mlp d], bias} → the MLP
    {prefix}ln_f.{weight,bias} → ln_final
    {outer}lm_head.weight [vocab d] (nn.Linear: W_U is its transpose); outer: prefix less a last
        "transformer."

The prefix is what precedes "wte.weight" ("", "transformer.", "_orig_mod.transformer.", …) unless
`prefix` names it. The causal-mask buffers older transformers saved (h.{l}.attn.bias,
h.{l}.attn.masked_bias) are skipped and reported. Anything else — a missing, unexpected or
mis-shaped tensor, cross-attention, rotary positions, parallel blocks, another model_type, d_model
not divisible by n_head — is an InputError naming it.

Semantics. Layer l's attn_scale is d_head^-½ (scale_attn_weights, default true), divided by l + 1
when scale_attn_by_inverse_layer_idx, computed as transformers computes it. activation_function
"gelu" and "gelu_python" are the exact erf GELU ("gelu"); "gelu_new" and "gelu_pytorch_tanh" are
½x(1 + tanh(√(2/π)(x + 0.044715x³))) ("gelu_tanh"); "relu" is relu; nothing else ("gelu_fast",
"quick_gelu", … are other functions). reorder_and_upcast_attn is accepted: it changes only the order
and the float type of the score computation, not the function. Readouts: "lm-head" (W_U = lm_headᵀ),
"tied" (W_U = W_Eᵀ), "hidden" (the final hidden state is the logit vector); by default lm-head when
the checkpoint has an lm_head.weight that differs from wte, else tied.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError, param
from headcount.common.files import (
    DTYPE_BYTES,
    MAX_HEADS_PER_LAYER,
    check_json_types,
    check_model_path,
    one_line,
    show_path,
)
from headcount.common.jsonable import JsonResult
from headcount.common.resources import check_memory
from headcount.common.validate import check_choice, check_not_read, check_writable
from headcount.core.model import (
    MLP,
    AttentionHead,
    Layer,
    LayerNorm,
    Transformer,
    VocabDecoder,
    VocabMap,
    save_model,
)
from headcount.core.model.vocab import READOUTS
from headcount.interop.checkpoints import (
    MAX_JSON_BYTES,
    StateDict,
    locate,
    open_state_dict,
    read_json_file,
    state_dict_of,
)
from headcount.interop.gpt2_layout import Layout, Sizes, gpt2_layout, gpt2_sizes

BYTES_PER_WEIGHT = (
    32  # float64 copies: read, split into heads, the model's arrays, the bytes written
)
ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_python": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
}
# config keys of features the formal model does not have (any true value: refused)
UNSUPPORTED_CONFIG = {
    "cross-attention": ("add_cross_attention",),
    "rotary positions": ("rotary", "rotary_dim", "rotary_pct", "rope_theta", "rope_scaling"),
    "parallel blocks": ("use_parallel_residual", "parallel_attn", "parallel_residual"),
    "ALiBi positions": ("alibi",),
    "multi-query attention": ("multi_query", "num_key_value_heads"),
}
# The JSON type of every config.json field headcount reads (common.files.check_json_types), checked
# first.
GPT2_CONFIG_TYPES = {
    "model_type": "string",
    "position_embedding_type": "string?",
    "activation_function": "string",
    "n_head": "integer?",  # null: "has no n_head", said below
    "num_attention_heads": "integer",
    "layer_norm_epsilon": "number",
    **dict.fromkeys(("scale_attn_weights", "scale_attn_by_inverse_layer_idx"), "boolean"),
    "reorder_and_upcast_attn": "boolean",
    **dict.fromkeys(
        ("n_layer", "n_embd", "vocab_size", "n_positions", "n_ctx", "n_inner"), "integer?"
    ),
}


def read_vocab_map(path: str | os.PathLike) -> VocabMap:
    """A vocabulary map file (import_gpt2's `vocab_map`): JSON {"symbols", "hops" (with "hops_from"
    for a list), "none", "blank"} (core.model.vocab.VocabMap)."""
    vocab_map = VocabMap.from_json(read_json_file(path, param("vocab_map")))
    if (
        len(json.dumps(vocab_map.to_json())) > MAX_JSON_BYTES // 2
    ):  # it must fit the model file's config
        raise InputError(
            f"{param('vocab_map')} lists too many ids: a model file keeps at most "
            f"{MAX_JSON_BYTES // 2:,} bytes"
        )
    return vocab_map


@dataclass(frozen=True)
class Gpt2Config:
    """What the importer takes from config.json (defaults: transformers' GPT2Config)."""

    n_head: int
    activation_function: str = "gelu_new"
    layer_norm_epsilon: float = 1e-5
    scale_attn_weights: bool = True
    scale_attn_by_inverse_layer_idx: bool = False
    reorder_and_upcast_attn: bool = False
    sizes: tuple[tuple[str, int], ...] = ()  # (key, value) of n_layer, n_embd, … the config states

    def attn_scale(self, d_head: int, layer: int) -> float:
        """Layer `layer`'s score scale, as transformers computes it."""
        scale = d_head**-0.5 if self.scale_attn_weights else 1.0
        return scale / float(layer + 1) if self.scale_attn_by_inverse_layer_idx else scale


def gpt2_config(obj: Any, name: str) -> Gpt2Config:
    """Check a config.json value (`name` in messages) and take what the formal model needs."""
    if not isinstance(obj, dict):
        raise InputError(f"{name} must be a JSON object (a transformers GPT2Config)")
    check_json_types(obj, GPT2_CONFIG_TYPES, name)
    if obj.get("model_type", "gpt2") != "gpt2":
        raise InputError(
            f"{name}: model_type {one_line(repr(obj['model_type']), 60)} is not 'gpt2'"
        )
    for feature, keys in UNSUPPORTED_CONFIG.items():
        if key := next((k for k in keys if obj.get(k) not in (None, False, 0)), None):
            raise InputError(
                f"{name}: {key} = {one_line(repr(obj[key]), 40)}: {feature} is not supported"
            )
    if obj.get("position_embedding_type", "absolute") != "absolute":
        raise InputError(f"{name}: only learned absolute positions (wpe) are supported")

    def flag(key: str, default: bool) -> bool:
        value = obj.get(key, default)
        if not isinstance(value, bool):
            raise InputError(
                f"{name}: {key} must be true or false, got {one_line(repr(value), 40)}"
            )
        return value

    n_head = obj.get("n_head", obj.get("num_attention_heads"))
    if n_head is None:
        raise InputError(f"{name} has no n_head: the number of heads is not in the weights")
    if type(n_head) is not int or not 1 <= n_head <= MAX_HEADS_PER_LAYER:
        raise InputError(
            f"{name}: n_head must be an integer in 1..{MAX_HEADS_PER_LAYER}, got {n_head!r:.40}"
        )
    activation = obj.get("activation_function", "gelu_new")
    if activation not in ACTIVATIONS:
        raise InputError(
            f"{name}: activation_function {one_line(repr(activation), 40)} is not supported; "
            "headcount "
            "computes 'gelu' and 'gelu_python' (exact erf), 'gelu_new' and 'gelu_pytorch_tanh' "
            "(the tanh "
            "formula) and 'relu'"
        )
    eps = obj.get("layer_norm_epsilon", 1e-5)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < math.inf:
        raise InputError(f"{name}: layer_norm_epsilon must be a positive number, got {eps!r:.40}")
    sizes = []
    for key in ("n_layer", "n_embd", "vocab_size", "n_positions", "n_ctx", "n_inner"):
        value = obj.get(key)
        if value is not None and (type(value) is not int or value < 0):
            raise InputError(
                f"{name}: {key} must be an integer ≥ 0, got {one_line(repr(value), 40)}"
            )
        if value is not None:
            sizes.append((key, value))
    return Gpt2Config(
        n_head,
        activation,
        float(eps),
        flag("scale_attn_weights", True),
        flag("scale_attn_by_inverse_layer_idx", False),
        flag("reorder_and_upcast_attn", False),
        tuple(sizes),
    )


def check_config_sizes(config: Gpt2Config, sizes: Sizes, layers: int, name: str) -> None:
    """The sizes config.json states against the weights', and n_head against d_model."""
    actual = {"n_layer": layers, "n_embd": sizes.d_model, "vocab_size": sizes.vocab}
    actual |= {"n_positions": sizes.n_ctx, "n_ctx": sizes.n_ctx, "n_inner": sizes.d_mlp}
    for key, value in config.sizes:
        if actual[key] is not None and value != actual[key]:
            raise InputError(f"{name}: {key} = {value}, but the weights have {actual[key]}")
    if sizes.d_model % config.n_head:
        raise InputError(
            f"{name}: n_embd = {sizes.d_model} is not divisible by n_head = {config.n_head}"
        )


def check_vocab_map(vocab_map: VocabMap, vocab: int, classes: int, readout: str) -> None:
    """The map's input ids (symbols, hops, blank) are token ids of the model and its output ids
    (symbols, none) are ids the readout scores."""
    inputs = [
        *(vocab_map.symbols or ()),
        *vocab_map.hop_ids,
        *[vocab_map.blank] * (vocab_map.blank is not None),
    ]
    if bad := [i for i in inputs if i >= vocab]:
        raise InputError(
            f"{param('vocab_map')}: token id {bad[0]} is outside the model's vocabulary "
            f"0..{vocab - 1}"
        )
    outputs = [*(vocab_map.symbols or ()), *[vocab_map.none] * (vocab_map.none is not None)]
    if bad := [i for i in outputs if i >= classes]:
        raise InputError(
            f"{param('vocab_map')}: output id {bad[0]} is not scored by readout {readout!r} "
            "(logits for ids "
            f"0..{classes - 1})"
        )


def build_gpt2(
    tensors: dict[str, np.ndarray],
    layout: Layout,
    config: Gpt2Config,
    readout: str,
    vocab_map,
    info,
):
    """The Transformer of a checked checkpoint's tensors (module docstring: the layout)."""
    d = tensors[layout.key("wte.weight")].shape[1]
    d_head, eps = d // config.n_head, config.layer_norm_epsilon
    layers = []
    for l in range(layout.layers):
        get = lambda part, l=l: tensors[layout.key(part, l)]  # noqa: E731
        W, b, W_O = get("attn.c_attn.weight"), get("attn.c_attn.bias"), get("attn.c_proj.weight")
        heads = []
        for h in range(config.n_head):
            q, k, v = (slice(i * d + h * d_head, i * d + (h + 1) * d_head) for i in range(3))
            rows = slice(h * d_head, (h + 1) * d_head)
            heads.append(AttentionHead(W[:, q], W[:, k], W[:, v], W_O[rows], b[q], b[k], b[v]))
        mlp = MLP(
            get("mlp.c_fc.weight"),
            get("mlp.c_fc.bias"),
            get("mlp.c_proj.weight"),
            get("mlp.c_proj.bias"),
            ACTIVATIONS[config.activation_function],
        )
        ln1 = LayerNorm(get("ln_1.weight"), get("ln_1.bias"), eps)
        ln2 = LayerNorm(get("ln_2.weight"), get("ln_2.bias"), eps)
        layers.append(
            Layer(
                tuple(heads), mlp, ln1, ln2, get("attn.c_proj.bias"), config.attn_scale(d_head, l)
            )
        )
    W_E = tensors[layout.key("wte.weight")]
    W_U = None if readout == "hidden" else W_E.T if readout == "tied" else tensors[layout.lm_head].T
    ln_f = LayerNorm(tensors[layout.key("ln_f.weight")], tensors[layout.key("ln_f.bias")], eps)
    decoder = VocabDecoder(W_U, None, readout, vocab_map)
    return Transformer(
        W_E, tensors[layout.key("wpe.weight")], tuple(layers), decoder, "causal", info, ln_f
    )


# --- the import
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Gpt2Import(JsonResult):
    """A checkpoint imported to `path`: the `headcount import gpt2` JSON (its help lists the
    fields)."""

    path: str
    source: str
    config: str
    layers: int
    heads: tuple[int, ...]
    d_head: int
    d_model: int
    d_mlp: int | None
    vocab: int
    n_ctx: int
    activation: str
    activation_function: str
    layer_norm_epsilon: float
    attn_scale: tuple[float, ...]
    readout: str
    lm_head: str  # "absent" | "tied" (equal to wte) | "separate"
    prefix: str
    ignored_buffers: tuple[str, ...]
    vocab_map: dict[str, Any]
    dtypes: tuple[str, ...]


def _read(
    source: StateDict,
    cfg: Gpt2Config,
    cfg_name: str,
    where: str,
    prefix: str | None,
    readout: str | None,
    mapping: VocabMap,
) -> tuple[Transformer, Layout, Sizes, str, str]:
    """The model of a state dict and its config (checked as the module docstring says), with the
    layout, sizes, lm_head kind and readout it was read with."""
    layout = gpt2_layout(list(source.listed), prefix, where)
    sizes = gpt2_sizes(source.listed, layout, where)
    check_config_sizes(cfg, sizes, layout.layers, cfg_name)
    check_vocab_map(
        mapping,
        sizes.vocab,
        sizes.d_model if readout == "hidden" else sizes.vocab,
        readout or "tied",
    )
    names = layout.weights()
    elements = {n: math.prod(source.listed[n][0]) for n in names}
    raw = sum(count * DTYPE_BYTES[source.listed[n][1]] for n, count in elements.items())
    check_memory(BYTES_PER_WEIGHT * sum(elements.values()) + raw, f"importing {where}")
    tensors = source.load(names)
    for name, value in tensors.items():
        if not np.isfinite(value).all():
            raise InputError(
                f"{where}: tensor {name!r} holds NaN or infinite values; weights must be finite"
            )
    lm_head = "absent"
    if layout.lm_head:
        lm_head = (
            "tied"
            if np.array_equal(tensors[layout.lm_head], tensors[layout.key("wte.weight")])
            else "separate"
        )
    readout = readout or ("lm-head" if lm_head == "separate" else "tied")
    if readout == "lm-head" and lm_head == "absent":
        raise InputError(
            f"{param('readout')} lm-head: {where} has no lm_head.weight; use tied or hidden"
        )
    info = {
        "imported": "huggingface gpt2",
        "source": os.path.basename(source.path)[:200],
        "activation_function": cfg.activation_function,
        "reorder_and_upcast_attn": cfg.reorder_and_upcast_attn,
    }
    model = build_gpt2(tensors, layout, cfg, readout, mapping, info)
    return model, layout, sizes, lm_head, readout


def _open(
    path: str | os.PathLike, weights: str, config_path: str | None
) -> tuple[StateDict, Gpt2Config]:
    """The checkpoint's state dict (listed, not loaded) and its checked config."""
    check_model_path(weights)
    if config_path is None:
        raise InputError(
            f"{show_path(path)} comes without config.json: pass {param('config')} config.json "
            "(n_head, the number of heads per layer, is not in the weights)"
        )
    cfg = gpt2_config(read_json_file(config_path, "config"), f"config {show_path(config_path)}")
    return open_state_dict(weights), cfg


def import_gpt2_model(
    path: str | os.PathLike,
    *,
    config: str | os.PathLike | None = None,
    prefix: str | None = None,
    readout: str | None = None,
    vocab_map: VocabMap | None = None,
) -> Transformer:
    """The Transformer of the GPT-2 checkpoint at `path` (module docstring), in memory."""
    if readout is not None:
        check_choice("readout", readout, READOUTS)
    weights, config_path = locate(path, config)
    source, cfg = _open(path, weights, config_path)
    name = f"config {show_path(config_path)}"
    mapping = VocabMap() if vocab_map is None else vocab_map
    return _read(source, cfg, name, show_path(weights), prefix, readout, mapping)[0]


def import_gpt2(
    path: str | os.PathLike,
    out: str | os.PathLike,
    *,
    config: str | os.PathLike | None = None,
    prefix: str | None = None,
    readout: str | None = None,
    vocab_map: str | os.PathLike | None = None,
) -> Gpt2Import:
    """Read the GPT-2 checkpoint at `path` (module docstring), write it as a headcount model file at
    `out`."""
    if readout is not None:
        check_choice("readout", readout, READOUTS)
    check_writable(out)
    mapping = VocabMap() if vocab_map is None else read_vocab_map(vocab_map)
    weights, config_path = locate(path, config)
    check_not_read([out], [weights, config_path, vocab_map])
    source, cfg = _open(path, weights, config_path)
    read = _read(
        source,
        cfg,
        f"config {show_path(config_path)}",
        show_path(weights),
        prefix,
        readout,
        mapping,
    )
    model, layout, sizes, lm_head, readout = read
    try:
        save_model(model, out)
    except OSError as err:
        raise InputError(f"cannot write {str(out)[:200]!r}: {err.strerror or err}") from None
    return Gpt2Import(
        str(out),
        weights,
        config_path,
        layout.layers,
        tuple(model.heads_per_layer),
        sizes.d_model // cfg.n_head,
        sizes.d_model,
        sizes.d_mlp,
        sizes.vocab,
        sizes.n_ctx,
        ACTIVATIONS[cfg.activation_function],
        cfg.activation_function,
        cfg.layer_norm_epsilon,
        tuple(layer.attn_scale for layer in model.layers),
        readout,
        lm_head,
        layout.prefix,
        layout.ignored,
        mapping.to_json(),
        tuple(sorted({source.listed[n][1] for n in layout.weights()})),
    )


def gpt2_from_module(
    module: Any, *, readout: str | None = None, vocab_map: VocabMap | None = None
) -> Transformer:
    """The headcount model of a live transformers GPT-2 model (GPT2Model or GPT2LMHeadModel): its
    state dict and config read exactly as import_gpt2 reads a checkpoint's (module docstring)."""
    if readout is not None:
        check_choice("readout", readout, READOUTS)
    config, state_dict = getattr(module, "config", None), getattr(module, "state_dict", None)
    if config is None or not callable(state_dict) or not hasattr(config, "to_json_string"):
        raise InputError(
            f"expected a transformers GPT-2 model (with .config and .state_dict()), got "
            f"{type(module).__name__}"
        )
    name = f"the {type(module).__name__}"
    cfg = gpt2_config(json.loads(config.to_json_string()), f"{name}'s config")
    state = {k: v.detach().cpu() for k, v in state_dict().items()}
    source = state_dict_of(state, name, type(module).__name__)
    mapping = VocabMap() if vocab_map is None else vocab_map
    return _read(source, cfg, f"{name}'s config", name, None, readout, mapping)[0]
