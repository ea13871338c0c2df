"""The Llama-family parts in TransformerLens's native model (issue 32), both ways: RMSNorm
(normalization_type "RMS", final_rms), rotary positions (positional_embedding_type "rotary",
rotary_dim, rotary_base), gated MLPs (gated_mlp: mlp.gate / in / out weights, no biases) and
grouped-query attention (n_key_value_heads). headcount.interop.transformer_lens_state calls in here;
nothing here imports transformer_lens.

The mapping, beyond the GPT-2 one:

* RMSNorm w → blocks.l.ln1 / ln2.weight, ln_final.weight (no biases).
* Gated MLP: W_gate, W_in, W_out → blocks.l.mlp.gate / in / out.weight (zero-padded to d_mlp).
* Grouped-query attention: heads whose key and value weights and biases are equal in consecutive
  groups of g go as one key/value head per group (n_key_value_heads = n_heads / g; TL repeats them
  as transformers does). Reading, each head gets its group's copy.
* Rotary: TL's native rotation pairs entries (2i, 2i + 1) of each head ("interleaved"). A
  "rotate_half" model (Llama, NeoX and every transformers import) pairs (i, i + dims/2) instead, so
  its q and k coordinates are permuted on the way out — entry i to 2i, entry dims/2 + i to 2i + 1,
  the same permutation for q and k, which leaves every score ⟨q, k⟩ exactly as it was. The record's
  "rotary_layout" undoes it on the way back. A TL model read without a record is interleaved.

Refused, with the reason: NeoX's parallel residual, Gemma's 1 + w RMSNorm, gated MLPs with biases,
a mix of norm kinds or of gated and plain MLPs, rotary parts that differ by layer, rotary heads of
different widths, a rotary model with a nonzero W_pos.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.core.model import RMSNorm, Rotary, Transformer


@dataclass(frozen=True)
class Blocks:
    """The Llama-family parts of a model as TL holds them."""

    rms: bool
    rotary: Rotary | None
    gated: bool
    group: int  # heads per key/value head

    def config(self, n_heads: int) -> dict[str, Any]:
        """The TL config keys these parts set (nothing for a GPT-2-style model)."""
        out: dict[str, Any] = {}
        if self.rms:
            out |= {"normalization_type": "RMS", "final_rms": True}
        if self.rotary is not None:
            out |= {"positional_embedding_type": "rotary", "rotary_dim": self.rotary.dims}
            out["rotary_base"] = self.rotary.theta
        if self.gated:
            out["gated_mlp"] = True
        if self.group > 1:
            out["n_key_value_heads"] = n_heads // self.group
        return out


def _refuse(why: str) -> InputError:
    return InputError(f"TransformerLens's native model cannot hold this model: {why}")


def _norm_kind(model: Transformer) -> bool:
    """Whether the model's norms are RMSNorms (all of them; InputError for a mix or an offset)."""
    norms = [model.ln_final] + [ln for layer in model.layers for ln in (layer.ln1, layer.ln2)]
    kinds = {isinstance(ln, RMSNorm) for ln in norms if ln is not None}
    if len(kinds) > 1:
        raise _refuse("it mixes LayerNorm and RMSNorm (TL has one normalization type)")
    if any(isinstance(ln, RMSNorm) and ln.offset for ln in norms):
        raise _refuse("Gemma's RMSNorm scales by 1 + w (TL's by w)")
    return kinds == {True}


def _gated(model: Transformer) -> bool:
    mlps = [layer.mlp for layer in model.layers if layer.mlp is not None]
    kinds = {m.W_gate is not None for m in mlps}
    if len(kinds) > 1:
        raise _refuse("some MLPs are gated and some are not")
    biased = any(
        m.b_gate is not None or m.b_in.any() or m.b_out.any() for m in mlps if m.W_gate is not None
    )
    if biased:
        raise _refuse("a gated MLP has biases (TL's gated MLP has none)")
    return kinds == {True}


def _rotary(model: Transformer) -> Rotary | None:
    parts = {layer.rotary for layer in model.layers}
    if len(parts) > 1:
        raise _refuse("its layers have different rotary parts (TL has one)")
    rotary = parts.pop() if parts else None
    if rotary is None:
        return None
    if model.W_pos.any():
        raise _refuse("it has rotary positions and a nonzero W_pos")
    widths = {h.W_Q.shape[1] for layer in model.layers for h in layer.heads}
    if len(widths) > 1:
        raise _refuse("its rotary heads have different widths (TL has one d_head)")
    return rotary


def _same(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))


def _group(model: Transformer) -> int:
    """The largest g such that every layer's heads share key and value weights and biases in
    consecutive groups of g (1: no sharing), every layer with the same head count."""
    counts = set(model.heads_per_layer)
    if len(counts) != 1:
        return 1
    H = counts.pop()
    for g in range(H, 1, -1):
        if H % g == 0 and all(
            all(
                _same(h.W_K, first.W_K) and _same(h.W_V, first.W_V)
                and _same(h.b_K, first.b_K) and _same(h.b_V, first.b_V)
                for h in layer.heads[s : s + g]
                for first in [layer.heads[s]]
            )
            for layer in model.layers
            for s in range(0, H, g)
        ):  # fmt: skip
            return g
    return 1


def blocks_of(model: Transformer) -> Blocks:
    """The Llama-family parts of `model` as TL holds them; InputError for what it cannot hold."""
    if any(layer.parallel for layer in model.layers):
        raise _refuse("GPT-NeoX's parallel residual (TL's native blocks are sequential)")
    if model.positions == "qk":
        raise _refuse("shortformer positions (TL's native model has standard or rotary ones)")
    return Blocks(_norm_kind(model), _rotary(model), _gated(model), _group(model))


def permutation(rotary: Rotary, width: int) -> np.ndarray:
    """src with new[j] = old[src[j]]: rotate_half's pair (i, i + dims/2) to (2i, 2i + 1)."""
    half = rotary.dims // 2
    src = np.arange(width)
    src[0 : rotary.dims : 2] = np.arange(half)
    src[1 : rotary.dims : 2] = np.arange(half, rotary.dims)
    return src


def _per_head(a: np.ndarray, width: int, index: np.ndarray) -> np.ndarray:
    """a [heads·width …] with each head's block of rows reordered by `index`."""
    rows = a.reshape(-1, width, *a.shape[1:])
    return rows[:, index].reshape(a.shape)


def export_blocks(
    tensors: dict[str, np.ndarray], blocks: Blocks, model: Transformer, width: int, d_mlp: int
) -> None:
    """Turn the GPT-2-style tensors of transformer_lens_parts into the Llama-family layout, in
    place (module docstring)."""
    if blocks.rotary is not None:
        tensors.pop("pos_embed.weight")
    for l, layer in enumerate(model.layers):
        p = f"blocks.{l}."
        if blocks.rotary is not None and blocks.rotary.layout == "rotate_half":
            src = permutation(blocks.rotary, width)
            for name in ("q.weight", "q.bias", "k.weight", "k.bias"):
                tensors[p + "attn." + name] = _per_head(tensors[p + "attn." + name], width, src)
        if blocks.group > 1:
            for name in ("k.weight", "k.bias", "v.weight", "v.bias"):
                a = tensors[p + "attn." + name]
                rows = a.reshape(-1, width, *a.shape[1:])[:: blocks.group]
                tensors[p + "attn." + name] = rows.reshape(-1, *a.shape[1:])
        if blocks.gated and p + "mlp.in.bias" in tensors:
            del tensors[p + "mlp.in.bias"], tensors[p + "mlp.out.bias"]
            gate = np.zeros((d_mlp, model.d_model))
            if layer.mlp is not None:
                gate[: layer.mlp.W_gate.shape[1]] = layer.mlp.W_gate.T
            tensors[p + "mlp.gate.weight"] = gate
        if blocks.rms:
            for name in ("ln1.bias", "ln2.bias"):
                tensors.pop(p + name, None)
    if blocks.rms:
        tensors.pop("ln_final.bias", None)


def import_blocks(tensors: dict[str, np.ndarray], kv_heads: int, n_heads: int, width: int,
                  rotary: Rotary | None) -> dict[str, np.ndarray]:  # fmt: skip
    """The GPT-2-style tensors transformer_lens_state reads, from a Llama-family state dict: each
    head's copy of its key/value head, rotate_half's coordinates put back (module docstring)."""
    out = dict(tensors)
    group = n_heads // kv_heads
    for name in [
        k
        for k in tensors
        if k.endswith(("attn.k.weight", "attn.k.bias", "attn.v.weight", "attn.v.bias"))
    ]:
        a = tensors[name]
        out[name] = np.repeat(a.reshape(-1, width, *a.shape[1:]), group, axis=0).reshape(
            -1, *a.shape[1:]
        )
    if rotary is not None and rotary.layout == "rotate_half":
        back = np.argsort(permutation(rotary, width))
        for name in [
            k
            for k in out
            if k.endswith(("attn.q.weight", "attn.q.bias", "attn.k.weight", "attn.k.bias"))
        ]:
            out[name] = _per_head(out[name], width, back)
    return out
