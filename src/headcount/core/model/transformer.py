"""The formal model in weight form (seed 000 §2, spec/induction.md "The formal model").

An L-layer transformer over an alphabet Σ = {0..S-1}:

    x_i^0 = W_E[σ_i] + W_pos[i]                                          (ψ_in: the embedding)
    x^l   = x^{l-1} + Σ_heads softmax_mask(scale·q kᵀ) v W_O + b_O (+ MLP)  (residual stream)
    τ_i   = decoder(i, LN_final(x_i^L))                                  (ψ_out, with a ⊥ class)

The seed's model is the plain case: no LayerNorm, no biases, scale 1, ReLU MLPs (constructions fold
any scale into W_Q). The GPT-2 block adds, all optional (``Transformer.extensions`` lists those a
model uses): a pre-LayerNorm before the heads (``Layer.ln1``) and before the MLP (``Layer.ln2``), a
final one (``Transformer.ln_final``), biases b_Q, b_K, b_V per head and b_O per layer, a stored
attention scale per layer (1/√d_head in GPT-2; a float64 number, used exactly), and GELU MLPs (exact
erf, or the tanh form GPT-2 uses). Queries, keys and values are x W + b of the LayerNorm's output (q
= LN1(x) W_Q + b_Q).

The Llama / GPT-NeoX block (issue 32) adds, again optional: RMSNorm in place of LayerNorm
(``RMSNorm``, Gemma's 1 + w included), rotary positions (``Layer.rotary``: q and k of each head
rotated after projection, at positions 0..n−1; such models have W_pos = 0), gated MLPs
(``MLP.W_gate``; SiLU or GELU gate), the parallel residual of GPT-NeoX (``Layer.parallel``), and no
biases. Grouped-query attention is stored as per-head copies of the shared key and value weights:
the function is the same.
docs/families.md lists the rounding points of fixed:p for every part.

Weight names and shapes follow TransformerLens (W_E, W_pos, W_Q, W_K, W_V, W_O, W_U, b_Q, …, ln1,
ln2, ln_final) so weights move between the two. Values are float64 arrays; the model they define is
the real-arithmetic one, and the precision modes of :mod:`headcount.core.numbers.precision` say
where it is rounded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.core.model.parts import (
    MASKS,
    POSITIONS,
    Layer,
    Norm,
    Rotary,
    check_vector,
    float64_array,
    norm_extension,
)
from headcount.core.model.weights import (
    BOTTOM_LAST,
    parts_from_weights,
    transformer_options,
    transformer_weights,
)


@dataclass(frozen=True, eq=False)
class Transformer:
    """An L-layer model in weight form (the module docstring states the function it computes).

    Build one from arrays with `Transformer.from_weights` (TransformerLens's names and shapes), read
    one with `headcount.load`, or take a construction (`headcount.induction.two_layer`). Fields:
    W_E [alphabet, d_model] and W_pos [n_ctx, d_model] (the embedding), `layers` (each a Layer of
    AttentionHeads with an optional MLP and LayerNorms), `decoder` (ψ_out, with a ⊥ class), `mask`
    ("causal" or "full"), `ln_final` (optional), and `info`, free-form JSON metadata (e.g. which
    construction). Arrays are float64 copies; the model is immutable.
    """

    W_E: np.ndarray  # [alphabet, d_model]
    W_pos: np.ndarray  # [n_ctx, d_model]
    layers: tuple[Layer, ...]
    decoder: Any  # a Decoder
    mask: str = "causal"
    info: dict[str, Any] = field(default_factory=dict)
    ln_final: Norm | None = None  # before the decoder
    # "residual": W_pos is added to the embedding; "qk" (shortformer, TransformerLens's toy
    # models): the residual starts at W_E[σ_i] and W_pos[i] is added to every layer's normalised
    # input of q and k only (LN1(x) + W_pos[i]), never to v or the MLPs
    positions: str = "residual"

    def __post_init__(self) -> None:
        object.__setattr__(self, "W_E", float64_array(self.W_E))
        object.__setattr__(self, "W_pos", float64_array(self.W_pos))
        object.__setattr__(self, "layers", tuple(self.layers))
        if self.mask not in MASKS:
            raise ValueError(f"unknown mask {self.mask!r}: use one of {MASKS}")
        if self.positions not in POSITIONS:
            raise ValueError(f"unknown positions {self.positions!r}: use one of {POSITIONS}")
        d = self.d_model
        if self.W_pos.shape[1] != d:
            raise ValueError(f"W_pos has width {self.W_pos.shape[1]}, W_E has {d}")
        for layer in self.layers:
            for head in layer.heads:
                if head.W_Q.shape[0] != d:
                    raise ValueError(f"a head reads d_model={head.W_Q.shape[0]}, the model has {d}")
            for name, part in (("ln1", layer.ln1), ("ln2", layer.ln2)):
                if part is not None and part.w.shape != (d,):
                    raise ValueError(
                        f"{name} has width {part.w.shape[0]}, the model has d_model={d}"
                    )
            check_vector("b_O", layer.b_O, d)
            if layer.mlp is not None and layer.mlp.W_in.shape[0] != d:
                raise ValueError(
                    f"an MLP reads d_model={layer.mlp.W_in.shape[0]}, the model has {d}"
                )
        if self.ln_final is not None and self.ln_final.w.shape != (d,):
            raise ValueError(
                f"ln_final has width {self.ln_final.w.shape[0]}, the model has d_model={d}"
            )

    @property
    def extensions(self) -> list[str]:
        """The GPT-2 parts this model uses, sorted; empty for the seed's plain model (which the
        exact evaluator, the table form and the INDEX tools need)."""
        out = set().union(*(layer.extensions() for layer in self.layers))
        if self.ln_final is not None:
            out.add(norm_extension(self.ln_final))
        if self.positions == "qk":
            out.add("shortformer")
        return sorted(out)

    @property
    def alphabet(self) -> int:
        return self.W_E.shape[0]

    @property
    def n_ctx(self) -> int:
        return self.W_pos.shape[0]

    @property
    def d_model(self) -> int:
        return self.W_E.shape[1]

    @property
    def heads_per_layer(self) -> list[int]:
        return [len(layer.heads) for layer in self.layers]

    def size(self, precision_bits: int) -> int:
        """Σ over layers of heads · dim · precision_bits — the quantity the one-layer bound is
        about."""
        return sum(self.heads_per_layer) * self.d_model * precision_bits

    @classmethod
    def from_weights(
        cls,
        weights: Mapping[str, Any],
        *,
        readout: str | Mapping[str, Any],
        mask: str = "causal",
        attn_scale: float | Sequence[float] = 1.0,
        activation: str = "relu",
        ln_eps: float = 1e-5,
        info: Mapping[str, Any] | None = None,
        rotary: Rotary | Mapping[str, Any] | None = None,
        parallel: bool = False,
        norm_offset: float = 0.0,
        positions: str = "residual",
    ) -> Transformer:
        """A model from a dict of arrays under TransformerLens's names and shapes.

        Keys (arrays, or anything `numpy.asarray` reads; copied as float64, finite):

            W_E [d_vocab, d_model]    W_pos [n_ctx, d_model]
            blocks.{l}.attn.W_Q, W_K [n_heads, d_model, d_head]
            blocks.{l}.attn.W_V [n_heads, d_model, d_head]   W_O [n_heads, d_head, d_model]
            blocks.{l}.attn.b_Q, b_K, b_V [n_heads, d_head]  b_O [d_model]      (optional)
            blocks.{l}.ln1.w, .b / ln2.w, .b [d_model]  ln_final.w, .b [d_model] (optional;
                a norm with w and no b is an RMSNorm, as TransformerLens's RMS norms)
            blocks.{l}.mlp.W_in [d_model, d_mlp]  b_in [d_mlp]  W_out [d_mlp, d_model]
                b_out [d_model]  W_gate [d_model, d_mlp]  b_gate [d_mlp]         (optional)
            W_U [d_model, d_vocab_out]   b_U [d_vocab_out]                       (b_U optional)

        Layers are numbered 0..L−1 and may have different head counts. `readout` says which logit
        is ⊥ ("no answer"), explicitly: "bottom-last" — W_U has d_vocab + 1 columns, column s is
        token s and the last is ⊥ — or a vocabulary map {"none": id of ⊥, "symbols": [id of
        token 0, …]} over any number of columns (missing keys: token s ↦ s, ⊥ ↦ d_vocab). Ties go
        to the lowest logit. `attn_scale` multiplies every score (one number, or one per layer;
        1/√d_head is GPT-2's); `activation` is the MLPs' (relu, gelu or gelu_tanh); `ln_eps` every
        LayerNorm's. The Llama / NeoX parts (docs/families.md): `rotary` rotates every layer's q
        and k (a core.model.Rotary or {"theta", "dims", "layout"}; such models have W_pos = 0),
        `parallel` gives every layer NeoX's parallel residual, `norm_offset` 1 makes the RMSNorms
        scale by 1 + w (Gemma), `positions` "qk" adds W_pos to the q and k inputs only
        (shortformer); a gated MLP is one with W_gate. InputError (a ValueError) names the first key
        or option that does not fit.
        `Transformer.from_weights(m.weights(), **m.weight_options())` rebuilds `m` exactly.
        """
        W_E, W_pos, layers, decoder, ln_final = parts_from_weights(
            weights,
            readout=readout,
            attn_scale=attn_scale,
            activation=activation,
            ln_eps=ln_eps,
            rotary=rotary,
            parallel=parallel,
            norm_offset=norm_offset,
        )
        try:
            return cls(W_E, W_pos, layers, decoder, mask, dict(info or {}), ln_final, positions)
        except ValueError as err:
            raise InputError(f"weights: {err}") from None

    def weights(self) -> dict[str, np.ndarray]:
        """The model's weights under TransformerLens's names and shapes (from_weights lists them):
        copies, float64. Only the parts the model has appear (a head bias only where some head of
        the layer has one, zero for the others). Heads of one layer that differ in width are
        stacked padded with zeros (exact: the padding adds 0 to every score and value), so
        from_weights(weights()) then computes the same function with uniform widths; for a model
        built by from_weights the round trip is bit-identical. ValueError for a model whose
        readout is not a linear unembedding (the one-layer construction's)."""
        return transformer_weights(self)

    def weight_options(self) -> dict[str, Any]:
        """The keyword arguments of from_weights that, with weights(), rebuild this model exactly:
        readout, mask, attn_scale, activation, ln_eps and info, and rotary, parallel, norm_offset
        and positions where the model has those parts. ValueError where a part differs by layer."""
        return transformer_options(self)

    @property
    def readout(self) -> str | dict[str, Any] | None:
        """Which logit is ⊥, as from_weights takes it: "bottom-last" for a linear readout over
        d_vocab + 1 logits, the vocabulary map of an imported model's readout, None for a readout
        that is not a linear unembedding."""
        if self.decoder.kind == "linear":
            return BOTTOM_LAST
        if self.decoder.kind == "vocab":
            return self.decoder.vocab_map.to_json()
        return None
