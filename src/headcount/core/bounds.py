"""Rigorous forward pass: midpoint–radius interval arithmetic in float64.

Every quantity is carried as (mid, rad) with the guarantee that the value the *real-arithmetic* model
computes (with the fixed:p rounding points, when asked) lies in [mid − rad, mid + rad]. The bounds use the
standard floating-point error model (|fl(a∘b) − a∘b| ≤ u·|fl(a∘b)|, u = 2^-53; a float dot product of
length d errs by at most γ_d·Σ|a_i b_i|, γ_d = d·u/(1 − d·u)) and assume the C library's exp is within
4 ulp, which glibc documents (< 1 ulp), and that no product of model values underflows (magnitudes
far above 1e-150); softmax weights that underflow are covered by an absolute term. Each computed radius is inflated by a relative SAFETY margin
that dominates the rounding of the radius computation itself. A decoder then says at which positions
every point of the box decodes to the same output: there the output is *certified*.
"""

from __future__ import annotations

import numpy as np

from headcount.core.forward import causal_mask, exp_shifted
from headcount.core.model import Transformer
from headcount.core.precision import Precision, round_fixed

U = 2.0**-53
SAFETY = 1e-9  # relative inflation of every computed radius (≫ the radius computation's own error)


def _gamma(d: int) -> float:
    return d * U / (1 - d * U)


def _up(rad: np.ndarray) -> np.ndarray:
    """Inflate a computed radius; a radius computed as exactly 0 stays 0 (exact quantities), and a NaN
    radius (from inf·0 when a box is unbounded) becomes +inf, so nothing downstream treats it as 0."""
    rad = rad * (1 + SAFETY) + np.where(rad > 0, 1e-300, 0.0)
    return np.where(np.isnan(rad), np.inf, rad)


def box_from_interval(lo: np.ndarray, hi: np.ndarray):
    """(mid, rad) of a box containing [lo, hi], rounding outward."""
    mid = (lo + hi) / 2
    rad = np.maximum(hi - mid, mid - lo)
    return mid, np.where(rad > 0, np.nextafter(rad, np.inf), np.where(np.isnan(rad), np.inf, 0.0))


def fraction_bits(a: np.ndarray) -> int:
    """Smallest e ≥ 0 with a·2^e all integers (a finite float64 array); 1100 if none is found."""
    a = np.asarray(a, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        return 1100
    if np.array_equal(a, np.round(a)):  # the common case (integer-valued), one cheap pass
        return 0
    nonzero = a[a != 0]
    if nonzero.size == 0:
        return 0
    if not np.all(np.isfinite(nonzero)):
        return 1100
    mantissa, exponent = np.frexp(nonzero)  # a = m·2^ex, 0.5 ≤ |m| < 1, m has 53 significant bits
    ints = np.abs(mantissa * 2.0**53).astype(np.int64)
    trailing = np.log2((ints & -ints).astype(np.float64)).astype(np.int64)
    return int(max(0, (53 - trailing - exponent).max()))


def _dot_rounding(a_abs: np.ndarray, b_abs: np.ndarray, inner: int, exact: bool) -> np.ndarray:
    """Bound on |fl(a·b) − a·b| from |a|·|b|: zero when the dot products are provably exact."""
    abs_dot = a_abs @ b_abs
    if exact:
        return np.zeros_like(abs_dot)
    return _gamma(inner + 1) * abs_dot


def _exact_dot(a: np.ndarray, b: np.ndarray) -> bool:
    """True when every partial sum of a @ b is a float64 number: dyadic entries whose products share a
    grid 2^-(fa+fb) and whose absolute sums stay below 2^53 on that grid."""
    bits = fraction_bits(a) + fraction_bits(b)
    if bits > 1000:
        return False
    bound = float((np.abs(a).max(initial=0) * np.abs(b).max(initial=0)) * max(a.shape[-1], 1))
    return bound * 2.0**bits < 2.0**53


def affine_bounds(mid: np.ndarray, rad: np.ndarray, W: np.ndarray, b: np.ndarray | None = None):
    """Bounds on x W (+ b) for x in the box (mid, rad), W and b exact float64."""
    absW = np.abs(W)
    out_mid = mid @ W
    out_rad = rad @ absW + _dot_rounding(np.abs(mid), absW, W.shape[0], _exact_dot(mid, W))
    if b is not None:
        out_mid, out_rad = add_bounds(out_mid, out_rad, np.broadcast_to(b, out_mid.shape), 0.0)
    return out_mid, _up(out_rad)


def add_bounds(a_mid, a_rad, b_mid, b_rad):
    """Sum of two boxes; the rounding error of the midpoint sum is computed exactly (TwoSum)."""
    out = a_mid + b_mid
    b_virtual = out - a_mid
    err = (a_mid - (out - b_virtual)) + (b_mid - b_virtual)
    return out, _up(a_rad + b_rad + np.abs(err) * (1 + 4 * U))


def quantize_bounds(mid: np.ndarray, rad: np.ndarray, bits: int):
    """Image of the box under fixed:p rounding (monotone, so the endpoints map to the endpoints)."""
    rad = np.where(np.isnan(rad), np.inf, rad)
    if not rad.any():
        return round_fixed(mid, bits), np.zeros_like(mid)
    lo = np.where(rad > 0, np.nextafter(mid - rad, -np.inf), mid)
    hi = np.where(rad > 0, np.nextafter(mid + rad, np.inf), mid)
    qlo, qhi = round_fixed(lo, bits), round_fixed(hi, bits)
    return (qlo + qhi) / 2, (qhi - qlo) / 2  # exact: both are multiples of 2^-p within ±2^p


def _rounding_point(mid, rad, prec: Precision):
    return quantize_bounds(mid, rad, prec.bits) if prec.kind == "fixed" else (mid, rad)


def attention_bounds(q, k, v, allowed: np.ndarray):
    """Bounds on softmax(q kᵀ) v for q, k, v given as (mid, rad) pairs [batch pos d].

    The [batch query key] arrays dominate the cost, so they are updated in place; a NaN anywhere (inf·0
    from an unbounded score box) reaches the output radius, which _up turns into +inf."""
    (qm, qr), (km, kr), (vm, vr) = q, k, v
    kmT, krT = np.swapaxes(km, -1, -2), np.swapaxes(kr, -1, -2)
    s_mid = qm @ kmT  # [batch query key]
    s_mid[..., ~allowed] = -np.inf
    shifted = s_mid
    shifted -= s_mid.max(axis=-1, keepdims=True)
    weights = exp_shifted(shifted)
    alpha = np.divide(weights, weights.sum(axis=-1, keepdims=True), out=weights)  # [batch query key]
    # ρ_j: how far the exact exponent can be from the float one (score radius, the subtraction's
    # rounding, exp's error, and the float normalisation), all as a relative factor e^{±ρ_j} on weight j.
    rho = np.abs(shifted, out=shifted)
    rho[..., ~allowed] = 0.0
    rho *= U
    rho += (allowed.sum(axis=-1)[:, None] + 8) * 4 * U
    if not _exact_dot(qm, kmT):
        rho += _gamma(qm.shape[-1] + 1) * (np.abs(qm) @ np.abs(kmT))
    if kr.any():
        rho += np.abs(qm) @ krT
    if qr.any():
        rho += qr @ (np.abs(kmT) + krT)
    rho *= 1 + SAFETY
    rho_max = rho.max(axis=-1, keepdims=True)  # [batch query 1]
    # With w_j = ŵ_j e^{η_j}, |η_j| ≤ ρ_j: α_j/α̂_j ∈ [e^{-ρ_j}/R⁺, e^{ρ_j}/R⁻], R^± = Σ α̂_k e^{±ρ_k}.
    grow = np.expm1(rho)
    shrink = np.expm1(np.negative(rho, out=rho), out=rho)
    r_plus = 1 + (alpha * grow).sum(axis=-1, keepdims=True)
    r_minus = 1 + (alpha * shrink).sum(axis=-1, keepdims=True)
    kappa = grow
    kappa -= r_minus - 1
    kappa /= r_minus
    np.subtract(r_plus - 1, shrink, out=shrink)
    shrink /= r_plus
    np.maximum(kappa, shrink, out=kappa)
    np.maximum(kappa, 0, out=kappa)
    kappa *= (1 + SAFETY) * alpha  # now α̂_j κ_j; masked keys have α̂_j = 0
    z_mid = alpha @ vm
    z_rad = kappa @ np.abs(vm) + _gamma(vm.shape[-2] + 2) * (alpha @ np.abs(vm))
    if vr.any():
        z_rad += (alpha + kappa) @ vr
    # Weights that underflow (exp < 2^-1074, or subnormal) are outside the relative error model: each is
    # off by < 2^-1074·e^{ρ}, against a total ≥ e^{-ρ} (the max key), so they move z by at most
    # n·2^-1000·max|v| while ρ ≤ 20; past that the bound is useless anyway and becomes +inf.
    underflow = np.where(rho_max <= 20, vm.shape[-2] * 2.0**-1000, np.inf)
    z_rad += underflow * (np.abs(vm).max(axis=-2, keepdims=True) + vr.max(axis=-2, keepdims=True))
    return z_mid, _up(z_rad)


def residual_bounds(model: Transformer, tokens: np.ndarray, prec: Precision):
    """(mid, rad) of the final residual stream [batch pos d_model] of the real-arithmetic model with the
    rounding points of `prec` ("fixed:p" or "exact")."""
    n = tokens.shape[1]
    x = _rounding_point(*add_bounds(model.W_E[tokens], 0.0, model.W_pos[:n], 0.0), prec)
    allowed = causal_mask(n) if model.mask == "causal" else np.ones((n, n), dtype=bool)
    for layer in model.layers:
        update = (np.zeros_like(x[0]), np.zeros_like(x[1]))
        for head in layer.heads:
            q = _rounding_point(*affine_bounds(*x, head.W_Q), prec)
            k = _rounding_point(*affine_bounds(*x, head.W_K), prec)
            v = _rounding_point(*affine_bounds(*x, head.W_V), prec)
            z = attention_bounds(q, k, v, allowed)
            update = add_bounds(*update, *_rounding_point(*affine_bounds(*z, head.W_O), prec))
        x = add_bounds(*x, *update)
        if layer.mlp is not None:
            h_mid, h_rad = affine_bounds(*x, layer.mlp.W_in, layer.mlp.b_in)
            lo = np.where(h_rad > 0, np.nextafter(h_mid - h_rad, -np.inf), h_mid)
            hi = np.where(h_rad > 0, np.nextafter(h_mid + h_rad, np.inf), h_mid)
            relu_box = box_from_interval(np.maximum(lo, 0), np.maximum(hi, 0))  # ReLU is monotone
            out = affine_bounds(*relu_box, layer.mlp.W_out, layer.mlp.b_out)
            x = add_bounds(*x, *_rounding_point(*out, prec))
    return x
