"""The one-layer table form (seed 000 §2): for one layer, Q∘ψ_in, K∘ψ_in and V∘ψ_in depend only on
(position, token), so a one-layer transformer is fully described by tables plus ψ_out:

    x_i = ψ_in[i, σ_i]                       embed  [n_ctx alphabet d_model] q_i = Q̃[h, i, σ_i],
    k_j = K̃[h, j, σ_j]    Q, K   [heads n_ctx alphabet d_head] v_j = Ṽ[h, j, σ_j]
    V      [heads n_ctx alphabet d_model]  (already in R^m) τ_i = ψ_out(i, x_i + Σ_h Σ_j
    softmax_j⟨q_i, k_j⟩ v_j)

This is more general than weight form (ψ_in need not be W_E[σ] + W_pos[i]); the lower-bound tools
take models in this form. In fixed:p the rounding points are ψ_in, Q̃, K̃, Ṽ and each head's output.

Two conversions from a one-layer weight-form model, for two different semantics:

* :func:`table_from_weights` — the real-arithmetic table (ψ_in = W_E + W_pos, Q̃ = ψ_in W_Q, K̃ =
  ψ_in W_K, Ṽ = ψ_in W_V W_O in float64). Its float64 model is the weight model's up to float
  rounding, but its fixed:p model is NOT the weight model's fixed:p model: the weight form rounds x
  = W_E + W_pos, then q, k, v = round_p(x W_V) from the rounded x, and applies W_O to the unrounded
  head average; this table rounds Q̃, K̃, Ṽ computed from the unrounded embedding and rounds the
  composed Ṽ = W_V·W_O once.
* core.passes.fixed_table.table_at_precision — at one p, the table whose fixed:p model is exactly
  the weight model's fixed:p model (its entries are the model's own rounded values, computed by the
  exact evaluator's arithmetic), or InputError where no table can be: the weight form does not round
  v·W_O, a table rounds Ṽ, so they agree only where every v·W_O already lies on the 2^-p grid inside
  the clip range.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from headcount.common.errors import InputError
from headcount.core.model.parts import MASKS, LinearDecoder
from headcount.core.model.transformer import Transformer


@dataclass(frozen=True, eq=False)
class OneLayerTable:
    embed: np.ndarray  # [n_ctx alphabet d_model]   ψ_in
    Q: np.ndarray  # [heads n_ctx alphabet d_head]
    K: np.ndarray  # [heads n_ctx alphabet d_head]
    V: np.ndarray  # [heads n_ctx alphabet d_model]
    decoder: Any  # a Decoder (ψ_out)
    mask: str = "causal"
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in ("embed", "Q", "K", "V"):
            object.__setattr__(
                self, name, np.ascontiguousarray(getattr(self, name), dtype=np.float64)
            )
        if self.mask not in MASKS:
            raise ValueError(f"unknown mask {self.mask!r}: use one of {MASKS}")
        n_ctx, alphabet, d_model = self.embed.shape
        if self.Q.shape != self.K.shape or self.Q.shape[1:3] != (n_ctx, alphabet):
            raise ValueError(
                f"Q {self.Q.shape} / K {self.K.shape} do not match embed {self.embed.shape}"
            )
        if self.V.shape != (self.Q.shape[0], n_ctx, alphabet, d_model):
            raise ValueError(
                f"V {self.V.shape} does not match heads={self.Q.shape[0]}, embed {self.embed.shape}"
            )

    @property
    def n_ctx(self) -> int:
        return self.embed.shape[0]

    @property
    def alphabet(self) -> int:
        return self.embed.shape[1]

    @property
    def d_model(self) -> int:
        return self.embed.shape[2]

    @property
    def layers(self) -> tuple:
        return ("table",)

    @property
    def heads_per_layer(self) -> list[int]:
        return [self.Q.shape[0]]

    def size(self, precision_bits: int) -> int:
        return self.heads_per_layer[0] * self.d_model * precision_bits


def check_plain(model: Transformer) -> None:
    """InputError unless the model is the seed's plain model (no GPT-2 parts, no vocabulary
    readout)."""
    if model.extensions or getattr(model.decoder, "kind", None) == "vocab":
        parts = ", ".join(model.extensions) or "an unbound vocabulary readout"
        raise InputError(
            f"the one-layer table form is the seed's plain model; this model has {parts}"
        )


def table_from_weights(model: Transformer, first_layer_only: bool = False) -> OneLayerTable:
    """The real-arithmetic table of a one-layer weight-form model (the decoder is carried over):
    ψ_in = W_E[σ] + W_pos[i], Q̃ = ψ_in W_Q, K̃ = ψ_in W_K, Ṽ = ψ_in W_V W_O, all in float64.

    Its float64 evaluation is the model's up to float rounding (the maps are the same), but it is
    NOT fixed:p-faithful: its rounding points (Q̃, K̃, Ṽ from the unrounded embedding, the composed
    Ṽ rounded once) are not the weight form's (module docstring); for the table whose fixed:p model
    is the weight model's, use core.passes.fixed_table.table_at_precision. With
    first_layer_only=True, the tables of layer 1 of a deeper model (its decoder then reads layer 1's
    output directly, which only means something for inspection, not as the model's own output)."""
    if not model.layers:
        raise ValueError("a model with no layers has no one-layer table form")
    check_plain(model)
    if model.layers[0].mlp is not None:
        raise ValueError(
            "a first layer with an MLP has no one-layer table form (ψ_out would have to absorb "
            "the MLP)"
        )
    if len(model.layers) != 1 and not first_layer_only:
        raise ValueError(
            f"a {len(model.layers)}-layer model is not a one-layer model: pass "
            "first_layer_only=True "
            "for the tables of its first layer"
        )
    embed = model.W_pos[:, None, :] + model.W_E[None, :, :]  # [n_ctx alphabet d_model]
    heads = model.layers[0].heads
    width = max(h.W_Q.shape[1] for h in heads)
    pad = lambda a: np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, width - a.shape[-1])])  # noqa: E731
    Q = np.stack([pad(embed @ h.W_Q) for h in heads])
    K = np.stack([pad(embed @ h.W_K) for h in heads])
    V = np.stack([embed @ h.W_V @ h.W_O for h in heads])
    info = dict(model.info) | (
        {"first_layer_of": len(model.layers)} if len(model.layers) > 1 else {}
    )
    return OneLayerTable(embed, Q, K, V, model.decoder, model.mask, info)


def random_table(
    rng: np.random.Generator,
    n_ctx: int,
    alphabet: int,
    heads: int,
    dim: int,
    d_head: int | None = None,
    scale: float = 1.0,
    mask: str = "causal",
    decoder: Any = None,
) -> OneLayerTable:
    """A seeded random one-layer table model: ψ_in, Q̃, K̃, Ṽ are i.i.d. standard Gaussians times
    `scale`.

    Why: the lower-bound tools (INDEX protocol, counterexample search) must work for *every*
    one-layer model, not just the constructions, so tests and experiments need generic models with
    no structure to lean on. d_head defaults to dim (the seed's Q, K, V all map into R^m). The
    default decoder is a LinearDecoder with a Gaussian W_U [dim, alphabet+1] (last column ⊥) and
    zero bias; `scale` does not touch it (an argmax does not care about the scale of W_U).
    """
    n_ctx, alphabet, heads, dim = int(n_ctx), int(alphabet), int(heads), int(dim)
    d_head = dim if d_head is None else int(d_head)
    if min(n_ctx, alphabet, heads, dim, d_head) < 1:
        raise ValueError(
            f"random_table needs positive sizes, got n_ctx={n_ctx}, alphabet={alphabet}, "
            f"heads={heads}, "
            f"dim={dim}, d_head={d_head}"
        )
    embed = scale * rng.standard_normal((n_ctx, alphabet, dim))
    Q = scale * rng.standard_normal((heads, n_ctx, alphabet, d_head))
    K = scale * rng.standard_normal((heads, n_ctx, alphabet, d_head))
    V = scale * rng.standard_normal((heads, n_ctx, alphabet, dim))
    if decoder is None:
        decoder = LinearDecoder(rng.standard_normal((dim, alphabet + 1)), np.zeros(alphabet + 1))
    info = {
        "construction": "random_table",
        "n_ctx": n_ctx,
        "alphabet": alphabet,
        "heads": heads,
        "dim": dim,
        "d_head": d_head,
        "scale": float(scale),
    }
    return OneLayerTable(embed, Q, K, V, decoder, mask, info)
