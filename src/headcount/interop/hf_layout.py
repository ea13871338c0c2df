"""Where a Hugging Face checkpoint of a family in hf_architecture.FAMILIES keeps its tensors, and
the check of a checkpoint's listing (name → shape) against its Architecture before any tensor is
loaded: every tensor the network needs is there with its shape, nothing else is, and the buffers
older transformers saved (rotary inv_freq, causal-mask bias) are skipped and reported.

transformers stores nn.Linear weights as [out, in] (headcount's W = weightᵀ). The layouts:

    llama, mistral, qwen2, gemma ({p}: "model." in *ForCausalLM, "" in the bare model)
        {p}embed_tokens.weight [vocab d]                     {p}norm.weight [d]
        {p}layers.{l}.input_layernorm.weight [d]             .post_attention_layernorm.weight [d]
        {p}layers.{l}.self_attn.q_proj.weight [H·d_head d]   .k_proj / .v_proj [KV·d_head d]
        {p}layers.{l}.self_attn.o_proj.weight [d H·d_head]   (.bias where the config says)
        {p}layers.{l}.mlp.gate_proj / up_proj .weight [d_mlp d], down_proj.weight [d d_mlp]
        lm_head.weight [vocab d] (optional when the readout is tied)
    gpt_neox ({p}: "gpt_neox." in GPTNeoXForCausalLM)
        {p}embed_in.weight [vocab d]                         {p}final_layer_norm.{weight,bias} [d]
        {p}layers.{l}.input_layernorm / post_attention_layernorm .{weight,bias} [d]
        {p}layers.{l}.attention.query_key_value.weight [3d d]: per head h, rows
            h·3·d_head + (0 | d_head | 2·d_head) .. start + d_head are its q | k | v
        {p}layers.{l}.attention.dense.weight [d d]           (.bias where attention_bias)
        {p}layers.{l}.mlp.dense_h_to_4h.weight [d_mlp d], dense_4h_to_h.weight [d d_mlp], biases
        embed_out.weight [vocab d] (lm_head.weight since transformers 5; optional when tied)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from headcount.common.errors import InputError, param
from headcount.interop.hf_architecture import Architecture

Shape = tuple[int, ...]

# family group → (embedding, final norm parts, readout names (the first is named when missing), the
# prefix's last part in *ForCausalLM)
_TOP = {
    "llama": ("embed_tokens.weight", ("norm.weight",), ("lm_head.weight",), "model."),
    "gpt_neox": (
        "embed_in.weight",
        ("final_layer_norm.weight", "final_layer_norm.bias"),
        ("lm_head.weight", "embed_out.weight"),
        "gpt_neox.",
    ),
}
# buffers older transformers saved in state dicts: never weights, skipped and reported
_BUFFERS = re.compile(
    r"layers\.\d{1,9}\.(?:self_attn|attention)\.(?:rotary_emb\.inv_freq|bias|masked_bias)"
    r"|rotary_emb\.inv_freq"
)


def _group(arch: Architecture) -> str:
    return "gpt_neox" if arch.family == "gpt_neox" else "llama"


def _listed(names: list[str], limit: int = 4) -> str:
    shown = ", ".join(repr(n[:100]) for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def _llama_layer(arch: Architecture) -> dict[str, Shape]:
    d, q, kv = arch.d_model, arch.heads * arch.d_head, arch.kv_heads * arch.d_head
    parts: dict[str, Shape] = {
        "input_layernorm.weight": (d,),
        "post_attention_layernorm.weight": (d,),
        "self_attn.q_proj.weight": (q, d),
        "self_attn.k_proj.weight": (kv, d),
        "self_attn.v_proj.weight": (kv, d),
        "self_attn.o_proj.weight": (d, q),
        "mlp.gate_proj.weight": (arch.d_mlp, d),
        "mlp.up_proj.weight": (arch.d_mlp, d),
        "mlp.down_proj.weight": (d, arch.d_mlp),
    }
    if arch.qkv_bias:
        parts |= {
            "self_attn.q_proj.bias": (q,),
            "self_attn.k_proj.bias": (kv,),
            "self_attn.v_proj.bias": (kv,),
        }
    if arch.o_bias:
        parts["self_attn.o_proj.bias"] = (d,)
    if arch.mlp_bias:
        parts |= {
            "mlp.gate_proj.bias": (arch.d_mlp,),
            "mlp.up_proj.bias": (arch.d_mlp,),
            "mlp.down_proj.bias": (d,),
        }
    return parts


def _neox_layer(arch: Architecture) -> dict[str, Shape]:
    d = arch.d_model
    parts: dict[str, Shape] = {
        f"{norm}.{p}": (d,)
        for norm in ("input_layernorm", "post_attention_layernorm")
        for p in ("weight", "bias")
    }
    parts |= {
        "attention.query_key_value.weight": (3 * d, d),
        "attention.dense.weight": (d, d),
        "mlp.dense_h_to_4h.weight": (arch.d_mlp, d),
        "mlp.dense_h_to_4h.bias": (arch.d_mlp,),
        "mlp.dense_4h_to_h.weight": (d, arch.d_mlp),
        "mlp.dense_4h_to_h.bias": (d,),
    }
    if arch.qkv_bias:
        parts["attention.query_key_value.bias"] = (3 * d,)
    if arch.o_bias:
        parts["attention.dense.bias"] = (d,)
    return parts


@dataclass(frozen=True)
class HfLayout:
    """A checked checkpoint listing: the key prefix, every weight's key and shape (`weights`), the
    readout's key (None: tied and not stored) and the buffers skipped."""

    prefix: str
    weights: dict[str, Shape]
    readout: str | None
    ignored: tuple[str, ...]

    def layer(self, layer: int, part: str) -> str:
        return f"{self.prefix}layers.{layer}.{part}"


def expected_weights(arch: Architecture, prefix: str) -> dict[str, Shape]:
    """Every weight the network of `arch` needs, by key under `prefix` (the readout aside)."""
    embedding, final, _, _ = _TOP[_group(arch)]
    weights = {prefix + embedding: (arch.vocab, arch.d_model)}
    layer = _neox_layer(arch) if arch.family == "gpt_neox" else _llama_layer(arch)
    for l in range(arch.layers):
        weights |= {f"{prefix}layers.{l}.{part}": shape for part, shape in layer.items()}
    return weights | {prefix + part: (arch.d_model,) for part in final}


def find_prefix(names: list[str], arch: Architecture, where: str) -> str:
    """The prefix before the family's token embedding (InputError when none or several)."""
    embedding = _TOP[_group(arch)][0]
    found = sorted({n[: -len(embedding)] for n in names if n.endswith(embedding)})
    found = [p for p in found if p == "" or p.endswith(".")]
    if len(found) == 1:
        return found[0]
    if not found:
        raise InputError(
            f"{where} has no token embedding {embedding!r} among its {len(names)} tensors "
            f"({_listed(sorted(names), 3)}): not a {arch.family} checkpoint"
        )
    raise InputError(
        f"{where}: several tensors end in {embedding} (prefixes {_listed(found)}); choose one "
        f"with {param('prefix')}"
    )


def _others(names: list[str], weights: Mapping[str, Shape], prefix: str) -> tuple[list, list]:
    """(buffers skipped, unexpected tensors) among `names` that are not weights."""
    ignored, unexpected = [], []
    for name in names:
        if name in weights:
            continue
        rest = name[len(prefix) :] if name.startswith(prefix) else None
        (ignored if rest is not None and _BUFFERS.fullmatch(rest) else unexpected).append(name)
    return ignored, unexpected


def hf_layout(
    listed: Mapping[str, Shape], arch: Architecture, where: str, prefix: str | None = None
) -> HfLayout:
    """The checked layout of a checkpoint whose tensors are `listed` (name → shape): InputError,
    one line, naming missing, unexpected or mis-shaped tensors (module docstring)."""
    names = list(listed)
    per_layer = len(_neox_layer(arch) if arch.family == "gpt_neox" else _llama_layer(arch))
    if arch.layers * per_layer > len(names):  # before a dict of every expected name is built
        raise InputError(
            f"{where} holds {len(names):,} tensors; the {arch.layers:,} layers its config states "
            f"need at least {arch.layers * per_layer:,}"
        )
    prefix = find_prefix(names, arch, where) if prefix is None else prefix
    _, _, readouts, inner = _TOP[_group(arch)]
    outer = prefix[: -len(inner)] if prefix.endswith(inner) else prefix
    weights = expected_weights(arch, prefix)
    keys = [outer + name for name in readouts]
    readout_key = next((key for key in keys if key in listed), keys[0])
    if readout_key in listed or not arch.tied:
        weights[readout_key] = (arch.vocab, arch.d_model)
    ignored, unexpected = _others(names, weights, prefix)
    if missing := [n for n in weights if n not in listed]:
        raise InputError(
            f"{where} lacks {len(missing)} tensor(s) of its {arch.family} model "
            f"({arch.layers} layers as its config states): {_listed(missing)}"
        )
    if unexpected:
        raise InputError(
            f"{where} holds {len(unexpected)} tensor(s) that are not part of its {arch.family} "
            f"model ({arch.layers} layers, prefix {prefix!r}): {_listed(sorted(unexpected))}"
        )
    if wrong := [n for n, shape in weights.items() if tuple(listed[n]) != shape]:
        first = wrong[0]
        raise InputError(
            f"{where}: {len(wrong)} tensor(s) have the wrong shape for the config, first "
            f"{first!r}: {tuple(listed[first])}, expected {weights[first]}"
        )
    return HfLayout(
        prefix, weights, readout_key if readout_key in weights else None, tuple(ignored)
    )
