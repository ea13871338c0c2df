"""The parts of the weight form (core.model.transformer's docstring states the model): LayerNorm,
RMSNorm, Rotary, AttentionHead, MLP, Layer, the decoder protocol ψ_out with its linear kind and the
registry of decoder kinds. Weight names and shapes follow TransformerLens.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

import numpy as np

from headcount.core.model.symbols import BOTTOM
from headcount.core.numbers import affine_bounds, outward

MASKS = ("causal", "full")
ACTIVATIONS = (
    "relu",
    "gelu",
    "gelu_tanh",
    "silu",
)  # gelu: x·Φ(x) (exact erf); gelu_tanh: GPT-2's "gelu_new"; silu: x·σ(x) (Llama's gate)
ROTARY_LAYOUTS = ("rotate_half", "interleaved")
POSITIONS = ("residual", "qk")  # where W_pos enters (core.model.Transformer.positions)


def float64_array(a: Any) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(a, dtype=np.float64))


def float64_or_none(a: Any) -> np.ndarray | None:
    return None if a is None else float64_array(a)


def check_vector(name: str, a: np.ndarray | None, size: int) -> None:
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
        object.__setattr__(self, "w", float64_array(self.w))
        object.__setattr__(self, "b", float64_array(self.b))
        object.__setattr__(self, "eps", float(self.eps))
        if self.w.ndim != 1 or self.b.shape != self.w.shape:
            raise ValueError(
                f"LayerNorm w {self.w.shape} and b {self.b.shape} must be one [d_model] shape"
            )
        if not (math.isfinite(self.eps) and self.eps > 0):
            raise ValueError(f"LayerNorm eps must be a positive finite number, got {self.eps!r}")


@dataclass(frozen=True, eq=False)
class RMSNorm:
    """x / √(mean x² + eps) · (offset + w) over d_model (Llama, Qwen2, Mistral; Gemma's offset is
    1). A norm without a weight has w = 1, which multiplies exactly."""

    w: np.ndarray  # [d_model]
    eps: float = 1e-6
    offset: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "w", float64_array(self.w))
        object.__setattr__(self, "eps", float(self.eps))
        object.__setattr__(self, "offset", float(self.offset))
        if self.w.ndim != 1:
            raise ValueError(f"RMSNorm w {self.w.shape} must be one [d_model] vector")
        if not (math.isfinite(self.eps) and self.eps > 0):
            raise ValueError(f"RMSNorm eps must be a positive finite number, got {self.eps!r}")
        if self.offset not in (0.0, 1.0):
            raise ValueError(f"RMSNorm offset must be 0 or 1 (Gemma), got {self.offset!r}")


Norm = LayerNorm | RMSNorm


@dataclass(frozen=True)
class Rotary:
    """Rotary positions (RoFormer; GPT-NeoX, Llama): after projection, the first `dims` entries of
    each query and key head are rotated in pairs by the angle p·θ^(−2i/dims) of their position p
    (0..n−1) and frequency i < dims/2. layout "rotate_half" pairs entry i with i + dims/2 (NeoX,
    Llama), "interleaved" pairs 2i with 2i + 1 (GPT-J); entries past dims pass unchanged."""

    theta: float
    dims: int
    layout: str = "rotate_half"

    def __post_init__(self) -> None:
        object.__setattr__(self, "theta", float(self.theta))
        if not (math.isfinite(self.theta) and self.theta > 0):
            raise ValueError(f"rotary theta must be a positive finite number, got {self.theta!r}")
        if isinstance(self.dims, bool) or not isinstance(self.dims, int) or self.dims < 2:
            raise ValueError(f"rotary dims must be an even integer ≥ 2, got {self.dims!r}")
        if self.dims % 2:
            raise ValueError(f"rotary dims must be even, got {self.dims}")
        if self.layout not in ROTARY_LAYOUTS:
            raise ValueError(f"unknown rotary layout {self.layout!r}: use one of {ROTARY_LAYOUTS}")

    def config(self) -> dict[str, Any]:
        return {"theta": self.theta, "dims": self.dims, "layout": self.layout}


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
            object.__setattr__(self, name, float64_array(getattr(self, name)))
        for name in ("b_Q", "b_K", "b_V"):
            object.__setattr__(self, name, float64_or_none(getattr(self, name)))
        d_model = self.W_Q.shape[0]
        if self.W_Q.shape != self.W_K.shape:
            raise ValueError(
                f"W_Q {self.W_Q.shape} and W_K {self.W_K.shape} must have the same shape"
            )
        if self.W_V.shape[0] != d_model or self.W_O.shape != (self.W_V.shape[1], d_model):
            raise ValueError(
                f"W_V {self.W_V.shape} / W_O {self.W_O.shape} do not fit d_model={d_model}"
            )
        check_vector("b_Q", self.b_Q, self.W_Q.shape[1])
        check_vector("b_K", self.b_K, self.W_K.shape[1])
        check_vector("b_V", self.b_V, self.W_V.shape[1])

    @property
    def has_bias(self) -> bool:
        return any(b is not None for b in (self.b_Q, self.b_K, self.b_V))


@dataclass(frozen=True, eq=False)
class MLP:
    """MLP on the residual: x += act(LN2(x) W_in + b_in) W_out + b_out, act one of ACTIVATIONS.
    Gated (W_gate given; SwiGLU, GeGLU): x += (act(LN2(x) W_gate + b_gate) · (LN2(x) W_in + b_in))
    W_out + b_out, the product entrywise (TransformerLens's GatedMLP, which has no b_gate)."""

    W_in: np.ndarray  # [d_model, d_mlp]
    b_in: np.ndarray  # [d_mlp]
    W_out: np.ndarray  # [d_mlp, d_model]
    b_out: np.ndarray  # [d_model]
    activation: str = "relu"
    W_gate: np.ndarray | None = None  # [d_model, d_mlp]
    b_gate: np.ndarray | None = None  # [d_mlp] (only with W_gate)

    def __post_init__(self) -> None:
        for name in ("W_in", "b_in", "W_out", "b_out"):
            object.__setattr__(self, name, float64_array(getattr(self, name)))
        object.__setattr__(self, "W_gate", float64_or_none(self.W_gate))
        object.__setattr__(self, "b_gate", float64_or_none(self.b_gate))
        if self.b_gate is not None and self.W_gate is None:
            raise ValueError("b_gate belongs to a gated MLP: W_gate is missing")
        if self.W_gate is not None and self.W_gate.shape != self.W_in.shape:
            raise ValueError(f"W_gate {self.W_gate.shape} must have W_in's shape {self.W_in.shape}")
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}: use one of {ACTIVATIONS}")
        d_model, d_mlp = self.W_in.shape
        if self.W_out.shape != (d_mlp, d_model):
            raise ValueError(f"W_out {self.W_out.shape} does not fit W_in {self.W_in.shape}")
        check_vector("b_in", self.b_in, d_mlp)
        check_vector("b_out", self.b_out, d_model)
        check_vector("b_gate", self.b_gate, d_mlp)


@dataclass(frozen=True, eq=False)
class Layer:
    """One block: x += Σ heads(LN1(x)) + b_O, then x += MLP(LN2(x)); parallel (GPT-NeoX): x +=
    Σ heads(LN1(x)) + b_O + MLP(LN2(x)), both read the same x. Scores are multiplied by
    attn_scale; with `rotary`, each head's q and k are rotated after projection."""

    heads: tuple[AttentionHead, ...]
    mlp: MLP | None = None
    ln1: Norm | None = None  # before the heads
    ln2: Norm | None = None  # before the MLP
    b_O: np.ndarray | None = None  # [d_model], added once to the heads' sum
    attn_scale: float = 1.0
    rotary: Rotary | None = None
    parallel: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", tuple(self.heads))
        if self.rotary is not None:
            for head in self.heads:
                if head.W_Q.shape[1] < self.rotary.dims:
                    raise ValueError(
                        f"rotary dims {self.rotary.dims} exceed a head's d_head {head.W_Q.shape[1]}"
                    )
        if not isinstance(self.parallel, bool):
            raise ValueError(f"parallel must be true or false, got {self.parallel!r}")
        object.__setattr__(self, "b_O", float64_or_none(self.b_O))
        object.__setattr__(self, "attn_scale", float(self.attn_scale))
        if not math.isfinite(self.attn_scale):
            raise ValueError(f"attn_scale must be finite, got {self.attn_scale!r}")
        if self.ln2 is not None and self.mlp is None:
            raise ValueError("ln2 normalises the MLP's input: a layer without an MLP has none")

    def extensions(self) -> set[str]:
        """The GPT-2 parts this layer uses (empty for the seed's plain layer)."""
        out = {norm_extension(ln) for ln in (self.ln1, self.ln2) if ln is not None}
        if self.b_O is not None or any(h.has_bias for h in self.heads):
            out.add("attention biases")
        if self.attn_scale != 1.0:
            out.add("attention scale")
        if self.mlp is not None and self.mlp.activation != "relu":
            out.add("silu" if self.mlp.activation == "silu" else "gelu")
        if self.mlp is not None and self.mlp.W_gate is not None:
            out.add("gated mlp")
        if self.rotary is not None:
            out.add("rotary")
        if self.parallel:
            out.add("parallel")
        return out


def norm_extension(ln: Norm) -> str:
    """The extension name of a normalisation part."""
    return "rmsnorm" if isinstance(ln, RMSNorm) else "layernorm"


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


LOGIT_ROWS = 512  # positions per block of logits: a [rows classes] block stays in cache


def in_row_blocks(fn, *arrays: np.ndarray, rows: int | None = None) -> tuple[np.ndarray, ...]:
    """fn applied to blocks of `rows` (default LOGIT_ROWS) positions of arrays [.. d] (one shape),
    its outputs [..] joined: a decoder's [positions classes] logits (with their radius and
    endpoints) are made one block at a time, so a large vocabulary over a long sequence is never
    materialized and each elementwise pass runs in cache. fn's answer for a row must hold whichever
    rows share its block (a bound may be tighter on some blocks: affine_bounds's exact case)."""
    rows = rows or LOGIT_ROWS
    lead, d = arrays[0].shape[:-1], arrays[0].shape[-1]
    flat = [a.reshape(-1, d) for a in arrays]
    blocks = [fn(*(a[i : i + rows] for a in flat)) for i in range(0, max(len(flat[0]), 1), rows)]
    return tuple(np.concatenate(out).reshape(lead) for out in zip(*blocks, strict=True))


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
        object.__setattr__(self, "W_U", float64_array(self.W_U))
        object.__setattr__(self, "b_U", float64_array(self.b_U))

    @property
    def alphabet(self) -> int:
        return self.W_U.shape[1] - 1

    def _classes_to_tokens(self, cls: np.ndarray) -> np.ndarray:
        return np.where(cls == self.alphabet, BOTTOM, cls).astype(np.int64)

    def decode(self, x: np.ndarray) -> np.ndarray:
        W_U, b_U = self.W_U.astype(x.dtype), self.b_U.astype(x.dtype)
        (cls,) = in_row_blocks(lambda y: (np.argmax(y @ W_U + b_U, axis=-1),), x)
        return self._classes_to_tokens(cls)

    def decode_bounds(self, mid: np.ndarray, rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        cls, decided = in_row_blocks(
            lambda m, r: argmax_bounds(*affine_bounds(m, r, self.W_U, self.b_U)), mid, rad
        )
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
