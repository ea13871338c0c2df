"""Rigorous forward pass: midpoint–radius interval arithmetic in float64.

Every quantity is carried as (mid, rad) with the guarantee that the value the *real-arithmetic*
model computes (with the fixed:p rounding points, when asked) lies in [mid − rad, mid + rad]. Each
step's bound holds on its own, from the floating-point error model with underflow:

* a rounded product or quotient is exact·(1 + δ) + η with |δ| ≤ u = 2^-53 and |η| ≤ 2^-1075 (the η
  term is what a product that underflows loses; a float dot product of length d therefore errs by at
  most γ_d·Σ|a_i b_i| + d·2^-1074, γ_d = d·u/(1 − d·u)); sums that land in the subnormal range are
  exact;
* the C library's exp and expm1 are within 4 ulp on normal results (glibc documents < 1 ulp;
  check_libm tests it against Arb balls once per process, and refuses to bound anything where it
  fails), and no softmax weight that the bound relies on is subnormal: keys whose weight is provably
  below e^-500 of the largest are bounded as a group by an absolute term instead
  (``attention_bounds``);
* a radius computed from non-negative terms is inflated by a relative SAFETY margin that dominates
  its own rounding, plus an absolute term for every product in it that may have underflowed. A
  radius is 0 only where the value is provably exact.

The GPT-2 parts (core/passes/activations.py): LayerNorm and GELU are enclosed by outward-rounded
interval arithmetic with proven error bounds for erfc and exp (checked against Arb once per process,
as above); a LayerNorm output stays bounded (|LN(x)_i − b_i| ≤ |w_i|·√(d−1) for every real x) even
on an unbounded box.

Where an assumption fails (a score, weight or value that overflows, a NaN, an exponent error too
large for the relative model) the radius is +inf: that position is *uncertified*, never certified. A
decoder then says at which positions every point of the box decodes to the same output: there the
output is *certified*.

The primitives live in core.numbers.interval, the softmax bounds in core.attention.rigorous (both
re-exported here).
"""

from __future__ import annotations

import numpy as np

from headcount.core.attention import (
    TIES,
    attention_bounds,
    current_algorithm,
)
from headcount.core.model import MLP, LayerNorm, Norm, RMSNorm, Transformer
from headcount.core.numbers import (
    Precision,
    add_bounds,
    affine_bounds,
    box_from_interval,
    mul_bounds,
    outward,
    quantize_bounds,
    scale_bounds,
)
from headcount.core.passes.activations import (
    gelu_interval,
    layer_norm_interval,
    rms_norm_interval,
)
from headcount.core.passes.forward import position_rows, table_for
from headcount.core.passes.head_rounding import exact_head_row
from headcount.core.passes.rotary import rotary_bounds


def rounding_point_bounds(mid, rad, prec: Precision):
    return quantize_bounds(mid, rad, prec.bits) if prec.kind == "fixed" else (mid, rad)


def layer_norm_bounds(mid: np.ndarray, rad: np.ndarray, ln: Norm):
    """Bounds on LN(x) or RMSNorm(x) for x in the box (mid, rad) [.. d_model]
    (activations.layer_norm_interval, rms_norm_interval)."""
    if isinstance(ln, RMSNorm):
        return box_from_interval(*rms_norm_interval(mid, rad, ln.w, ln.eps, ln.offset))
    return box_from_interval(*layer_norm_interval(mid, rad, ln))


def activation_bounds(mid: np.ndarray, rad: np.ndarray, kind: str):
    """Bounds on the MLP activation `kind` (relu, gelu, gelu_tanh, silu) of every x in the box (mid,
    rad)."""
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi = outward(mid - rad, mid + rad)
    lo, hi = np.where(rad > 0, lo, mid), np.where(rad > 0, hi, mid)
    if kind == "relu":  # monotone
        return box_from_interval(np.maximum(lo, 0), np.maximum(hi, 0))
    return box_from_interval(*gelu_interval(lo, hi, kind))


def mlp_bounds(m, mlp: MLP, prec: Precision):
    """forward.mlp_output on the box m: the MLP's rounded output box (gate times up projection by
    mul_bounds where gated)."""
    hidden = affine_bounds(*m, mlp.W_in, mlp.b_in)
    if mlp.W_gate is None:
        hidden = activation_bounds(*hidden, mlp.activation)
    else:
        gate = activation_bounds(*affine_bounds(*m, mlp.W_gate, mlp.b_gate), mlp.activation)
        hidden = mul_bounds(*gate, *hidden)
    return rounding_point_bounds(*affine_bounds(*hidden, mlp.W_out, mlp.b_out), prec)


def normed_bounds(x, ln: LayerNorm | None, prec: Precision):
    """LN(x) as a rounding point (forward.normed_bounds), or x itself where there is no
    LayerNorm."""
    return x if ln is None else rounding_point_bounds(*layer_norm_bounds(*x, ln), prec)


TIE_ROWS = 64  # head-output rows per head and chunk that settle_ties decides exactly, at most
TIE_WORK = 2**22  # ... each with at most this many keys × d_model exact multiply-adds


def settle_ties(out, q, k, v, W_O: np.ndarray, bits: int, mask: str):
    """The rounded head output box `out` [batch pos d_model], with each row that still spans more
    than one grid point decided exactly where that can be done cheaply: when the query, and the keys
    and values it sees, are exact points (radius 0, so on the 2^-p grid), the head output is a known
    exponential sum, and exact.exact_head_row rounds it exactly (a box of width 10⁻¹¹ that straddles
    a tie stays open however tight the bounds are). The rounded value N/2^p may need 2p+1 bits: its
    box has radius 0 only where float64 holds it exactly (exact_head.grid_box). At most TIE_ROWS
    rows, each within TIE_WORK; the rest stays as it was."""
    mid, rad = out
    (qm, qr), (km, kr), (vm, vr) = q, k, v
    exact_kv = ~(kr.any(axis=-1) | vr.any(axis=-1))  # [batch pos]
    seen = (
        np.logical_and.accumulate(exact_kv, axis=-1)
        if mask == "causal"
        else exact_kv.all(-1, keepdims=True)
    )
    rows = np.argwhere(rad.any(axis=-1) & ~qr.any(axis=-1) & seen)[:TIE_ROWS]
    if len(rows) == 0:
        return out
    mid, rad = mid.copy(), rad.copy()
    for b, i in rows.tolist():
        keys = i + 1 if mask == "causal" else km.shape[-2]
        inputs = (qm[b, i], km[b, :keys], vm[b, :keys])
        on_grid = all(np.array_equal(np.round(a * 2.0**bits), a * 2.0**bits) for a in inputs)
        if on_grid and keys * W_O.shape[1] <= TIE_WORK:
            mid[b, i], rad[b, i] = exact_head_row(*inputs, W_O, bits)
            TIES.add(rows_settled=1, values_inexact=int(np.count_nonzero(rad[b, i])))
    return mid, rad


def embed_bounds(model: Transformer, tokens: np.ndarray, positions, prec: Precision):
    """The embedding box W_E[σ_i] + W_pos[i] (W_E[σ_i] alone with shortformer positions) at its
    rounding point (positions as forward.embed)."""
    if model.positions == "qk":
        E = model.W_E[tokens]
        return rounding_point_bounds(E, np.zeros_like(E), prec)
    return rounding_point_bounds(
        *add_bounds(model.W_E[tokens], 0.0, model.W_pos[positions], 0.0), prec
    )


def ties_settle(layer, prec: Precision) -> bool:
    """Whether a head output of `layer` at `prec` goes through settle_ties: fixed:p, score scale 1
    (the exact rounding assumes it) and the blocked algorithm (the reference is the first release's
    pass)."""
    return prec.kind == "fixed" and layer.attn_scale == 1.0 and current_algorithm() != "reference"


def run_layer_bounds(model: Transformer, x, prec: Precision, head_output, positions=None):
    """run_layers (core.passes.forward) on boxes: the layers on the embedded box x = (mid, rad) [..
    rows d_model] before ln_final, with each head's rounded output box = head_output(layer index,
    head index, layer, head, q, k, v) from its q (scaled by the layer's attention scale), k and v
    boxes; q and k rotated (rotary_bounds) at the rows' `positions` as run_layers takes them."""
    rows = position_rows(slice(0, x[0].shape[-2]) if positions is None else positions)
    pos = model.W_pos[rows] if model.positions == "qk" else None  # shortformer: q, k inputs
    for index, layer in enumerate(model.layers):
        update = (np.zeros_like(x[0]), np.zeros_like(x[1]))
        a = normed_bounds(x, layer.ln1, prec) if layer.heads else x
        qk_in = a if pos is None else add_bounds(*a, pos, 0.0)
        rotary = layer.rotary
        table = None if rotary is None else table_for(rotary, rows)
        for h, head in enumerate(layer.heads):
            q = affine_bounds(*qk_in, head.W_Q, head.b_Q)
            k = affine_bounds(*qk_in, head.W_K, head.b_K)
            if table is not None:
                q = rotary_bounds(*q, table, rows, rotary.layout)
                k = rotary_bounds(*k, table, rows, rotary.layout)
            q = rounding_point_bounds(*q, prec)
            k = rounding_point_bounds(*k, prec)
            v = rounding_point_bounds(*affine_bounds(*a, head.W_V, head.b_V), prec)
            if layer.attn_scale != 1.0:
                q = scale_bounds(*q, layer.attn_scale)
            update = add_bounds(*update, *head_output(index, h, layer, head, q, k, v))
        if layer.b_O is not None:
            update = add_bounds(*update, np.broadcast_to(layer.b_O, update[0].shape), 0.0)
        if layer.parallel and layer.mlp is not None:
            update = add_bounds(
                *update, *mlp_bounds(normed_bounds(x, layer.ln2, prec), layer.mlp, prec)
            )
            x = add_bounds(*x, *update)
            continue
        x = add_bounds(*x, *update)
        if layer.mlp is not None:
            x = add_bounds(*x, *mlp_bounds(normed_bounds(x, layer.ln2, prec), layer.mlp, prec))
    return x


def residual_bounds(model: Transformer, tokens: np.ndarray, prec: Precision):
    """(mid, rad) of the final residual stream [batch pos d_model] of the real-arithmetic model with
    the rounding points of `prec` ("fixed:p" or "exact"), after the final LayerNorm where the model
    has one. Step for step forward.residual_stream: the scale multiplies the exact score ⟨q, k⟩
    (here: the query box), b_O is added once to the heads' sum of rounded outputs."""

    def head_output(index, h, layer, head, q, k, v):
        out = rounding_point_bounds(
            *affine_bounds(*attention_bounds(q, k, v, model.mask), head.W_O), prec
        )
        return (
            settle_ties(out, q, k, v, head.W_O, prec.bits, model.mask)
            if ties_settle(layer, prec)
            else out
        )

    x = embed_bounds(model, tokens, slice(0, tokens.shape[1]), prec)
    return normed_bounds(run_layer_bounds(model, x, prec, head_output), model.ln_final, prec)
