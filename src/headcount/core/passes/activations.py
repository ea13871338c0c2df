"""Rigorous enclosures of the GPT-2 parts: LayerNorm and the two GELUs (used by
headcount.core.passes.bounds); and RMSNorm (issue 32; not yet a part of the formal model).

Both return intervals [lo, hi] (float64 arrays) that contain the exact real value for every real
input in the given box; core.passes.bounds turns them into (mid, rad) boxes. The float error model
is bounds.py's: a correctly rounded operation is exact·(1 + δ) + η, |δ| ≤ u = 2^-53, |η| ≤ 2^-1075
(underflow), so taking np.nextafter outward after each such operation gives a rigorous endpoint, and
a sum of d terms errs by at most γ_d·Σ|terms|, γ_d = d·u/(1 − d·u). A non-finite input becomes the
whole real line (the real model's value is always some real number), never a proof: every enclosure
below stays sound on ℝ.

LayerNorm (``layer_norm_interval``): c = x − mean(x) as a box (the input box, the float error of the
mean, the subtraction), then outward-rounded interval arithmetic for c², the biased variance Σc²/d,
+ eps, √, the reciprocal, c·r, ·w, + b. c·r is intersected with [−√(d−1), √(d−1)], true for every
real x: as Σc = 0, c_i² = (Σ_{j≠i} c_j)² ≤ (d−1)·Σ_{j≠i} c_j², so d·c_i² ≤ (d−1)·Σ_j c_j² =
(d−1)·d·var. The LayerNorm of an unbounded box is therefore still bounded: |y_i − b_i| ≤
|w_i|·√(d−1).

GELU (``gelu_interval``), f(x) = x·Φ(x) = ½x·erfc(−x/√2) ("gelu") or x·σ(2a(x)) = ½x(1 + tanh a(x)),
a(x) = √(2/π)(x + 0.044715x³) ("gelu_tanh"), constants exact reals. Shape: for x ≥ 0, f' > 0; for x
< 0, f'(x) = Φ(x)(1 − |x|·φ(x)/Φ(x)) resp. σ(2a)(1 − |x|·(1 − tanh a)·a'(x)), and |x|·φ/Φ (the
inverse Mills ratio grows as x decreases) resp. |x|·(1 − tanh a)·a' (three positive factors growing
as x decreases) are strictly monotone on x < 0, so f' changes sign exactly once, at x*: f decreases
on (−∞, x*], increases on [x*, ∞). Hence the maximum of f on [lo, hi] is at an endpoint, and the
minimum is f(hi) if hi ≤ x*, f(lo) if lo ≥ x*, else f(x*) ≥ ``min_lb``. GeluShape holds x* ∈
(star_lo, star_hi), min_lb and the cut-offs; tests/core/test_activation_bounds.py verifies every
constant with Arb.

Each endpoint is enclosed by ``_gelu_point``: x ≤ x_neg: f(x) ∈ [f_neg, 0] (f decreasing and
negative there); x ≥ X_POS = 10: f(x) ∈ [x(1 − 2^-53), x] ⊂ [nextafter(x, −∞), x] (1 − Φ(10) <
8·10^-24 and 1 − σ(2a(10)) < 10^-37, both decreasing in x); in between, the float value f̂ with a
proven error bound:

* gelu: ŷ = fl(x·fl(−√½)) is within Δy = 3u|ŷ| + 2^-1073 of y = −x/√2. |(log erfc)'(t)| ≤ 2|t| + √2
  (for t ≥ 0 by erfc(t) > 2e^{-t²}/(√π(t + √(t²+2))), Abramowitz–Stegun 7.1.13; for t < 0, erfc ≥ 1
  and the derivative is at most (2/√π)e^{-t²}, which is ≤ 2.3·fl(exp(−fl(ŷ²))) on the whole segment
  when ŷ + Δy ≤ 0, as e^{2|ŷ|Δy} ≈ 1), so erfc(ŷ) = erfc(y)·e^λ, |λ| ≤ L = Δy·(that slope bound).
  The library's erfc is within (ERFC_ULPS + 2·max(ŷ, 0)²)·u relative (scipy's erfc rounds −ŷ² before
  its exp, hence the ŷ² term; checked at run time, below); the products 0.5·x and ·erfc add u and
  2^-1073.
* gelu_tanh: â = fl(C1·fl(x + fl(C3·fl(fl(x·x)·x)))) with C1, C3 the rounded constants; x and
  0.044715x³ have one sign, so |â − a| ≤ Δa = 9u|â| + 2^-1069 (seven roundings, with underflow).
  σ(2â) is computed without cancellation as 1/(1 + e) (â ≥ 0) or e/(1 + e) (â < 0), e = exp(−2|â|) ∈
  [e^-520, 1], within EXP_ULPS·u (checked): 11u in all; (log σ)'(z) = 1 − σ(z) ∈ (0, 1), so σ(2â) =
  σ(2a)·e^λ, |λ| ≤ L = 2Δa·g with g ≥ 1 − σ(2t) on [â − Δa, â + Δa]: g = 1, or for â ≥ 0 g = min(1,
  2e) (1 − σ(2t) ≤ e^{-2t} ≤ e^{-2â}·e^{2Δa}); the product x·σ̂ adds u and 2^-1075. (1 + tanh a is
  never formed: it cancels catastrophically for a ≪ 0.)

* silu (issue 32; not yet an activation of the formal model's MLP), f(x) = x·σ(x): gelu_tanh's
  path with â = x/2, exact but for underflow; it has GELU's shape (f' = σ(x)(1 + x·σ(−x)), and
  |x|·σ(−x) grows as x decreases), turning at x* = −1 − W(1/e), with x_neg = −550 and x_pos = 40
  (x − f(x) = x/(1 + e^x) < 2^-53·x from there on).

With rel ≥ (1 + library error)(1 + rounding)e^L − 1 and A the absolute terms, |f − f̂| ≤ rel|f| + A,
so |f − f̂| ≤ (rel|f̂| + A)/(1 − rel) ≤ (rel|f̂| + A)(1 + 2 rel), inflated by MARGIN for its own
float evaluation.

The platform assumption (scipy.special.erfc and np.exp as accurate as stated, on the ranges used) is
checked against Arb balls once per process by ``check_special``; a machine that fails gets an
InternalError, never a certificate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special

from headcount.common.errors import InternalError
from headcount.core.numbers import FLINT_LOCK

U = 2.0**-53  # unit roundoff of float64 (as in bounds.py)
TINY = 2.0**-1074  # the smallest subnormal
MARGIN = 1e-9  # relative inflation of an error bound computed in floats (≫ its own few roundings)


def _gamma(d: int) -> float:
    return d * U / (1 - d * U)


def _down(a: np.ndarray) -> np.ndarray:
    return np.nextafter(a, -np.inf)


def _up(a: np.ndarray) -> np.ndarray:
    return np.nextafter(a, np.inf)


def _sqrt_bound(d: int) -> float:
    """A float ≥ √(d − 1) (exact when d − 1 is a square: 0 for d = 1)."""
    root = math.isqrt(d - 1)
    return float(root) if root * root == d - 1 else float(_up(np.float64(math.sqrt(d - 1))))


# --------------------------------------------------------------------------------------------------
# LayerNorm


def _centred(mid: np.ndarray, rad: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[c_lo, c_hi] ∋ x_i − mean(x) for every x in the box (mid, rad) [.. d]; (−∞, ∞) where anything
    is not finite. |c_i(x) − c_i(mid)| ≤ (1 − 2/d)·rad_i + Σrad/d; the float mean m̂ = fl(fl(Σ
    mid)/d) is within γ_{d+1}·Σ|mid|/d + 2^-1074 of mean(mid), and ĉ = fl(mid − m̂) within u|ĉ| of
    mid − m̂."""
    d = mid.shape[-1]
    c_hat = mid - mid.sum(axis=-1, keepdims=True) / d
    err = ((d - 2) * rad + rad.sum(axis=-1, keepdims=True)) / d  # d = 1: exactly 0 (−rad + rad)
    err += _gamma(d + 1) * np.abs(mid).sum(axis=-1, keepdims=True) / d + TINY
    err += U * np.abs(c_hat)
    err *= 1 + MARGIN
    bad = ~(np.isfinite(c_hat) & np.isfinite(err))  # also NaN err (∞ − ∞ for d = 1)
    return np.where(bad, -np.inf, _down(c_hat - err)), np.where(bad, np.inf, _up(c_hat + err))


def _inverse_std(c_lo: np.ndarray, c_hi: np.ndarray, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """[r_lo, r_hi] ∋ 1/√(Σc²/d + eps) for every c in the boxes [c_lo, c_hi] [.. d] ([.. 1]
    each)."""
    d = c_lo.shape[-1]
    abs_lo = np.where(c_lo > 0, c_lo, np.where(c_hi < 0, -c_hi, 0.0))
    abs_hi = np.maximum(-c_lo, c_hi)
    sq_lo, sq_hi = np.maximum(_down(abs_lo * abs_lo), 0.0), _up(abs_hi * abs_hi)
    # a float sum of d non-negative terms is within γ_{d−1} of the exact one: scale outward, divide
    # by d
    var_lo = _down(_down(sq_lo.sum(axis=-1, keepdims=True) * (1 - 2 * _gamma(d + 1))) / d)
    var_hi = _up(_up(sq_hi.sum(axis=-1, keepdims=True) * (1 + 2 * _gamma(d + 1))) / d)
    var_lo = np.maximum(var_lo, 0.0)
    std_lo = np.maximum(_down(np.sqrt(np.maximum(_down(var_lo + eps), 0.0))), 0.0)
    std_hi = _up(np.sqrt(_up(var_hi + eps)))
    return np.maximum(_down(1 / std_hi), 0.0), _up(
        1 / std_lo
    )  # 1/0 = ∞: no upper bound, still sound


def layer_norm_interval(mid: np.ndarray, rad: np.ndarray, ln) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] [.. d] containing LN(x) = (x − mean x)/√(var x + eps)·w + b for every real x in the
    box (mid, rad) [.. d] (module docstring); finite wherever w·√(d−1) and b are, whatever the
    box."""
    d = mid.shape[-1]
    with np.errstate(all="ignore"):
        c_lo, c_hi = _centred(mid, rad)
        r_lo, r_hi = _inverse_std(c_lo, c_hi, ln.eps)
        t_lo = _down(c_lo * np.where(c_lo >= 0, r_lo, r_hi))  # r ≥ 0: the extreme products
        t_hi = _up(c_hi * np.where(c_hi >= 0, r_hi, r_lo))
        bound = _sqrt_bound(d)
        t_lo, t_hi = (
            np.fmax(t_lo, -bound),
            np.fmin(t_hi, bound),
        )  # fmax/fmin: a NaN end takes the clamp
        positive = ln.w >= 0
        y_lo = _down(np.where(positive, t_lo, t_hi) * ln.w)
        y_hi = _up(np.where(positive, t_hi, t_lo) * ln.w)
        return _down(y_lo + ln.b), _up(y_hi + ln.b)


def rms_norm_interval(
    mid: np.ndarray, rad: np.ndarray, w: np.ndarray, eps: float, offset: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] [.. d] containing RMSNorm(x) = x/√(mean x² + eps)·(offset + w) for every real x in
    the box (mid, rad) [.. d] (issue 32; gemma's offset is 1): LayerNorm's steps without the
    centring, x·r intersected with [−√d, √d] (x_i² ≤ Σx² = d·mean x²), so the output stays bounded
    for an unbounded box; (−∞, ∞) only where offset + w is not finite."""
    d = mid.shape[-1]
    with np.errstate(all="ignore"):
        finite = np.isfinite(mid) & np.isfinite(rad)
        x_lo = np.where(finite, _down(mid - rad), -np.inf)
        x_hi = np.where(finite, _up(mid + rad), np.inf)
        r_lo, r_hi = _inverse_std(x_lo, x_hi, eps)
        t_lo = _down(x_lo * np.where(x_lo >= 0, r_lo, r_hi))  # r ≥ 0: the extreme products
        t_hi = _up(x_hi * np.where(x_hi >= 0, r_hi, r_lo))
        bound = _sqrt_bound(d + 1)  # ≥ √d
        t_lo, t_hi = np.fmax(t_lo, -bound), np.fmin(t_hi, bound)  # a NaN end takes the clamp
        w = np.asarray(w, dtype=np.float64)
        g = w + offset
        back = g - w  # TwoSum: the rounding error of w + offset, exactly (0: g is exact)
        exact = ((w - (g - back)) + (offset - back) == 0) & np.isfinite(g)
        g_lo, g_hi = np.where(exact, g, _down(g)), np.where(exact, g, _up(g))
        products = np.stack([t_lo * g_lo, t_lo * g_hi, t_hi * g_lo, t_hi * g_hi])
        lo, hi = _down(products.min(axis=0)), _up(products.max(axis=0))
        zero = (g_lo == 0) & (g_hi == 0)  # a zero weight: exactly 0, whatever x
        lo, hi = np.where(zero, 0.0, lo), np.where(zero, 0.0, hi)
        return np.where(np.isnan(lo), -np.inf, lo), np.where(np.isnan(hi), np.inf, hi)


# --------------------------------------------------------------------------------------------------
# GELU


X_POS = 10.0  # f(x) ∈ [x(1 − 2^-53), x] from here on, for both GELUs


@dataclass(frozen=True)
class GeluShape:
    """Where f = GELU (or SiLU) turns, and its cut-offs (module docstring): x* ∈ (star_lo,
    star_hi), f ≥ min_lb everywhere, f(x) ∈ [f_neg, 0] for x ≤ x_neg, f(x) ∈ [x(1 − 2^-53), x] for
    x ≥ x_pos."""

    star_lo: float
    star_hi: float
    min_lb: float
    x_neg: float
    f_neg: float
    x_pos: float = X_POS


GELU_SHAPES = {
    # x* = −0.7517915246935645…, min f = −0.16997120747990366…
    "gelu": GeluShape(-0.751791524694, -0.751791524693, -0.1699712074799050, -37.0, -1e-297),
    # x* = −0.7524614220710163…, min f = −0.17004075057125406…
    "gelu_tanh": GeluShape(-0.752461422072, -0.752461422070, -0.1700407505712555, -19.0, -1e-224),
    # x* = −1 − W(1/e) = −1.2784645427610737…, min f = 1 + x* = −0.2784645427610737…; 40 − f(40) <
    # 1.7·10^-16; f(−550) = −7.56·10^-237
    "silu": GeluShape(-1.278464542762, -1.278464542760, -0.2784645427610750, -550.0, -1e-236, 40.0),
}
# scipy.special.erfc(y) within (ERFC_ULPS + 2·max(y, 0)²)·u relative on [−7.2, 26.3] (checked)
ERFC_ULPS = 32
EXP_ULPS = 4  # np.exp within EXP_ULPS·u relative on [−560, 0] (checked; bounds.py assumes the same)
SQRT_HALF = math.sqrt(0.5)
SQRT_2_OVER_PI = math.sqrt(2 / math.pi)
GELU_TANH_CUBIC = 0.044715


def _gelu_erf_value(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f̂, rel) for gelu at x_neg < x < X_POS: f̂ = fl(½x·erfc(fl(−√½·x))) (module docstring)."""
    y = x * -SQRT_HALF
    value = (0.5 * x) * special.erfc(y)
    dy = 3 * U * np.abs(y) + 2.0**-1073
    slope = 2 * (np.abs(y) + dy) + 1.5  # ≥ |(log erfc)'| on [ŷ − Δy, ŷ + Δy]
    slope = np.where(y + dy <= 0, np.minimum(slope, 2.3 * np.exp(-(y * y))), slope)
    rel = 1.01 * ((ERFC_ULPS + 2 * np.maximum(y, 0) ** 2 + 1) * U + 1.01 * dy * slope)
    return value, rel


def _gelu_tanh_value(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f̂, rel) for gelu_tanh at x_neg < x < X_POS: f̂ = fl(x·σ̂(2â)) (module docstring)."""
    a = SQRT_2_OVER_PI * (x + GELU_TANH_CUBIC * ((x * x) * x))
    e = np.exp(-2 * np.abs(a))
    sigma = np.where(a >= 0, 1 / (1 + e), e / (1 + e))
    value = x * sigma
    slope = np.where(a >= 0, np.minimum(2 * e, 1.0), 1.0)  # ≥ 1 − σ(2t) on [â − Δa, â + Δa]
    rel = 1.01 * (13 * U + 1.01 * 2 * (9 * U * np.abs(a) + 2.0**-1069) * slope)
    return value, rel


def _silu_value(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(f̂, rel) for silu at x_neg < x < x_pos: gelu_tanh's σ path with â = x/2, exact unless it
    underflows (Δa ≤ 2^-1075), so |x| < 550 keeps exp's argument in the checked range."""
    a = 0.5 * x
    e = np.exp(-2 * np.abs(a))
    sigma = np.where(a >= 0, 1 / (1 + e), e / (1 + e))
    value = x * sigma
    slope = np.where(a >= 0, np.minimum(2 * e, 1.0), 1.0)
    rel = 1.01 * (13 * U + 1.01 * 2 * 2.0**-1074 * slope)
    return value, rel


_VALUES = {"gelu": _gelu_erf_value, "gelu_tanh": _gelu_tanh_value, "silu": _silu_value}


def _gelu_point(x: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] ∋ f(x) for each real x (float64 array; ±∞ as limits); (−∞, ∞) at NaN."""
    shape = GELU_SHAPES[kind]
    inside = (x > shape.x_neg) & (x < shape.x_pos)
    xs = np.where(inside, x, 0.0)
    value, rel = _VALUES[kind](xs)
    err = (rel * np.abs(value) + 2.0**-1070) * (1 + 2 * rel) * (1 + MARGIN)
    big = x >= shape.x_pos
    lo = np.where(big, _down(x), np.where(x <= shape.x_neg, shape.f_neg, _down(value - err)))
    hi = np.where(big, x, np.where(x <= shape.x_neg, 0.0, _up(value + err)))
    nan = np.isnan(x)
    return np.where(nan, -np.inf, lo), np.where(nan, np.inf, hi)


def gelu_interval(lo: np.ndarray, hi: np.ndarray, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """[out_lo, out_hi] ∋ f(x) for every real x in [lo, hi] (float64 arrays, lo ≤ hi; ±∞ allowed), f
    the activation `kind` ("gelu", "gelu_tanh", or "silu": the same shape). A NaN end: the upper
    end is +∞ (an unbounded box)."""
    if kind not in GELU_SHAPES:
        raise ValueError(
            f"no GELU enclosure for activation {kind!r}: use one of {sorted(GELU_SHAPES)}"
        )
    check_special()
    shape = GELU_SHAPES[kind]
    with np.errstate(all="ignore"):
        lo_lo, lo_hi = _gelu_point(lo, kind)
        hi_lo, hi_hi = _gelu_point(hi, kind)
        lower = np.where(
            hi <= shape.star_lo, hi_lo, np.where(lo >= shape.star_hi, lo_lo, shape.min_lb)
        )
        upper = np.maximum(lo_hi, hi_hi)
        return np.fmax(lower, shape.min_lb), upper


# --------------------------------------------------------------------------------------------------
# The platform check

_special_checked: list[bool] = []


def check_special() -> None:
    """Check the platform assumptions of the GELU enclosures — scipy.special.erfc within (ERFC_ULPS
    + 2y₊²) ulp on [−7.2, 26.3] and np.exp within EXP_ULPS ulp on [−560, 0] — against Arb balls on a
    fixed sample, once per process (about 20 ms). InternalError where one fails: never a certificate
    on such a machine."""
    with FLINT_LOCK:
        if not _special_checked:
            _check_special()


def _check_special() -> None:
    import flint

    rng = np.random.default_rng(0)
    erfc_points = np.concatenate(
        [rng.uniform(-7.2, 26.3, 300), rng.uniform(0.4, 1.2, 100), np.logspace(-17, 1.4, 40)]
    )
    erfc_points = np.concatenate([erfc_points, -np.logspace(-17, 0.85, 20), [0.0]])
    exp_points = np.concatenate([-rng.uniform(0, 560, 200), -np.logspace(-17, 2.7, 40), [0.0]])
    old = flint.ctx.prec
    flint.ctx.prec = 128
    try:
        checks = (
            (
                "scipy.special.erfc",
                special.erfc,
                flint.arb.erfc,
                erfc_points,
                lambda y: ERFC_ULPS + 2 * y * y,
            ),
            ("np.exp", np.exp, flint.arb.exp, exp_points, lambda y: EXP_ULPS),
        )
        for name, fn, arb_fn, points, ulps in checks:
            for x, y in zip(points.tolist(), fn(points).tolist()):
                exact = arb_fn(flint.arb(x))
                if not abs(flint.arb(y) - exact) <= ulps(x) * U * abs(exact):
                    raise InternalError(
                        f"{name}({x!r}) = {y!r} is off by more than the {ulps(x):.0f}·2^-53 "
                        "relative error "
                        "the rigorous GELU bounds assume on this platform"
                    )
    finally:
        flint.ctx.prec = old
    _special_checked.append(True)
