"""Midpoint–radius interval arithmetic in float64: the primitives every rigorous bound is built
from.

A quantity is carried as (mid, rad) with the guarantee that the real value lies in [mid − rad, mid +
rad]. Each step's bound holds on its own, from the floating-point error model with underflow: a
rounded product or quotient is exact·(1 + δ) + η with |δ| ≤ u = 2^-53 and |η| ≤ 2^-1075 (a float dot
product of length d therefore errs by at most γ_d·Σ|a_i b_i| + d·2^-1074, γ_d = d·u/(1 − d·u)); sums
that land in the subnormal range are exact; a radius computed from non-negative terms is inflated by
a relative SAFETY margin that dominates its own rounding, plus an absolute term for every product in
it that may have underflowed. A radius is 0 only where the value is provably exact; a NaN or
overflow makes it +inf.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from headcount.core.numbers.precision import round_fixed

U = 2.0**-53
TINY = 2.0**-1074  # the smallest subnormal: a product that underflows loses at most half of it
SAFETY = 1e-9  # relative inflation of every computed radius (≫ the radius computation's own error)


class Box(NamedTuple):
    """A rigorous enclosure: every real value the model computes lies in [mid − rad, mid + rad],
    entrywise (float64 arrays of one shape, or broadcasting). A tuple, so `mid, rad = box` reads
    it."""

    mid: np.ndarray
    rad: np.ndarray


def gamma(d) -> float:
    return d * U / (1 - d * U)


def inflate(rad: np.ndarray) -> np.ndarray:
    """Inflate a computed radius; a radius computed as exactly 0 stays 0 (exact quantities), and a
    NaN radius (from inf·0 when a box is unbounded) becomes +inf, so nothing downstream treats it as
    0."""
    rad = rad * (1 + SAFETY) + np.where(rad > 0, 1e-300, 0.0)
    return np.where(np.isnan(rad), np.inf, rad)


def outward(lo: np.ndarray, hi: np.ndarray, ulps: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """[lo, hi] widened by `ulps` units in the last place each way: turns endpoints computed with
    that many roundings (each within half an ulp) into rigorous ones."""
    for _ in range(ulps):
        lo, hi = np.nextafter(lo, -np.inf), np.nextafter(hi, np.inf)
    return lo, hi


def box_from_interval(lo: np.ndarray, hi: np.ndarray) -> Box:
    """(mid, rad) of a box containing [lo, hi], rounding outward; a point interval keeps radius
    0."""
    with np.errstate(invalid="ignore", over="ignore"):
        mid = (
            lo / 2 + hi / 2
        )  # any float will do (the radius covers both ends); this one never overflows
        rad = np.maximum(hi - mid, mid - lo)
    rad = np.where(rad > 0, np.nextafter(rad, np.inf), rad)
    return Box(mid, np.where(np.isnan(rad) | (lo > hi), np.inf, rad))


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


def exact_dot(a: np.ndarray, b: np.ndarray) -> bool:
    """True when every product and partial sum of a @ b is a float64 number: dyadic entries whose
    products share a grid 2^-(fa+fb) no finer than 2^-1000 and whose absolute sums stay below 2^53
    on that grid. fa = fraction_bits(a) is not computed (a is the data, large): the test is whether
    a·2^E is integral for the largest E the bound allows, E + fb ≤ 1000 — the same answer in one
    pass."""
    fb = fraction_bits(b)
    if fb > 1000 or not np.all(np.isfinite(a)):
        return False
    bound = float((np.abs(a).max(initial=0) * np.abs(b).max(initial=0)) * max(a.shape[-1], 1))
    if bound == 0:
        return fraction_bits(a) + fb <= 1000
    if not bound * 2.0**fb < 2.0**53:
        return False
    E = min(1000 - fb, int(np.floor(53 - fb - np.log2(bound))))
    while (
        E > 0 and not bound * 2.0 ** (E + fb) < 2.0**53
    ):  # log2's rounding: step down to the exact E
        E -= 1
    scaled = a * 2.0**E  # exact: |a|·2^E < 2^53 (b's nonzero entries are ≥ 2^-fb)
    return bool(np.array_equal(scaled, np.round(scaled)))


def underflow_count(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """How many products a_i·b_ij are non-zero in each entry of a @ b (each may lose ≤ 2^-1075 to
    underflow)."""
    return (a != 0).astype(np.float64) @ (b != 0).astype(np.float64)


def affine_bounds(
    mid: np.ndarray, rad: np.ndarray, W: np.ndarray, b: np.ndarray | None = None
) -> Box:
    """Bounds on x W (+ b) for x in the box (mid, rad), W and b exact float64."""
    absW = np.abs(W)
    out_mid = mid @ W
    if exact_dot(mid, W):
        out_rad = np.zeros_like(out_mid)
    else:
        out_rad = gamma(W.shape[0] + 1) * (np.abs(mid) @ absW) + W.shape[0] * TINY
    if np.any(rad):
        out_rad = out_rad + rad @ absW + underflow_count(rad, W) * TINY
    if b is not None:
        out_mid, out_rad = add_bounds(out_mid, out_rad, np.broadcast_to(b, out_mid.shape), 0.0)
    return Box(out_mid, inflate(out_rad))


def add_bounds(a_mid, a_rad, b_mid, b_rad) -> Box:
    """Sum of two boxes; the rounding error of the midpoint sum is computed exactly (TwoSum)."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = a_mid + b_mid
        b_virtual = out - a_mid
        err = (a_mid - (out - b_virtual)) + (b_mid - b_virtual)
        rad = a_rad + b_rad + np.abs(err) * (1 + 4 * U)
    return Box(out, inflate(np.where(np.isfinite(out), rad, np.inf)))


def mul_bounds(a_mid, a_rad, b_mid, b_rad) -> Box:
    """Bounds on a·b (entrywise) for a and b in their boxes (a gated MLP's gate times its up
    projection): |a·b − a_m·b_m| ≤ |a_m|·b_r + a_r·|b_m| + a_r·b_r, plus the rounding of a_m·b_m;
    a TINY for a product that may underflow. Radius 0 only for two points one of which is 0."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = a_mid * b_mid
        rad = np.abs(a_mid) * b_rad + a_rad * np.abs(b_mid) + a_rad * b_rad + U * np.abs(out)
        rad = rad + np.where((a_mid != 0) & (b_mid != 0), TINY, 0.0)
        rad = rad + np.where((a_rad > 0) | (b_rad > 0), TINY, 0.0)
    return Box(out, inflate(np.where(np.isfinite(out), rad, np.inf)))


def quantize_bounds(mid: np.ndarray, rad: np.ndarray, bits: int) -> Box:
    """Image of the box under fixed:p rounding: round_fixed is exact on floats and monotone, so the
    (outward-rounded) endpoints map to the endpoints; an unbounded box maps into [−2^p, 2^p]."""
    rad = np.where(np.isnan(rad), np.inf, rad)
    if not rad.any():
        return Box(round_fixed(mid, bits), np.zeros_like(mid))
    with np.errstate(invalid="ignore", over="ignore"):
        lo, hi = outward(mid - rad, mid + rad)
    lo, hi = np.where(rad > 0, lo, mid), np.where(rad > 0, hi, mid)
    qlo, qhi = round_fixed(lo, bits), round_fixed(hi, bits)
    # (qlo + qhi)/2 and (qhi − qlo)/2 are exact while both fit 53 bits on the 2^-(p+1) grid; else
    # outward
    fits = np.maximum(np.abs(qlo), np.abs(qhi)) * 2.0 ** (bits + 1) < 2.0**52
    mid, rad = box_from_interval(qlo, qhi)
    return Box(np.where(fits, (qlo + qhi) / 2, mid), np.where(fits, (qhi - qlo) / 2, rad))


def scale_bounds(mid: np.ndarray, rad: np.ndarray, scale: float) -> Box:
    """Bounds on scale·x for x in the box (mid, rad): the rounding of mid·scale (with underflow) is
    added."""
    with np.errstate(invalid="ignore", over="ignore"):
        out = mid * scale
        rad = abs(scale) * rad + U * np.abs(out) + np.where(mid != 0, TINY, 0.0)
    return Box(out, inflate(np.where(np.isfinite(out), rad, np.inf)))
