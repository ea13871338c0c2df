"""The formal model in weight form (seed 000 §2, spec/induction.md "The formal model").

An L-layer transformer over an alphabet Σ = {0..S-1}:

    x_i^0 = W_E[σ_i] + W_pos[i]                                  (ψ_in: the embedding)
    x^l   = x^{l-1} + Σ_heads softmax_mask(q kᵀ) v W_O (+ MLP)     (residual stream)
    τ_i   = decoder(i, x_i^L)                                    (ψ_out, with a ⊥ class)

Weight names and shapes follow TransformerLens (W_E, W_pos, W_Q, W_K, W_V, W_O, W_U) so weights move
between the two; scores are plain ⟨q, k⟩ (no 1/√d scaling: a construction folds any scale into W_Q).
Values are float64 arrays; the model they define is the real-arithmetic one, and the precision modes of
:mod:`headcount.core.precision` say where it is rounded.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

import numpy as np

from headcount.core.bounds import affine_bounds, outward
from headcount.core.symbols import BOTTOM

MASKS = ("causal", "full")


def _f64(a: Any) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64))


@dataclass(frozen=True, eq=False)
class AttentionHead:
    """One head. Scores ⟨x W_Q, x W_K⟩; the head adds softmax(scores) · (x W_V) · W_O to the residual."""

    W_Q: np.ndarray  # [d_model, d_head]
    W_K: np.ndarray  # [d_model, d_head]
    W_V: np.ndarray  # [d_model, d_value]
    W_O: np.ndarray  # [d_value, d_model]

    def __post_init__(self) -> None:
        for name in ("W_Q", "W_K", "W_V", "W_O"):
            object.__setattr__(self, name, _f64(getattr(self, name)))
        d_model = self.W_Q.shape[0]
        if self.W_Q.shape != self.W_K.shape:
            raise ValueError(f"W_Q {self.W_Q.shape} and W_K {self.W_K.shape} must have the same shape")
        if self.W_V.shape[0] != d_model or self.W_O.shape != (self.W_V.shape[1], d_model):
            raise ValueError(f"W_V {self.W_V.shape} / W_O {self.W_O.shape} do not fit d_model={d_model}")


@dataclass(frozen=True, eq=False)
class MLP:
    """ReLU MLP on the residual: x += relu(x W_in + b_in) W_out + b_out."""

    W_in: np.ndarray  # [d_model, d_mlp]
    b_in: np.ndarray  # [d_mlp]
    W_out: np.ndarray  # [d_mlp, d_model]
    b_out: np.ndarray  # [d_model]

    def __post_init__(self) -> None:
        for name in ("W_in", "b_in", "W_out", "b_out"):
            object.__setattr__(self, name, _f64(getattr(self, name)))


@dataclass(frozen=True, eq=False)
class Layer:
    heads: tuple[AttentionHead, ...]
    mlp: MLP | None = None


class Decoder(Protocol):
    """ψ_out: maps (position, final residual vector) to a token or BOTTOM, with a rigorous variant."""

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
        lmid, lrad = affine_bounds(mid, rad, self.W_U, self.b_U)
        cls = np.argmax(lmid, axis=-1)
        with np.errstate(invalid="ignore"):
            low, high = outward(lmid - lrad, lmid + lrad)  # each endpoint took one rounding
        low_best = np.take_along_axis(low, cls[..., None], axis=-1)[..., 0]
        np.put_along_axis(high, cls[..., None], -np.inf, axis=-1)
        return self._classes_to_tokens(cls), low_best > high.max(axis=-1)  # False wherever a NaN is

    def tensors(self) -> dict[str, np.ndarray]:
        return {"W_U": self.W_U, "b_U": self.b_U}

    def config(self) -> dict[str, Any]:
        return {}

    @classmethod
    def from_parts(cls, tensors: dict[str, np.ndarray], config: dict[str, Any]) -> LinearDecoder:
        return cls(tensors["W_U"], tensors["b_U"])


# Decoder kinds live beside the scenario that needs them; loading imports the module on demand.
DECODER_MODULES = {"linear": "headcount.core.model", "induction_readout": "headcount.induction.readout"}
_DECODER_CLASSES: dict[str, type] = {"linear": LinearDecoder}


def register_decoder(cls: type) -> type:
    _DECODER_CLASSES[cls.kind] = cls
    return cls


def decoder_class(kind: str) -> type:
    if kind not in _DECODER_CLASSES and kind in DECODER_MODULES:
        importlib.import_module(DECODER_MODULES[kind])
    if kind not in _DECODER_CLASSES:
        raise ValueError(f"unknown decoder kind {kind!r}: known kinds are {sorted(DECODER_MODULES)}")
    return _DECODER_CLASSES[kind]


@dataclass(frozen=True, eq=False)
class Transformer:
    """An L-layer model in weight form. `info` is free-form JSON metadata (e.g. which construction)."""

    W_E: np.ndarray  # [alphabet, d_model]
    W_pos: np.ndarray  # [n_ctx, d_model]
    layers: tuple[Layer, ...]
    decoder: Any  # a Decoder
    mask: str = "causal"
    info: dict[str, Any] = field(default_factory=dict)

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
        """Σ over layers of heads · dim · precision_bits — the quantity the one-layer bound is about."""
        return sum(self.heads_per_layer) * self.d_model * precision_bits
