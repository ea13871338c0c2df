"""Vectorized NumPy forward pass over batches, in any precision mode.

The batch is split into chunks so that one chunk's score tensor [batch pos pos] stays near
`CHUNK_BYTES`; results are concatenated, so callers never see the chunking.
"""

from __future__ import annotations

import numpy as np

from headcount.core.model import Transformer
from headcount.core.precision import FLOAT64, Precision

CHUNK_BYTES = 64 * 2**20


def rows_per_chunk(n: int, width: int = 1) -> int:
    """How many sequences of length n fit one chunk (scores dominate memory: n·n per head)."""
    return max(1, CHUNK_BYTES // (8 * max(1, n) * max(n, width, 1) * 4))


def causal_mask(n: int) -> np.ndarray:
    """[pos pos] True where key j may be attended from query i (j ≤ i)."""
    return np.tri(n, dtype=bool)


def softmax_rows(scores: np.ndarray, prec: Precision) -> np.ndarray:
    """Softmax over the last axis, stable for any finite scores (max subtracted first)."""
    shifted = prec.after_op(scores - scores.max(axis=-1, keepdims=True))
    weights = prec.after_op(np.exp(shifted))
    return prec.after_op(weights / weights.sum(axis=-1, keepdims=True))


def residual_stream(model: Transformer, tokens: np.ndarray, prec: Precision = FLOAT64) -> np.ndarray:
    """Final residual stream x^L [batch pos d_model] of a (checked) token batch, in the mode `prec`."""
    dt = prec.compute_dtype
    w = lambda a: prec.after_op(a.astype(dt))  # noqa: E731 — weights stored in the mode's type
    n = tokens.shape[1]
    x = prec.at_rounding_point(prec.after_op(w(model.W_E)[tokens] + w(model.W_pos)[:n]))  # [batch pos d_model]
    allowed = causal_mask(n) if model.mask == "causal" else np.ones((n, n), dtype=bool)
    for layer in model.layers:
        update = np.zeros_like(x)
        for head in layer.heads:
            q = prec.at_rounding_point(prec.after_op(x @ w(head.W_Q)))  # [batch pos d_head]
            k = prec.at_rounding_point(prec.after_op(x @ w(head.W_K)))  # [batch pos d_head]
            v = prec.at_rounding_point(prec.after_op(x @ w(head.W_V)))  # [batch pos d_value]
            scores = prec.after_op(q @ np.swapaxes(k, -1, -2))  # [batch query key]
            scores = np.where(allowed, scores, -np.inf)
            z = prec.after_op(softmax_rows(scores, prec) @ v)  # [batch pos d_value]
            update = prec.after_op(update + prec.at_rounding_point(prec.after_op(z @ w(head.W_O))))
        x = prec.after_op(x + update)
        if layer.mlp is not None:
            mlp = layer.mlp
            hidden = np.maximum(prec.after_op(x @ w(mlp.W_in) + w(mlp.b_in)), 0)  # [batch pos d_mlp]
            x = prec.after_op(x + prec.at_rounding_point(prec.after_op(hidden @ w(mlp.W_out) + w(mlp.b_out))))
    return x
