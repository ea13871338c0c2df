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

Weight names and shapes follow TransformerLens (W_E, W_pos, W_Q, W_K, W_V, W_O, W_U, b_Q, …, ln1,
ln2, ln_final) so weights move between the two. Values are float64 arrays; the model they define is
the real-arithmetic one, and the precision modes of :mod:`headcount.core.numbers.precision` say
where it is rounded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from headcount.core.model.symbols import BOTTOM
from headcount.core.numbers import affine_bounds, outward

MASKS = ("causal", "full")
ACTIVATIONS = (
    "relu",
    "gelu",
    "gelu_tanh",
)  # gelu: x·Φ(x) (exact erf); gelu_tanh: GPT-2's "gelu_new"


def _f64(a: Any) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64))


def _f64_or_none(a: Any) -> np.ndarray | None:
    return None if a is None else _f64(a)


def _check_vector(name: str, a: np.ndarray | None, size: int) -> None:
    if a is not None and a.shape != (size,):
        raise ValueError(f"{name} has shape {a.shape}, expected ({size},)")


@dataclass(frozen=True, eq=False)
class LayerNorm:
    """(x − mean x) / √(var x + eps) · w + b over d_model (the biased variance, as torch and
    GPT-2)."""

    w: np.ndarray  # [d_model]
    b: np.ndarray  # [d_model]
    eps: float = 1e-5

    def __post_init__(self) -> None:
        object.__setattr__(self, "w", _f64(self.w))
        object.__setattr__(self, "b", _f64(self.b))
        object.__setattr__(self, "eps", float(self.eps))
        if self.w.ndim != 1 or self.b.shape != self.w.shape:
            raise ValueError(
                f"LayerNorm w {self.w.shape} and b {self.b.shape} must be one [d_model] shape"
            )
        if not (math.isfinite(self.eps) and self.eps > 0):
            raise ValueError(f"LayerNorm eps must be a positive finite number, got {self.eps!r}")


@dataclass(frozen=True, eq=False)
class AttentionHead:
    """One head. Scores ⟨x W_Q + b_Q, x W_K + b_K⟩ (times the layer's scale); the head adds
    softmax(scores) · (x W_V + b_V) · W_O to the residual. Biases are optional (None: zero)."""

    W_Q: np.ndarray  # [d_model, d_head]
    W_K: np.ndarray  # [d_model, d_head]
    W_V: np.ndarray  # [d_model, d_value]
    W_O: np.ndarray  # [d_value, d_model]
    b_Q: np.ndarray | None = None  # [d_head]
    b_K: np.ndarray | None = None  # [d_head]
    b_V: np.ndarray | None = None  # [d_value]

    def __post_init__(self) -> None:
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            object.__setattr__(self, name, _f64(getattr(self, name)))
        for name in ("b_Q", "b_K", "b_V"):
            object.__setattr__(self, name, _f64_or_none(getattr(self, name)))
        d_model = self.W_Q.shape[0]
        if self.W_Q.shape != self.W_K.shape:
            raise ValueError(
                f"W_Q {self.W_Q.shape} and W_K {self.W_K.shape} must have the same shape"
            )
        if self.W_V.shape[0] != d_model or self.W_O.shape != (self.W_V.shape[1], d_model):
            raise ValueError(
                f"W_V {self.W_V.shape} / W_O {self.W_O.shape} do not fit d_model={d_model}"
            )
        _check_vector("b_Q", self.b_Q, self.W_Q.shape[1])
        _check_vector("b_K", self.b_K, self.W_K.shape[1])
        _check_vector("b_V", self.b_V, self.W_V.shape[1])

    @property
    def has_bias(self) -> bool:
        return any(b is not None for b in (self.b_Q, self.b_K, self.b_V))


@dataclass(frozen=True, eq=False)
class MLP:
    """MLP on the residual: x += act(LN2(x) W_in + b_in) W_out + b_out, act one of ACTIVATIONS."""

    W_in: np.ndarray  # [d_model, d_mlp]
    b_in: np.ndarray  # [d_mlp]
    W_out: np.ndarray  # [d_mlp, d_model]
    b_out: np.ndarray  # [d_model]
    activation: str = "relu"

    def __post_init__(self) -> None:
        for name in ("W_in", "b_in", "W_out", "b_out"):
            object.__setattr__(self, name, _f64(getattr(self, name)))
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}: use one of {ACTIVATIONS}")
        d_model, d_mlp = self.W_in.shape
        if self.W_out.shape != (d_mlp, d_model):
            raise ValueError(f"W_out {self.W_out.shape} does not fit W_in {self.W_in.shape}")
        _check_vector("b_in", self.b_in, d_mlp)
        _check_vector("b_out", self.b_out, d_model)


@dataclass(frozen=True, eq=False)
class Layer:
    """One block: x += Σ heads(LN1(x)) + b_O, then x += MLP(LN2(x)). Scores are multiplied by
    attn_scale."""

    heads: tuple[AttentionHead, ...]
    mlp: MLP | None = None
    ln1: LayerNorm | None = None  # before the heads
    ln2: LayerNorm | None = None  # before the MLP
    b_O: np.ndarray | None = None  # [d_model], added once to the heads' sum
    attn_scale: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", tuple(self.heads))
        object.__setattr__(self, "b_O", _f64_or_none(self.b_O))
        object.__setattr__(self, "attn_scale", float(self.attn_scale))
        if not math.isfinite(self.attn_scale):
            raise ValueError(f"attn_scale must be finite, got {self.attn_scale!r}")
        if self.ln2 is not None and self.mlp is None:
            raise ValueError("ln2 normalises the MLP's input: a layer without an MLP has none")

    def extensions(self) -> set[str]:
        """The GPT-2 parts this layer uses (empty for the seed's plain layer)."""
        out = set()
        if self.ln1 is not None or self.ln2 is not None:
            out.add("layernorm")
        if self.b_O is not None or any(h.has_bias for h in self.heads):
            out.add("attention biases")
        if self.attn_scale != 1.0:
            out.add("attention scale")
        if self.mlp is not None and self.mlp.activation != "relu":
            out.add("gelu")
        return out


class Decoder(Protocol):
    """ψ_out: maps (position, final residual vector) to a token or BOTTOM, with a rigorous
    variant."""

    kind: ClassVar[str]

    def decode(self, x: np.ndarray) -> np.ndarray:
        """x: [batch pos d_model] float -> [batch pos] int tokens (BOTTOM for ⊥)."""
        ...

    def decode_bounds(self, mid: np.ndarray, rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Given x ∈ [mid - rad, mid + rad] elementwise: (prediction at mid, decided) where decided
        is True where every x in the box decodes to that same prediction."""
        ...

    def tensors(self) -> dict[str, np.ndarray]: ...

    def config(self) -> dict[str, Any]: ...


def argmax_bounds(lmid: np.ndarray, lrad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(argmax of the midpoint logits, decided) [..]: decided where, for all logits in the box lmid
    ± lrad [.. classes], that class c is the argmax with ties to the lowest class: its lower end is
    above the upper end of every class before it and not below that of every class after it. A
    radius 0 means an exact logit (core.passes.bounds), so exact ties are decided by the rule, not
    left open."""
    cls = np.argmax(lmid, axis=-1)
    with np.errstate(invalid="ignore"):
        low, high = outward(lmid - lrad, lmid + lrad)  # each endpoint took one rounding
    exact = lrad == 0
    low, high = np.where(exact, lmid, low), np.where(exact, lmid, high)
    low_best = np.take_along_axis(low, cls[..., None], axis=-1)[..., 0]
    classes = np.arange(lmid.shape[-1])
    before = classes < cls[..., None]  # [.. classes]
    after = classes > cls[..., None]
    high_before = np.where(before, high, -np.inf).max(axis=-1, initial=-np.inf)
    high_after = np.where(after, high, -np.inf).max(axis=-1, initial=-np.inf)
    return cls, (low_best > high_before) & (low_best >= high_after)  # False wherever a NaN is


@dataclass(frozen=True, eq=False)
class LinearDecoder:
    """Unembedding + argmax over S token classes and a last ⊥ class; ties go to the lowest class."""

    W_U: np.ndarray  # [d_model, alphabet + 1]  (column `alphabet` is ⊥)
    b_U: np.ndarray  # [alphabet + 1]
    kind: ClassVar[str] = "linear"

    def __post_init__(self) -> None:
        object.__setattr__(self, "W_U", _f64(self.W_U))
        object.__setattr__(self, "b_U", _f64(self.b_U))

    @property
    def alphabet(self) -> int:
        return self.W_U.shape[1] - 1

    def _classes_to_tokens(self, cls: np.ndarray) -> np.ndarray:
        return np.where(cls == self.alphabet, BOTTOM, cls).astype(np.int64)

    def decode(self, x: np.ndarray) -> np.ndarray:
        logits = x @ self.W_U.astype(x.dtype) + self.b_U.astype(x.dtype)
        return self._classes_to_tokens(np.argmax(logits, axis=-1))

    def decode_bounds(self, mid: np.ndarray, rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cls, decided = argmax_bounds(*affine_bounds(mid, rad, self.W_U, self.b_U))
        return self._classes_to_tokens(cls), decided

    def tensors(self) -> dict[str, np.ndarray]:
        return {"W_U": self.W_U, "b_U": self.b_U}

    def config(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_parts(cls, tensors: dict[str, np.ndarray], config: dict[str, Any]) -> LinearDecoder:
        return cls(tensors["W_U"], tensors["b_U"])


# Decoder kinds by name. A kind lives beside what needs it and registers itself when its module is
# imported: "linear" here, "vocab" in core.model.vocab (imported by this package's face), and the
# scenarios' own kinds ("induction_readout": headcount.induction.readout, which the package
# headcount imports, so every kind is known before any model file is read). Nothing is imported by
# name.
_DECODER_CLASSES: dict[str, type] = {"linear": LinearDecoder}


def register_decoder(cls: type) -> type:
    _DECODER_CLASSES[cls.kind] = cls
    return cls


def decoder_class(kind: str) -> type:
    if kind not in _DECODER_CLASSES:
        raise ValueError(
            f"unknown decoder kind {kind!r}: known kinds are {sorted(_DECODER_CLASSES)}"
        )
    return _DECODER_CLASSES[kind]


@dataclass(frozen=True, eq=False)
class Transformer:
    """An L-layer model in weight form. `info` is free-form JSON metadata (e.g. which
    construction)."""

    W_E: np.ndarray  # [alphabet, d_model]
    W_pos: np.ndarray  # [n_ctx, d_model]
    layers: tuple[Layer, ...]
    decoder: Any  # a Decoder
    mask: str = "causal"
    info: dict[str, Any] = field(default_factory=dict)
    ln_final: LayerNorm | None = None  # before the decoder

    def __post_init__(self) -> None:
        object.__setattr__(self, "W_E", _f64(self.W_E))
        object.__setattr__(self, "W_pos", _f64(self.W_pos))
        object.__setattr__(self, "layers", tuple(self.layers))
        if self.mask not in MASKS:
            raise ValueError(f"unknown mask {self.mask!r}: use one of {MASKS}")
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
            _check_vector("b_O", layer.b_O, d)
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
            out.add("layernorm")
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
