"""Exact signs of the quantities the verifiers decide, for near-ties that float64 cannot settle.

Every weight is a float64, i.e. an exact dyadic rational. A logit difference of a layer on a histogram,
multiplied by the (positive) product of the heads' softmax denominators, is an "exponential polynomial"
Σ_k c_k·exp(a_k) with rational c_k and rational exponents a_k (sums of scores). After collecting equal
exponents, Lindemann–Weierstrass (exp of distinct algebraic numbers are linearly independent over the
algebraic numbers) says it is zero iff every collected coefficient is zero. Otherwise it is non-zero, and
python-flint ball arithmetic at increasing precision proves its sign. So the sign returned is exact.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

import flint
import numpy as np

ExpPoly = dict  # {Fraction exponent: Fraction coefficient}


def frac(a) -> Fraction:
    """The exact rational value of a float64 (or int)."""
    return Fraction(float(a)) if not isinstance(a, (int, np.integer)) else Fraction(int(a))


def exp_poly_mul(p: ExpPoly, q: ExpPoly) -> ExpPoly:
    out: dict = defaultdict(Fraction)
    for a, c in p.items():
        for b, e in q.items():
            out[a + b] += c * e
    return {k: v for k, v in out.items() if v != 0}


def exp_poly_add(p: ExpPoly, q: ExpPoly) -> ExpPoly:
    out: dict = defaultdict(Fraction, p)
    for a, c in q.items():
        out[a] += c
    return {k: v for k, v in out.items() if v != 0}


def _fmpq(x: Fraction) -> flint.fmpq:
    return flint.fmpq(x.numerator, x.denominator)


def sign_exp_poly(p: ExpPoly, max_prec: int = 1 << 16) -> int:
    """Exact sign (−1, 0, +1) of Σ_a c_a·exp(a) (exponents already collected)."""
    terms = [(a, c) for a, c in p.items() if c != 0]
    if not terms:
        return 0
    top = max(a for a, _ in terms)
    prec = 64
    old = flint.ctx.prec
    try:
        while prec <= max_prec:
            flint.ctx.prec = prec
            total = flint.arb(0)
            for a, c in terms:
                total += flint.arb(_fmpq(c)) * flint.arb(_fmpq(a - top)).exp()
            if total > 0:
                return 1
            if total < 0:
                return -1
            prec *= 2
    finally:
        flint.ctx.prec = old
    raise ArithmeticError("sign of a non-zero exponential sum not resolved at 65536 bits")


def sign_weighted_pair(s_a, c_a, s_b, c_b) -> int:
    """Exact sign of c_a·exp(s_a) + c_b·exp(s_b) for float scores and exact rational coefficients."""
    return sign_exp_poly(exp_poly_add({frac(s_a): Fraction(c_a)}, {frac(s_b): Fraction(c_b)}))


def exact_inner(a: np.ndarray, b: np.ndarray) -> Fraction:
    """⟨a, b⟩ of two float64 vectors, exactly."""
    return sum((frac(u) * frac(v) for u, v in zip(a, b) if u != 0 and v != 0), Fraction(0))


def layer_gap_sign(heads, theta: np.ndarray, hist: dict[int, int], i: int, j: int) -> int:
    """Exact sign of ⟨θ_i − θ_j, z(h)⟩ for a layer (heads: sequence of TokenHead) on histogram
    {0-based token: count}; i, j 0-based classes.

    ⟨θ_i − θ_j, z⟩ = Σ_k N_k / D_k with N_k = Σ_ω h_ω e^{s^k_ω} ⟨θ_i − θ_j, v^k_ω⟩ and D_k = Σ_ω h_ω e^{s^k_ω} > 0,
    so its sign is that of Σ_k N_k Π_{l≠k} D_l, an exponential polynomial."""
    diff = theta[i] - theta[j]
    nums, dens = [], []
    for h in heads:
        num: dict = defaultdict(Fraction)
        den: dict = defaultdict(Fraction)
        for w, cnt in hist.items():
            a = frac(h.scores[w])
            num[a] += cnt * exact_inner(diff, h.values[w])
            den[a] += cnt
        nums.append({k: v for k, v in num.items() if v != 0})
        dens.append(dict(den))
    total: ExpPoly = {}
    for k in range(len(heads)):
        term = nums[k]
        for l in range(len(heads)):
            if l != k and term:
                term = exp_poly_mul(term, dens[l])
        total = exp_poly_add(total, term)
    return sign_exp_poly(total)
