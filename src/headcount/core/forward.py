"""Vectorized NumPy forward pass over batches, in any precision mode.

The batch is split into chunks so that one chunk's score tensor [batch pos pos] stays near
`CHUNK_BYTES`; results are concatenated, so callers never see the chunking.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from headcount.core.precision import FLOAT64, Precision

if TYPE_CHECKING:  # model.py imports bounds.py, which imports this module
    from headcount.core.model import Transformer

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
    q: np.ndarray, k: np.ndarray, v: np.ndarray, bias: np.ndarray | None, prec: Precision
) -> np.ndarray:
    """softmax(q kᵀ + bias) v, normalised after the value sum: (Σ_j e^{s_j − max} v_j) / Σ_j e^{s_j − max}.
    In place on the [batch query key] score tensor, which dominates time and memory."""
    scores = prec.after_op(q @ np.swapaxes(k, -1, -2))  # [batch query key]
    if bias is not None:
        scores += bias
    scores -= scores.max(axis=-1, keepdims=True)
    scores = prec.after_op(exp_shifted(scores) if scores.dtype == np.float64 else np.exp(scores))
    total = prec.after_op(scores.sum(axis=-1, keepdims=True))  # [batch query 1]
    return prec.after_op(prec.after_op(scores @ v) / total)


def residual_stream(model: Transformer, tokens: np.ndarray, prec: Precision = FLOAT64) -> np.ndarray:
    """Final residual stream x^L [batch pos d_model] of a (checked) token batch, in the mode `prec`."""
    dt = prec.compute_dtype
    w = lambda a: prec.after_op(a.astype(dt))  # noqa: E731 — weights stored in the mode's type
    n = tokens.shape[1]
    x = prec.at_rounding_point(
        prec.after_op(w(model.W_E)[tokens] + w(model.W_pos)[:n])
    )  # [batch pos d_model]
    bias = mask_bias(n, model.mask)
    for layer in model.layers:
        update = np.zeros_like(x)
        for head in layer.heads:
            q = prec.at_rounding_point(prec.after_op(x @ w(head.W_Q)))  # [batch pos d_head]
            k = prec.at_rounding_point(prec.after_op(x @ w(head.W_K)))  # [batch pos d_head]
            v = prec.at_rounding_point(prec.after_op(x @ w(head.W_V)))  # [batch pos d_value]
            z = attend(q, k, v, bias, prec)  # [batch pos d_value]
            update = prec.after_op(update + prec.at_rounding_point(prec.after_op(z @ w(head.W_O))))
        x = prec.after_op(x + update)
        if layer.mlp is not None:
            mlp = layer.mlp
            hidden = np.maximum(prec.after_op(x @ w(mlp.W_in) + w(mlp.b_in)), 0)  # [batch pos d_mlp]
            x = prec.after_op(x + prec.at_rounding_point(prec.after_op(hidden @ w(mlp.W_out) + w(mlp.b_out))))
    return x
