"""Vectorized NumPy forward pass over batches, in any precision mode.

The batch is split into chunks so that one chunk's score tensor [batch pos pos] stays near
`CHUNK_BYTES`; results are concatenated, so callers never see the chunking.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from importlib import import_module
from typing import TYPE_CHECKING

import numpy as np
from scipy import special

from headcount.core.algorithm import current_algorithm, current_backend
from headcount.core.counters import FLOAT
from headcount.core.precision import FLOAT64, Precision

if TYPE_CHECKING:  # model.py imports bounds.py, which imports this module
    from headcount.core.model import Layer, LayerNorm, Transformer

CHUNK_BYTES = 64 * 2**20


def rows_per_chunk(n: int, width: int = 1) -> int:
    """How many sequences of length n fit one chunk (scores dominate memory: n·n per head)."""
    return max(1, CHUNK_BYTES // (8 * max(1, n) * max(n, width, 1) * 4))


@functools.lru_cache(maxsize=16)
def _cached_masks(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(allowed, bias, hidden) [pos pos]: the causal mask, its additive bias, and its complement."""
    allowed = np.tri(n, dtype=bool)
    bias = np.where(allowed, 0.0, -np.inf)
    hidden = ~allowed
    for a in (allowed, bias, hidden):
        a.setflags(write=False)
    return allowed, bias, hidden


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


ATTENTION_BLOCK = 256  # queries per block: a block's [batch block keys] scores stay in cache


def query_blocks(
    n: int, causal: bool, block: int = ATTENTION_BLOCK, keys: int | None = None
) -> Iterator[tuple[int, int, int]]:
    """(start, stop, keys) of each block of n queries: queries start..stop−1 see keys 0..keys−1 (the causal
    mask hides every later key, so those scores are never computed; without a mask every query sees all
    `keys`, n by default)."""
    for start in range(0, n, block):
        stop = min(n, start + block)
        yield start, stop, stop if causal else (n if keys is None else keys)


def mask_diagonal(scores: np.ndarray, start: int, stop: int) -> None:
    """Set the masked entries of a causal query block's scores [.. block keys] to −inf (only the square
    of keys start..stop−1 holds any: earlier keys are all visible, later ones are not in the block)."""
    np.copyto(scores[..., start:stop], -np.inf, where=_cached_masks(stop - start)[2])


def attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: str | None,
    prec: Precision,
    scale: float = 1.0,
    patterns: list[np.ndarray] | None = None,
) -> np.ndarray:
    """softmax(scale·q kᵀ) v with the `mask` ("causal"; "full" or None: every query sees every key),
    normalised after the value sum: (Σ_j e^{s_j − max} v_j) / Σ_j e^{s_j − max}, in query blocks
    (query_blocks; masked keys never computed, no [query key] mask ever built). Every exponential has the
    bits of dense_attend; the sums run over the keys of non-negligible weight (_sparse_softmax_values) or
    the block's keys instead of all n, so a sum may differ from dense_attend's in its last bits
    (tests/core/test_blocked.py measures it)."""
    n = q.shape[-2]
    causal = mask == "causal"
    if patterns is not None or current_algorithm() == "reference" or n <= ATTENTION_BLOCK:
        return dense_attend(q, k, v, mask, prec, scale, patterns)
    if current_backend()[0] == "torch":  # by name: torch_attention imports this module
        return import_module("headcount.core.torch_attention").torch_attend(q, k, v, mask, prec, scale)
    kT = np.swapaxes(k, -1, -2)
    out = np.empty(q.shape[:-1] + v.shape[-1:], dtype=np.result_type(q, v))  # [batch query d_value]
    v_max = None
    if v.dtype == np.float64 and v.ndim == 3:  # max_j |v_j| over keys 0..j, per batch [batch key d_value]
        v_max = np.maximum.accumulate(np.abs(v), axis=-2)
    for start, stop, keys in query_blocks(n, causal, keys=k.shape[-2]):
        scores = prec.after_op(q[..., start:stop, :] @ kT[..., :keys])  # [batch block keys]
        if scale != 1.0:
            scores = prec.after_op(scores * scores.dtype.type(scale))
        if causal:
            mask_diagonal(scores, start, stop)
        sparse = None
        if scores.ndim == 3 and v_max is not None:
            sparse = _sparse_softmax_values(scores, v, v_max[:, keys - 1])
        if sparse is None:
            sparse = softmax_values(scores, v[..., :keys, :], prec)
        out[..., start:stop, :] = sparse
    return out


SPARSE_SHARE = 0.6  # a block where more of the keys than this are kept is evaluated densely
NEGLIGIBLE_BITS = 72  # the keys left out of a sparse float sum weigh < 2^-72 of its top key, all together
# ... and a row keeps them out only where they move no output coordinate by more than this share of the
# coordinate's kept mass Σ_kept w_j|v_jc| (2^-10 of the unit roundoff: far inside the rounding error any
# float64 evaluation of the sum may make)
LEFT_OUT_SHARE = 2.0**-63


def negligible_cut(keys: int) -> float:
    """c such that the keys with s ≥ max + c are a superset of those whose weight e^{s − max} exceeds
    2^-NEGLIGIBLE_BITS / keys (and never below exp's underflow), for |max| < 2^40 (where the threshold's
    rounding is ≪ 1)."""
    return max(EXP_UNDERFLOW, -NEGLIGIBLE_BITS * math.log(2) - math.log(keys)) - 1


def _bincount_columns(row: np.ndarray, values: np.ndarray, rows: int) -> np.ndarray:
    """Σ of values [entries d] per row index [entries] -> [rows d]."""
    return np.stack(
        [np.bincount(row, weights=values[:, c], minlength=rows) for c in range(values.shape[1])], -1
    )


def _sparse_softmax_values(scores: np.ndarray, v: np.ndarray, v_max: np.ndarray) -> np.ndarray | None:
    """softmax_values in float64 over the keys whose weight e^{s − max} exceeds 2^-NEGLIGIBLE_BITS / keys
    (each such weight has dense_attend's bits; the sums add them in another order), or None when more than
    SPARSE_SHARE of the block's keys are kept (then the dense pass is as fast) or a value is not finite (the
    dense pass's inf·0 = NaN is float64's answer there). v_max [batch d_value]: max_j |v_jc| over the
    block's keys.

    The keys left out weigh at most 2^-NEGLIGIBLE_BITS of the top key's weight 1 ≤ the total together, so
    they move coordinate c of a row by at most 2^-NEGLIGIBLE_BITS·v_max_c. A row keeps them out only where
    that is at most LEFT_OUT_SHARE of the coordinate's kept mass Σ_kept w_j|v_jc| in every coordinate: then
    its result stays within the error bound of a float64 evaluation of the whole sum (γ·Σ_j w_j|v_jc|).
    Elsewhere (a huge value under a tiny weight, a coordinate the kept keys leave at 0) the row's left-out
    keys whose exponential does not underflow are added back: that row is the dense pass's sum, in another
    order. (Kept terms that cancel need nothing: the float sum's own error is on the scale of Σ w|v|.)"""
    batch, block, keys = scores.shape
    top = scores.max(axis=-1, keepdims=True)  # [batch block 1]
    if not (np.abs(top).max() < 2.0**40 and np.isfinite(v_max).all()):  # NaN fails too
        return None
    cut = negligible_cut(keys)  # (|max| < 2^40 keeps the threshold's rounding ≪ 1)
    flat = np.flatnonzero(scores >= top + cut)
    if len(flat) > SPARSE_SHARE * scores.size:
        return None
    rows = batch * block
    row, key = np.divmod(flat, keys)
    weights = exp_shifted(scores.reshape(-1)[flat] - top.reshape(-1)[row])
    total = np.bincount(row, weights=weights, minlength=rows)  # [row]
    key += (row // block) * v.shape[-2]  # the key's row in v flattened over the batch
    values = np.take(v.reshape(-1, v.shape[-1]), key, axis=0) * weights[:, None]  # [kept d_value]
    summed = _bincount_columns(row, values, rows)  # [row d_value]
    kept_mass = _bincount_columns(row, np.abs(values, out=values), rows)
    left_out = np.repeat(v_max * 2.0**-NEGLIGIBLE_BITS, block, axis=0)  # [row d_value]: their bound
    redo = np.flatnonzero((left_out > LEFT_OUT_SHARE * kept_mass).any(axis=-1))
    if len(redo):  # add back the left-out keys of weight above underflow, on those rows only
        shifted = scores.reshape(rows, keys)[redo] - top.reshape(rows, 1)[redo]  # [redo keys]
        back = np.flatnonzero((shifted > EXP_UNDERFLOW) & (shifted < cut))
        r, k = np.divmod(back, keys)
        w = exp_shifted(shifted.reshape(-1)[back])
        k += (redo[r] // block) * v.shape[-2]
        total[redo] += np.bincount(r, weights=w, minlength=len(redo))
        summed[redo] += _bincount_columns(
            r, np.take(v.reshape(-1, v.shape[-1]), k, axis=0) * w[:, None], len(redo)
        )
    _count_float(rows=rows, rows_redone=len(redo))
    return (summed / total[:, None]).reshape(batch, block, v.shape[-1])


def float_work() -> dict[str, int]:
    """Counts since the process started (or reset_float_work) of the sparse float pass: `rows` the query
    rows it summed sparsely, `rows_redone` those whose left-out keys it added back (the cut was not
    negligible against their output) (core.counters)."""
    return FLOAT.snapshot()


def reset_float_work() -> None:
    FLOAT.reset()


_count_float = FLOAT.add


def softmax_values(
    scores: np.ndarray, v: np.ndarray, prec: Precision, patterns: list[np.ndarray] | None = None
) -> np.ndarray:
    """(Σ_j e^{s_j − max} v_j) / Σ_j e^{s_j − max} over the last axis of `scores` (consumed, in place);
    the weights themselves are appended to `patterns` when given (for analysis only). A key the mask hides
    (score −inf) is absent from the sum, also where its value is ±inf or NaN (a matrix product would make
    its weight 0 times that value a NaN: a later token would change an earlier position's output); a visible
    key whose weight underflows to 0 is present, as float64 has it (0 · inf = NaN)."""
    hidden = None if np.isfinite(v).all() else np.isneginf(scores)  # [.. query key], only where it matters
    scores -= scores.max(axis=-1, keepdims=True)
    scores = prec.after_op(exp_shifted(scores) if scores.dtype == np.float64 else np.exp(scores))
    total = prec.after_op(scores.sum(axis=-1, keepdims=True))  # [batch query 1]
    if patterns is not None:
        patterns.append(scores / total)
    summed = scores @ v if hidden is None else _visible_sum(scores, v, hidden)
    return prec.after_op(prec.after_op(summed) / total)


def _visible_sum(weights: np.ndarray, v: np.ndarray, hidden: np.ndarray) -> np.ndarray:
    """Σ_j w_j v_j over the keys not `hidden` [.. query key], for values v [.. key d] with ±inf or NaN
    entries, as float64 adds them up: the finite part by one product; then a coordinate is NaN where a
    visible key brings a NaN, or an infinity under a weight 0 (0 · inf), or infinities of both signs, else
    ±inf where a visible key of positive weight brings one (by products of indicator matrices: no loop)."""
    finite = np.isfinite(v)
    summed = weights @ np.where(finite, v, 0)
    seen = ~hidden
    positive = (seen & (weights > 0)).astype(v.dtype)  # a NaN weight is not positive: it is in `summed`
    zero = (seen & ~(weights > 0)).astype(v.dtype)
    up, down = (v == np.inf).astype(v.dtype), (v == -np.inf).astype(v.dtype)
    to_up, to_down = positive @ up > 0, positive @ down > 0
    to_nan = (seen.astype(v.dtype) @ np.isnan(v).astype(v.dtype) > 0) | (zero @ (up + down) > 0)
    extra = np.where(to_up, np.inf, np.where(to_down, -np.inf, 0.0))
    return summed + np.where(to_nan | (to_up & to_down), np.nan, extra).astype(summed.dtype)


def dense_attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: str | None,
    prec: Precision,
    scale: float = 1.0,
    patterns: list[np.ndarray] | None = None,
) -> np.ndarray:
    """attend over the whole [batch query key] score tensor, the masked half included (the reference
    algorithm, core.algorithm; also what `patterns`, the attention weights for analysis, need). A masked
    score is replaced by −inf, not added to: an infinite score plus −inf would be a NaN that reaches every
    earlier query."""
    scores = prec.after_op(q @ np.swapaxes(k, -1, -2))  # [batch query key]
    if scale != 1.0:  # GPT-2 scales the product, as here: (q kᵀ)·scale
        scores = prec.after_op(scores * scores.dtype.type(scale))
    if mask == "causal":
        np.copyto(scores, -np.inf, where=_cached_masks(q.shape[-2])[2])
    return softmax_values(scores, v, prec, patterns)


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


def embed(model: Transformer, tokens: np.ndarray, positions, prec: Precision) -> np.ndarray:
    """The rounded embedding W_E[σ_i] + W_pos[i] of `tokens` at `positions` (anything that indexes W_pos's
    rows and broadcasts against the tokens: a slice 0..n−1 for whole rows, one i for a trie level)."""
    dt = prec.compute_dtype
    w = lambda a: prec.after_op(a.astype(dt))  # noqa: E731 — weights stored in the mode's type
    return prec.at_rounding_point(prec.after_op(w(model.W_E[tokens]) + w(model.W_pos[positions])))


# one head's attention z [.. d_value] from (layer index, head index, layer, q, k, v) of the rows run_layers
# evaluates: attend over the rows themselves (residual_stream), or over stored keys (core.prefix)
HeadAttention = Callable[[int, int, "Layer", np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def run_layers(model: Transformer, x: np.ndarray, prec: Precision, attention: HeadAttention) -> np.ndarray:
    """The model's layers on the embedded residual x [.. d_model] in the mode `prec` (before ln_final):
    per head q, k, v (rounding points), z = attention(...), the rounded head output z W_O; b_O once on the
    heads' sum; the MLP."""
    dt = prec.compute_dtype
    w = lambda a: prec.after_op(a.astype(dt))  # noqa: E731 — weights stored in the mode's type
    for index, layer in enumerate(model.layers):
        a = _normed(x, layer.ln1, prec)  # [.. d_model]
        update = np.zeros_like(x)
        for h, head in enumerate(layer.heads):
            q = _project(a, head.W_Q, head.b_Q, prec)  # [.. d_head]
            k = _project(a, head.W_K, head.b_K, prec)  # [.. d_head]
            v = _project(a, head.W_V, head.b_V, prec)  # [.. d_value]
            z = attention(index, h, layer, q, k, v)  # [.. d_value]
            update = prec.after_op(update + prec.at_rounding_point(prec.after_op(z @ w(head.W_O))))
        if layer.b_O is not None:
            update = prec.after_op(update + w(layer.b_O))
        x = prec.after_op(x + update)
        if layer.mlp is not None:
            mlp = layer.mlp
            m = _normed(x, layer.ln2, prec)
            hidden = activation(prec.after_op(m @ w(mlp.W_in) + w(mlp.b_in)), mlp.activation, prec)
            x = prec.after_op(x + prec.at_rounding_point(prec.after_op(hidden @ w(mlp.W_out) + w(mlp.b_out))))
    return x


def residual_stream(
    model: Transformer,
    tokens: np.ndarray,
    prec: Precision = FLOAT64,
    patterns: list[list[np.ndarray]] | None = None,
) -> np.ndarray:
    """Final residual stream x^L [batch pos d_model] of a (checked) token batch, in the mode `prec` — after
    the final LayerNorm when the model has one (what the decoder reads). `patterns`, when given, receives
    each layer's list of its heads' attention weights [batch query key]."""
    per_layer: list[list[np.ndarray]] | None = None
    if patterns is not None:
        per_layer = [[] for _ in model.layers]
        patterns.extend(per_layer)

    def attention(index: int, h: int, layer: Layer, q, k, v) -> np.ndarray:
        kept = None if per_layer is None else per_layer[index]
        return attend(q, k, v, model.mask, prec, layer.attn_scale, kept)  # [batch pos d_value]

    x = embed(model, tokens, slice(0, tokens.shape[1]), prec)  # [batch pos d_model]
    return _normed(run_layers(model, x, prec, attention), model.ln_final, prec)
