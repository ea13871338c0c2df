"""Vectorized NumPy forward pass over batches, in any precision mode.

The batch is split into chunks so that one chunk's score tensor [batch pos pos] stays near
`CHUNK_BYTES`; results are concatenated, so callers never see the chunking.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np
from scipy import special

from headcount.core.precision import FLOAT64, Precision

if TYPE_CHECKING:  # model.py imports bounds.py, which imports this module
    from headcount.core.model import LayerNorm, Transformer

CHUNK_BYTES = 64 * 2**20


def rows_per_chunk(n: int, width: int = 1) -> int:
    """How many sequences of length n fit one chunk (scores dominate memory: n·n per head)."""
    return max(1, CHUNK_BYTES // (8 * max(1, n) * max(n, width, 1) * 4))


@functools.lru_cache(maxsize=16)
def _cached_masks(n: int) -> tuple[np.ndarray, np.ndarray]:
    allowed = np.tri(n, dtype=bool)
    allowed.setflags(write=False)
    bias = np.where(allowed, 0.0, -np.inf)
    bias.setflags(write=False)
    return allowed, bias


EXP_UNDERFLOW = -745.2  # exp(x) rounds to 0 in float64 below this; numpy's exp is slow on such inputs


def exp_shifted(shifted: np.ndarray) -> np.ndarray:
    """exp of max-shifted scores (all ≤ 0), skipping entries whose exp underflows to 0 anyway: the same
    bits as np.exp, several times faster for sharp attention (most entries far below the max)."""
    out = np.zeros_like(shifted)
    np.exp(shifted, out=out, where=shifted > EXP_UNDERFLOW)
    return out


def causal_mask(n: int) -> np.ndarray:
    """[pos pos] True where key j may be attended from query i (j ≤ i). Read-only, cached per n."""
    return _cached_masks(n)[0]


def mask_bias(n: int, mask: str) -> np.ndarray | None:
    """[pos pos] additive score bias: 0 where key j is visible from query i, -inf elsewhere."""
    if mask == "full":
        return None
    return _cached_masks(n)[1]


def attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    bias: np.ndarray | None,
    prec: Precision,
    scale: float = 1.0,
    patterns: list[np.ndarray] | None = None,
) -> np.ndarray:
    """softmax(scale·q kᵀ + bias) v, normalised after the value sum: (Σ_j e^{s_j − max} v_j) / Σ_j e^{s_j −
    max}. In place on the [batch query key] score tensor, which dominates time and memory."""
    scores = prec.after_op(q @ np.swapaxes(k, -1, -2))  # [batch query key]
    if scale != 1.0:  # GPT-2 scales the product, as here: (q kᵀ)·scale
        scores = prec.after_op(scores * scores.dtype.type(scale))
    if bias is not None:
        scores += bias
    scores -= scores.max(axis=-1, keepdims=True)
    scores = prec.after_op(exp_shifted(scores) if scores.dtype == np.float64 else np.exp(scores))
    total = prec.after_op(scores.sum(axis=-1, keepdims=True))  # [batch query 1]
    if patterns is not None:  # the attention weights [batch query key], for analysis only
        patterns.append(scores / total)
    return prec.after_op(prec.after_op(scores @ v) / total)


def layer_norm(x: np.ndarray, ln: LayerNorm, prec: Precision) -> np.ndarray:
    """(x − mean) / √(var + eps) · w + b over the last axis, each operation rounded to the mode's type."""
    dt = x.dtype.type
    r = prec.after_op
    centred = r(x - r(x.mean(axis=-1, keepdims=True)))
    variance = r(r(centred * centred).mean(axis=-1, keepdims=True))
    inverse = r(dt(1) / r(np.sqrt(r(variance + dt(ln.eps)))))
    return r(r(r(centred * inverse) * r(ln.w.astype(dt))) + r(ln.b.astype(dt)))


SQRT_HALF = math.sqrt(0.5)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
GELU_TANH_CUBIC = 0.044715


def activation(h: np.ndarray, kind: str, prec: Precision) -> np.ndarray:
    """The MLP's activation in the mode's type: relu, gelu = x·Φ(x) = ½x·erfc(−x/√2), or GPT-2's
    gelu_tanh = ½x(1 + tanh(√(2/π)(x + 0.044715x³)))."""
    if kind == "relu":
        return np.maximum(h, 0)
    dt = h.dtype.type
    r = prec.after_op
    if kind == "gelu":
        return r(r(h * dt(0.5)) * r(special.erfc(r(h * dt(-SQRT_HALF)))))
    inner = r(dt(SQRT_2_OVER_PI) * r(h + r(dt(GELU_TANH_CUBIC) * r(r(h * h) * h))))
    return r(r(h * dt(0.5)) * r(dt(1) + r(np.tanh(inner))))


def _normed(x: np.ndarray, ln: LayerNorm | None, prec: Precision) -> np.ndarray:
    """LN(x), a rounding point of fixed:p (an input the heads or the MLP read, like the embedding); x itself
    when the layer has no LayerNorm there."""
    return x if ln is None else prec.at_rounding_point(layer_norm(x, ln, prec))


def _project(x: np.ndarray, W: np.ndarray, b: np.ndarray | None, prec: Precision) -> np.ndarray:
    """x W (+ b): a query, key or value vector, a rounding point of fixed:p."""
    dt = prec.compute_dtype
    out = prec.after_op(x @ prec.after_op(W.astype(dt)))
    if b is not None:
        out = prec.after_op(out + prec.after_op(b.astype(dt)))
    return prec.at_rounding_point(out)


def residual_stream(
    model: Transformer,
    tokens: np.ndarray,
    prec: Precision = FLOAT64,
    patterns: list[list[np.ndarray]] | None = None,
) -> np.ndarray:
    """Final residual stream x^L [batch pos d_model] of a (checked) token batch, in the mode `prec` — after
    the final LayerNorm when the model has one (what the decoder reads). `patterns`, when given, receives
    each layer's list of its heads' attention weights [batch query key]."""
    dt = prec.compute_dtype
    w = lambda a: prec.after_op(a.astype(dt))  # noqa: E731 — weights stored in the mode's type
    n = tokens.shape[1]
    x = prec.at_rounding_point(
        prec.after_op(w(model.W_E)[tokens] + w(model.W_pos)[:n])
    )  # [batch pos d_model]
    bias = mask_bias(n, model.mask)
    for layer in model.layers:
        a = _normed(x, layer.ln1, prec)  # [batch pos d_model]
        update = np.zeros_like(x)
        layer_patterns: list[np.ndarray] | None = None if patterns is None else []
        if patterns is not None:
            patterns.append(layer_patterns)
        for head in layer.heads:
            q = _project(a, head.W_Q, head.b_Q, prec)  # [batch pos d_head]
            k = _project(a, head.W_K, head.b_K, prec)  # [batch pos d_head]
            v = _project(a, head.W_V, head.b_V, prec)  # [batch pos d_value]
            z = attend(q, k, v, bias, prec, layer.attn_scale, layer_patterns)  # [batch pos d_value]
            update = prec.after_op(update + prec.at_rounding_point(prec.after_op(z @ w(head.W_O))))
        if layer.b_O is not None:
            update = prec.after_op(update + w(layer.b_O))
        x = prec.after_op(x + update)
        if layer.mlp is not None:
            mlp = layer.mlp
            m = _normed(x, layer.ln2, prec)
            hidden = activation(prec.after_op(m @ w(mlp.W_in) + w(mlp.b_in)), mlp.activation, prec)
            x = prec.after_op(x + prec.at_rounding_point(prec.after_op(hidden @ w(mlp.W_out) + w(mlp.b_out))))
    return _normed(x, model.ln_final, prec)
