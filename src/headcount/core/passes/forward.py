"""Vectorized NumPy forward pass over batches, in any precision mode.

The batch is split into chunks so that one chunk's score tensor [batch pos pos] stays near
`CHUNK_BYTES`; results are concatenated, so callers never see the chunking.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy import special

from headcount.core.attention import attend
from headcount.core.model import MLP, Layer, LayerNorm, Norm, RMSNorm, Rotary, Transformer
from headcount.core.numbers import FLOAT64, Precision, RotaryTable, rotary_table
from headcount.core.passes.rotary import rotary_pairs

CHUNK_BYTES = 64 * 2**20


def rows_per_chunk(n: int, width: int = 1) -> int:
    """How many sequences of length n fit one chunk (scores dominate memory: n·n per head)."""
    return max(1, CHUNK_BYTES // (8 * max(1, n) * max(n, width, 1) * 4))


def layer_norm(x: np.ndarray, ln: LayerNorm, prec: Precision) -> np.ndarray:
    """(x − mean) / √(var + eps) · w + b over the last axis, each operation rounded to the mode's
    type."""
    dt = x.dtype.type
    r = prec.after_op
    centred = r(x - r(x.mean(axis=-1, keepdims=True)))
    variance = r(r(centred * centred).mean(axis=-1, keepdims=True))
    inverse = r(dt(1) / r(np.sqrt(r(variance + dt(ln.eps)))))
    return r(r(r(centred * inverse) * r(ln.w.astype(dt))) + r(ln.b.astype(dt)))


def rms_norm(x: np.ndarray, ln: RMSNorm, prec: Precision) -> np.ndarray:
    """x / √(mean x² + eps) · (offset + w) over the last axis, each operation rounded to the mode's
    type."""
    dt = x.dtype.type
    r = prec.after_op
    mean_square = r(r(x * x).mean(axis=-1, keepdims=True))
    inverse = r(dt(1) / r(np.sqrt(r(mean_square + dt(ln.eps)))))
    w = r(ln.w.astype(dt)) if ln.offset == 0 else r(dt(ln.offset) + r(ln.w.astype(dt)))
    return r(r(x * inverse) * w)


SQRT_HALF = math.sqrt(0.5)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
GELU_TANH_CUBIC = 0.044715


def activation(h: np.ndarray, kind: str, prec: Precision) -> np.ndarray:
    """The MLP's activation in the mode's type: relu, gelu = x·Φ(x) = ½x·erfc(−x/√2), GPT-2's
    gelu_tanh = ½x(1 + tanh(√(2/π)(x + 0.044715x³))), or silu = x·σ(x) = x / (1 + e^−x)."""
    if kind == "relu":
        return np.maximum(h, 0)
    dt = h.dtype.type
    r = prec.after_op
    if kind == "silu":
        with np.errstate(over="ignore"):  # e^−x = inf below −709: x / inf is the right −0
            return r(h / r(dt(1) + r(np.exp(-h))))
    if kind == "gelu":
        return r(r(h * dt(0.5)) * r(special.erfc(r(h * dt(-SQRT_HALF)))))
    inner = r(dt(SQRT_2_OVER_PI) * r(h + r(dt(GELU_TANH_CUBIC) * r(r(h * h) * h))))
    return r(r(h * dt(0.5)) * r(dt(1) + r(np.tanh(inner))))


def normed(x: np.ndarray, ln: Norm | None, prec: Precision) -> np.ndarray:
    """LN(x) or RMSNorm(x), a rounding point of fixed:p (an input the heads or the MLP read, like
    the embedding); x itself when the layer has no normalisation there."""
    if ln is None:
        return x
    out = rms_norm(x, ln, prec) if isinstance(ln, RMSNorm) else layer_norm(x, ln, prec)
    return prec.at_rounding_point(out)


def position_rows(positions) -> np.ndarray:
    """The positions of the rows (axis −2) of a pass, as embed takes them (a slice 0..n−1, or one
    position i for every row): an int array [n], or a 0-d array."""
    if isinstance(positions, slice):
        return np.arange(positions.start or 0, positions.stop)
    return np.asarray(positions)


def table_for(rotary: Rotary, positions: np.ndarray) -> RotaryTable:
    """The rotary table covering `positions`: n a power of two, so a few tables serve every length
    (core.numbers.rotary_table caches them)."""
    needed = int(positions.max(initial=0)) + 1
    return rotary_table(rotary.theta, rotary.dims, 1 << max(0, needed - 1).bit_length())


def rotate(q: np.ndarray, rotary: Rotary, positions: np.ndarray, prec: Precision) -> np.ndarray:
    """q [.. rows d_head] rotated at its rows' positions (core.model.Rotary), each product and sum
    rounded to the mode's type; cos and sin are the Arb-evaluated table's midpoints, the same
    numbers the bound passes enclose."""
    table = table_for(rotary, positions)
    first, second = rotary_pairs(rotary.dims, rotary.layout)
    dt, r = q.dtype.type, prec.after_op
    c, s = (r(t.mid[positions].astype(dt)) for t in (table.cos, table.sin))  # [rows half]
    a, b = q[..., first], q[..., second]
    out = q.copy()
    out[..., first] = r(r(a * c) - r(b * s))
    out[..., second] = r(r(b * c) + r(a * s))
    return out


def _project(
    x: np.ndarray,
    W: np.ndarray,
    b: np.ndarray | None,
    prec: Precision,
    rotation: tuple[Rotary, np.ndarray] | None = None,
) -> np.ndarray:
    """x W (+ b), rotated when `rotation` (the layer's Rotary, the rows' positions) is given: a
    query, key or value vector, a rounding point of fixed:p."""
    dt = prec.compute_dtype
    out = prec.after_op(x @ prec.after_op(W.astype(dt)))
    if b is not None:
        out = prec.after_op(out + prec.after_op(b.astype(dt)))
    if rotation is not None:
        out = rotate(out, *rotation, prec)
    return prec.at_rounding_point(out)


def mlp_output(m: np.ndarray, mlp: MLP, prec: Precision) -> np.ndarray:
    """The MLP's output on its normalised input m, a rounding point of fixed:p: act(m W_in + b_in)
    W_out + b_out, or with a gate act(m W_gate + b_gate) · (m W_in + b_in) before W_out."""
    w = lambda a: prec.after_op(a.astype(prec.compute_dtype))  # noqa: E731
    hidden = prec.after_op(m @ w(mlp.W_in) + w(mlp.b_in))
    if mlp.W_gate is None:
        hidden = activation(hidden, mlp.activation, prec)
    else:
        gate = prec.after_op(m @ w(mlp.W_gate))
        if mlp.b_gate is not None:
            gate = prec.after_op(gate + w(mlp.b_gate))
        gate = activation(gate, mlp.activation, prec)
        hidden = prec.after_op(gate * hidden)
    return prec.at_rounding_point(prec.after_op(hidden @ w(mlp.W_out) + w(mlp.b_out)))


def embed(model: Transformer, tokens: np.ndarray, positions, prec: Precision) -> np.ndarray:
    """The rounded embedding W_E[σ_i] + W_pos[i] of `tokens` at `positions` (anything that indexes
    W_pos's rows and broadcasts against the tokens: a slice 0..n−1 for whole rows, one i for a trie
    level)."""
    dt = prec.compute_dtype
    w = lambda a: prec.after_op(a.astype(dt))  # noqa: E731 — weights stored in the mode's type
    if model.positions == "qk":  # shortformer: positions enter q and k only (run_layers)
        return prec.at_rounding_point(w(model.W_E[tokens]))
    return prec.at_rounding_point(prec.after_op(w(model.W_E[tokens]) + w(model.W_pos[positions])))


# one head's attention z [.. d_value] from (layer index, head index, layer, q, k, v) of the rows
# run_layers evaluates: attend over the rows themselves (residual_stream), or over stored keys
# (core.passes.prefix)
HeadAttention = Callable[[int, int, "Layer", np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def run_layers(
    model: Transformer,
    x: np.ndarray,
    prec: Precision,
    attention: HeadAttention,
    positions=None,
) -> np.ndarray:
    """The model's layers on the embedded residual x [.. rows d_model] in the mode `prec` (before
    ln_final): per head q, k (rotated at the rows' `positions`, as embed takes them; default
    0..rows−1), v (rounding points), z = attention(...), the rounded head output z W_O; b_O once on
    the heads' sum; the MLP, on the heads' output or, in a parallel layer, beside them."""
    dt = prec.compute_dtype
    w = lambda a: prec.after_op(a.astype(dt))  # noqa: E731 — weights stored in the mode's type
    rows = position_rows(slice(0, x.shape[-2]) if positions is None else positions)
    pos = w(model.W_pos[rows]) if model.positions == "qk" else None  # shortformer: q, k inputs
    for index, layer in enumerate(model.layers):
        a = normed(x, layer.ln1, prec)  # [.. d_model]
        qk_in = a if pos is None else prec.after_op(a + pos)
        rotation = None if layer.rotary is None else (layer.rotary, rows)
        update = np.zeros_like(x)
        for h, head in enumerate(layer.heads):
            q = _project(qk_in, head.W_Q, head.b_Q, prec, rotation)  # [.. d_head]
            k = _project(qk_in, head.W_K, head.b_K, prec, rotation)  # [.. d_head]
            v = _project(a, head.W_V, head.b_V, prec)  # [.. d_value]
            z = attention(index, h, layer, q, k, v)  # [.. d_value]
            update = prec.after_op(update + prec.at_rounding_point(prec.after_op(z @ w(head.W_O))))
        if layer.b_O is not None:
            update = prec.after_op(update + w(layer.b_O))
        if layer.parallel and layer.mlp is not None:
            update = prec.after_op(update + mlp_output(normed(x, layer.ln2, prec), layer.mlp, prec))
            x = prec.after_op(x + update)
            continue
        x = prec.after_op(x + update)
        if layer.mlp is not None:
            x = prec.after_op(x + mlp_output(normed(x, layer.ln2, prec), layer.mlp, prec))
    return x


def residual_stream(
    model: Transformer,
    tokens: np.ndarray,
    prec: Precision = FLOAT64,
    patterns: list[list[np.ndarray]] | None = None,
) -> np.ndarray:
    """Final residual stream x^L [batch pos d_model] of a (checked) token batch, in the mode `prec`
    — after the final LayerNorm when the model has one (what the decoder reads). `patterns`, when
    given, receives each layer's list of its heads' attention weights [batch query key]."""
    per_layer: list[list[np.ndarray]] | None = None
    if patterns is not None:
        per_layer = [[] for _ in model.layers]
        patterns.extend(per_layer)

    def attention(index: int, h: int, layer: Layer, q, k, v) -> np.ndarray:
        kept = None if per_layer is None else per_layer[index]
        return attend(q, k, v, model.mask, prec, layer.attn_scale, kept)  # [batch pos d_value]

    x = embed(model, tokens, slice(0, tokens.shape[1]), prec)  # [batch pos d_model]
    return normed(run_layers(model, x, prec, attention), model.ln_final, prec)
