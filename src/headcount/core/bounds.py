"""Rigorous forward pass: midpoint–radius interval arithmetic in float64.

Every quantity is carried as (mid, rad) with the guarantee that the value the *real-arithmetic* model
computes (with the fixed:p rounding points, when asked) lies in [mid − rad, mid + rad]. Each step's bound
holds on its own, from the floating-point error model with underflow:

* a rounded product or quotient is exact·(1 + δ) + η with |δ| ≤ u = 2^-53 and |η| ≤ 2^-1075 (the η term
  is what a product that underflows loses; a float dot product of length d therefore errs by at most
  γ_d·Σ|a_i b_i| + d·2^-1074, γ_d = d·u/(1 − d·u)); sums that land in the subnormal range are exact;
* the C library's exp and expm1 are within 4 ulp on normal results (glibc documents < 1 ulp; check_libm
  tests it against Arb balls once per process, and refuses to bound anything where it fails), and no
  softmax weight that the bound relies on is subnormal: keys whose weight is provably below e^-500 of
  the largest are bounded as a group by an absolute term instead (``attention_bounds``);
* a radius computed from non-negative terms is inflated by a relative SAFETY margin that dominates its
  own rounding, plus an absolute term for every product in it that may have underflowed. A radius is 0
  only where the value is provably exact.

The GPT-2 parts (core/activation_bounds.py): LayerNorm and GELU are enclosed by outward-rounded interval
arithmetic with proven error bounds for erfc and exp (checked against Arb once per process, as above); a
LayerNorm output stays bounded (|LN(x)_i − b_i| ≤ |w_i|·√(d−1) for every real x) even on an unbounded box.

Where an assumption fails (a score, weight or value that overflows, a NaN, an exponent error too large
for the relative model) the radius is +inf: that position is *uncertified*, never certified. A decoder
then says at which positions every point of the box decodes to the same output: there the output is
*certified*.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from headcount.core.activation_bounds import FLINT_LOCK, gelu_interval, layer_norm_interval
from headcount.core.errors import InternalError
from headcount.core.forward import causal_mask
from headcount.core.precision import Precision, round_fixed

if TYPE_CHECKING:  # model.py imports this module (decoders bound their logits); only the annotation needs it
    from headcount.core.model import LayerNorm, Transformer

U = 2.0**-53
TINY = 2.0**-1074  # the smallest subnormal: a product that underflows loses at most half of it
SAFETY = 1e-9  # relative inflation of every computed radius (≫ the radius computation's own error)
FAR = -500.0  # keys whose shifted score is provably below this are bounded as a group (weight < e^-500)
RHO_CAP = 50.0  # a near key whose exponent error exceeds this makes its row unbounded (no useful bound)
FAR_WEIGHT = 2.0**-640  # ≥ e^(FAR + RHO_CAP): a far key's weight relative to the whole near sum


def _gamma(d) -> float:
    return d * U / (1 - d * U)


def _up(rad: np.ndarray) -> np.ndarray:
    """Inflate a computed radius; a radius computed as exactly 0 stays 0 (exact quantities), and a NaN
    radius (from inf·0 when a box is unbounded) becomes +inf, so nothing downstream treats it as 0."""
    rad = rad * (1 + SAFETY) + np.where(rad > 0, 1e-300, 0.0)
    return np.where(np.isnan(rad), np.inf, rad)


def outward(lo: np.ndarray, hi: np.ndarray, ulps: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] widened by `ulps` units in the last place each way: turns endpoints computed with that many
    roundings (each within half an ulp) into rigorous ones."""
    for _ in range(ulps):
        lo, hi = np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)
    return lo, hi


def box_from_interval(lo: np.ndarray, hi: np.ndarray):
    """(mid, rad) of a box containing [lo, hi], rounding outward; a point interval keeps radius 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        mid = lo / 2 + hi / 2  # any float will do (the radius covers both ends); this one never overflows
        rad = np.maximum(hi - mid, mid - lo)
    rad = np.where(rad > 0, np.nextafter(rad, np.inf), rad)
    return mid, np.where(np.isnan(rad) | (lo > hi), np.inf, rad)


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
    mantissa, exponent = np.frexp(nonzero)  # a = m·2^ex, 0.5 ≤ |m| < 1, m has 53 significant bits
    ints = np.abs(mantissa * 2.0**53).astype(np.int64)
    trailing = np.log2((ints & -ints).astype(np.float64)).astype(np.int64)
    return int(max(0, (53 - trailing - exponent).max()))


def _exact_dot(a: np.ndarray, b: np.ndarray) -> bool:
    """True when every product and partial sum of a @ b is a float64 number: dyadic entries whose products
    share a grid 2^-(fa+fb) no finer than 2^-1074 and whose absolute sums stay below 2^53 on that grid."""
    bits = fraction_bits(a) + fraction_bits(b)
    if bits > 1000:
        return False
    bound = float((np.abs(a).max(initial=0) * np.abs(b).max(initial=0)) * max(a.shape[-1], 1))
    return bound * 2.0**bits < 2.0**53


def _underflow_count(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many products a_i·b_ij are non-zero in each entry of a @ b (each may lose ≤ 2^-1075 to
    underflow)."""
    return (a != 0).astype(np.float64) @ (b != 0).astype(np.float64)


def affine_bounds(mid: np.ndarray, rad: np.ndarray, W: np.ndarray, b: np.ndarray | None = None):
    """Bounds on x W (+ b) for x in the box (mid, rad), W and b exact float64."""
    absW = np.abs(W)
    out_mid = mid @ W
    if _exact_dot(mid, W):
        out_rad = np.zeros_like(out_mid)
    else:
        out_rad = _gamma(W.shape[0] + 1) * (np.abs(mid) @ absW) + W.shape[0] * TINY
    if np.any(rad):
        out_rad = out_rad + rad @ absW + _underflow_count(rad, W) * TINY
    if b is not None:
        out_mid, out_rad = add_bounds(out_mid, out_rad, np.broadcast_to(b, out_mid.shape), 0.0)
    return out_mid, _up(out_rad)


def add_bounds(a_mid, a_rad, b_mid, b_rad):
    """Sum of two boxes; the rounding error of the midpoint sum is computed exactly (TwoSum)."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = a_mid + b_mid
        b_virtual = out - a_mid
        err = (a_mid - (out - b_virtual)) + (b_mid - b_virtual)
        rad = a_rad + b_rad + np.abs(err) * (1 + 4 * U)
    return out, _up(np.where(np.isfinite(out), rad, np.inf))


def quantize_bounds(mid: np.ndarray, rad: np.ndarray, bits: int):
    """Image of the box under fixed:p rounding: round_fixed is exact on floats and monotone, so the
    (outward-rounded) endpoints map to the endpoints; an unbounded box maps into [−2^p, 2^p]."""
    rad = np.where(np.isnan(rad), np.inf, rad)
    if not rad.any():
        return round_fixed(mid, bits), np.zeros_like(mid)
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi = outward(mid - rad, mid + rad)
    lo, hi = np.where(rad > 0, lo, mid), np.where(rad > 0, hi, mid)
    qlo, qhi = round_fixed(lo, bits), round_fixed(hi, bits)
    # (qlo + qhi)/2 and (qhi − qlo)/2 are exact while both fit 53 bits on the 2^-(p+1) grid; else outward
    fits = np.maximum(np.abs(qlo), np.abs(qhi)) * 2.0 ** (bits + 1) < 2.0**52
    mid, rad = box_from_interval(qlo, qhi)
    return np.where(fits, (qlo + qhi) / 2, mid), np.where(fits, (qhi - qlo) / 2, rad)


def _rounding_point(mid, rad, prec: Precision):
    return quantize_bounds(mid, rad, prec.bits) if prec.kind == "fixed" else (mid, rad)


LIBM_ULPS = 4  # the accuracy of exp and expm1 the bounds assume (glibc documents < 1 ulp)
_libm_checked: list[bool] = []
_libm_lock = FLINT_LOCK  # chunks are bounded on several threads; flint's precision is global


def check_libm() -> None:
    """Check the one assumption about the platform that the softmax bounds rest on — exp and expm1 within
    LIBM_ULPS ulp — against Arb balls on a fixed sample of the ranges they are used on (once per process,
    about 20 ms). A machine where it fails gets an InternalError, never a certificate."""
    with _libm_lock:
        if not _libm_checked:
            _check_libm()


def _check_libm() -> None:
    import flint

    rng = np.random.default_rng(0)
    exp_points = np.concatenate([-rng.random(300) * (RHO_CAP - FAR + 1), -np.logspace(-17, 0, 60), [0.0]])
    expm1_points = np.concatenate([rng.random(150) * RHO_CAP, np.logspace(-17, 1, 60)])
    expm1_points = np.concatenate([expm1_points, -expm1_points])
    old = flint.ctx.prec
    flint.ctx.prec = 128
    try:
        for fn, arb_fn, points in (
            (np.exp, flint.arb.exp, exp_points),
            (np.expm1, flint.arb.expm1, expm1_points),
        ):
            for x, y in zip(points.tolist(), fn(points).tolist()):
                exact = arb_fn(flint.arb(x))
                if not abs(flint.arb(y) - exact) <= LIBM_ULPS * U * abs(exact):
                    raise InternalError(
                        f"np.{fn.__name__}({x!r}) = {y!r} is off by more than {LIBM_ULPS} ulp: the "
                        "rigorous bounds assume a libm at least that accurate"
                    )
    finally:
        flint.ctx.prec = old
    _libm_checked.append(True)


def weight_error(alpha: np.ndarray, rho: np.ndarray, theta) -> tuple[np.ndarray, np.ndarray]:
    """(e, unbounded): e_j ≥ |α_j − α̂_j| for every α_j = ᾱ_j e^{η_j} / Σ_k ᾱ_k e^{η_k} with |η_k| ≤ ρ_k, where
    ᾱ is a probability vector with |ᾱ_j/α̂_j − 1| ≤ θ (α̂ the float weights, [.. key]; θ broadcasts against
    [.. 1]); unbounded marks rows where R⁻ < 1/2 (no useful bound). Consumes `rho` (overwritten).

    α_j/ᾱ_j ∈ [e^{-ρ_j}/R⁺, e^{ρ_j}/R⁻] with R^± = 1 + B^±, B^± = Σ_k ᾱ_k expm1(±ρ_k) (as Σ ᾱ = 1), so
    |α_j/ᾱ_j − 1| ≤ κ_j = max((expm1(ρ_j) − B⁻)/(1 + B⁻), (B⁺ − expm1(−ρ_j))/(1 + B⁺)). Both numerators
    are sums of non-negative terms: each float step errs by a small relative amount, bounded explicitly:
    B^± from α̂ instead of ᾱ (θ), expm1 and the product (5u), the sum (γ_n), then three steps (γ_8).
    Finally |α_j − α̂_j| ≤ |α_j − ᾱ_j| + |ᾱ_j − α̂_j| ≤ α̂_j (κ_j + θ)/(1 − θ)."""
    keys = alpha.shape[-1]
    grow, shrink = np.expm1(rho), np.expm1(np.negative(rho, out=rho), out=rho)
    rel = 2 * (theta + _gamma(keys + 6))
    b_plus = (alpha * grow).sum(axis=-1, keepdims=True) * (1 + rel)
    b_minus = (alpha * shrink).sum(axis=-1, keepdims=True) * (1 + rel)  # ≤ 0, now at least as negative
    unbounded = (1 + b_minus)[..., 0] < 0.5
    upper = np.add(grow, -b_minus, out=grow)
    upper /= 1 + b_minus  # e^{ρ_j}/R⁻ − 1
    lower = np.subtract(b_plus, shrink, out=shrink)
    lower /= 1 + b_plus  # 1 − e^{-ρ_j}/R⁺
    kappa = np.maximum(upper, lower, out=upper)
    kappa *= 1 + _gamma(8)
    kappa += theta
    kappa /= 1 - theta
    kappa *= (1 + SAFETY) * alpha
    return kappa, unbounded


def attention_bounds(q, k, v, allowed: np.ndarray):
    """Bounds on softmax(q kᵀ) v for q, k, v given as (mid, rad) pairs [batch pos d].

    Per query, with c the largest float score, t_j = s_j − c is the exact shifted score and ŝ_j its float
    value; ρ_j bounds |t_j − ŝ_j| plus exp's error (the score box, the dot product's and the subtraction's
    rounding). Keys with ŝ_j + ρ_j < FAR are *far*: their total weight is below n·e^FAR against the largest
    key's e^-ρ, so they move z by at most FAR_WEIGHT·n·2·max|v| (an absolute term). The other keys are
    *near*: ŵ_j = exp(ŝ_j) is a normal float there and the true weights are w_j = ŵ_j·e^{η_j}, |η_j| ≤ ρ_j.
    With ᾱ the exact normalisation of ŵ over the near keys, the computed α̂_j = fl(ŵ_j / Σŵ) is within
    θ = γ_{n+2} of ᾱ_j, and weight_error bounds |α_j − α̂_j|. Rows where an assumption fails (a non-finite
    score, a near key with ρ_j > RHO_CAP, R⁻ < 1/2) get radius +inf.

    The [batch query key] arrays dominate the cost, so they are updated in place where that stays clear."""
    check_libm()
    (qm, qr), (km, kr), (vm, vr) = q, k, v
    kmT, krT = np.swapaxes(km, -1, -2), np.swapaxes(kr, -1, -2)
    keys = allowed.sum(axis=-1)[:, None]  # [query 1]: keys each query sees
    theta = _gamma(keys + 2)  # [query 1]: α̂ against ᾱ (the sum's and the division's rounding)
    with np.errstate(invalid="ignore", over="ignore"):
        s_hat = qm @ kmT  # [batch query key]
        s_hat[..., ~allowed] = -np.inf
        top = s_hat.max(axis=-1, keepdims=True)  # [batch query 1]
        s_hat -= top  # ŝ_j ≤ 0; masked keys −inf
        # ρ_j: the score box, the dot product's rounding (with underflow), the subtraction, exp (4 ulp)
        rho = np.abs(s_hat)
        rho *= U
        if not _exact_dot(qm, kmT):
            rho += _gamma(qm.shape[-1] + 1) * (np.abs(qm) @ np.abs(kmT))
        if kr.any():
            rho += np.abs(qm) @ krT
        if qr.any():
            rho += qr @ (np.abs(kmT) + krT)
        rho *= 1 + SAFETY
        rho += 4.5 * U + 2.0**-1000  # exp's error; every product above that may have underflowed
        near = s_hat + rho >= FAR - 1  # (the -1 covers the rounding of that sum)
        near &= allowed
        bad = ~np.isfinite(top[..., 0]) | np.any(allowed & ~np.isfinite(rho), axis=-1)
        bad |= np.any(near & (rho > RHO_CAP), axis=-1)  # [batch query]
        n_far = (allowed & ~near).sum(axis=-1, keepdims=True)  # [batch query 1]
        rho[~near] = 0.0  # far and masked keys leave the relative model (α̂ = 0 there)
        s_hat[~near] = -np.inf
        weights = np.exp(s_hat)  # near keys: ŝ_j ≥ FAR − 1 − RHO_CAP, so ŵ_j is a normal float
        alpha = np.divide(weights, weights.sum(axis=-1, keepdims=True), out=weights)  # α̂ [batch query key]
        kappa, too_wide = weight_error(alpha, rho, theta)  # α̂_j κ_j; far and masked keys have α̂_j = 0
        bad |= too_wide
        z_mid = alpha @ vm
        n = vm.shape[-2]
        abs_v = np.abs(vm)
        z_rad = kappa @ abs_v + _gamma(n + 2) * (alpha @ abs_v) + 3 * n * TINY
        if vr.any():
            z_rad += (alpha + kappa) @ vr
        v_max = (abs_v + vr).max(axis=-2, keepdims=True)  # [batch 1 d]
        z_rad += n_far * FAR_WEIGHT * 2 * v_max
        z_rad[bad] = np.inf
    return z_mid, _up(z_rad)


def scale_bounds(mid: np.ndarray, rad: np.ndarray, scale: float):
    """Bounds on scale·x for x in the box (mid, rad): the rounding of mid·scale (with underflow) is added."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = mid * scale
        rad = abs(scale) * rad + U * np.abs(out) + np.where(mid != 0, TINY, 0.0)
    return out, _up(np.where(np.isfinite(out), rad, np.inf))


def layer_norm_bounds(mid: np.ndarray, rad: np.ndarray, ln: LayerNorm):
    """Bounds on LN(x) for x in the box (mid, rad) [.. d_model] (activation_bounds.layer_norm_interval)."""
    return box_from_interval(*layer_norm_interval(mid, rad, ln))


def activation_bounds(mid: np.ndarray, rad: np.ndarray, kind: str):
    """Bounds on the MLP activation `kind` (relu, gelu, gelu_tanh) of every x in the box (mid, rad)."""
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi = outward(mid - rad, mid + rad)
    lo, hi = np.where(rad > 0, lo, mid), np.where(rad > 0, hi, mid)
    if kind == "relu":  # monotone
        return box_from_interval(np.maximum(lo, 0), np.maximum(hi, 0))
    return box_from_interval(*gelu_interval(lo, hi, kind))


def _normed(x, ln: LayerNorm | None, prec: Precision):
    """LN(x) as a rounding point (forward._normed), or x itself where there is no LayerNorm."""
    return x if ln is None else _rounding_point(*layer_norm_bounds(*x, ln), prec)


def residual_bounds(model: Transformer, tokens: np.ndarray, prec: Precision):
    """(mid, rad) of the final residual stream [batch pos d_model] of the real-arithmetic model with the
    rounding points of `prec` ("fixed:p" or "exact"), after the final LayerNorm where the model has one.
    Step for step forward.residual_stream: the scale multiplies the exact score ⟨q, k⟩ (here: the query
    box), b_O is added once to the heads' sum of rounded outputs."""
    n = tokens.shape[1]
    x = _rounding_point(*add_bounds(model.W_E[tokens], 0.0, model.W_pos[:n], 0.0), prec)
    allowed = causal_mask(n) if model.mask == "causal" else np.ones((n, n), dtype=bool)
    for layer in model.layers:
        update = (np.zeros_like(x[0]), np.zeros_like(x[1]))
        a = _normed(x, layer.ln1, prec) if layer.heads else x
        for head in layer.heads:
            q = _rounding_point(*affine_bounds(*a, head.W_Q, head.b_Q), prec)
            k = _rounding_point(*affine_bounds(*a, head.W_K, head.b_K), prec)
            v = _rounding_point(*affine_bounds(*a, head.W_V, head.b_V), prec)
            if layer.attn_scale != 1.0:
                q = scale_bounds(*q, layer.attn_scale)
            z = attention_bounds(q, k, v, allowed)
            update = add_bounds(*update, *_rounding_point(*affine_bounds(*z, head.W_O), prec))
        if layer.b_O is not None:
            update = add_bounds(*update, np.broadcast_to(layer.b_O, update[0].shape), 0.0)
        x = add_bounds(*x, *update)
        if layer.mlp is not None:
            mlp = layer.mlp
            hidden = affine_bounds(*_normed(x, layer.ln2, prec), mlp.W_in, mlp.b_in)
            out = affine_bounds(*activation_bounds(*hidden, mlp.activation), mlp.W_out, mlp.b_out)
            x = add_bounds(*x, *_rounding_point(*out, prec))
    return _normed(x, model.ln_final, prec)
