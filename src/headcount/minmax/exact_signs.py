"""Exact signs of the quantities the verifiers decide, for near-ties that float64 cannot settle.

Every weight is a float64, i.e. an exact dyadic rational. A logit difference of a layer on a
histogram, multiplied by the (positive) product of the heads' softmax denominators, is an
"exponential polynomial" Σ_k c_k·exp(a_k) with rational c_k and rational exponents a_k (sums of
scores). After collecting equal exponents, Lindemann–Weierstrass (exp of distinct algebraic numbers
are linearly independent over the algebraic numbers) says it is zero iff every collected coefficient
is zero. Otherwise it is non-zero, and python-flint ball arithmetic at increasing precision proves
its sign. So the sign returned is exact.

Nothing here is rounded: every inner product and every difference of weights is taken in exact
rationals (python-flint fmpq, about ten times faster than Fraction; ``frac`` still gives a Fraction
for callers that want one) — a difference θ_i − θ_j taken in float64 first would already be rounded.
Exponents of any size are fine (arb balls carry arbitrary exponents: e^(−10^300) is a tiny ball, not
an underflow). The one way to get no answer is a non-zero sum whose sign is still unresolved at
65536 bits; that raises UndecidedError (a ValueError, so the CLI prints one line), never a wrong
sign. The sign itself is core/numbers/expsum.py's sign_exp_poly, shared with the exact fixed:p
evaluator.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

import flint
import numpy as np

from headcount.core.numbers import sign_exp_poly

ExpPoly = dict  # {fmpq exponent: fmpq coefficient}


def frac(a) -> Fraction:
    """The exact rational value of a float64 (or int), as a Fraction."""
    return Fraction(float(a)) if not isinstance(a, (int, np.integer)) else Fraction(int(a))


def rat(a) -> flint.fmpq:
    """The exact rational value of a float64, int, Fraction or fmpq, as an fmpq (the fast exact
    type)."""
    if isinstance(a, flint.fmpq):
        return a
    if isinstance(a, (int, np.integer)):
        return flint.fmpq(int(a))
    if isinstance(a, Fraction):
        return flint.fmpq(a.numerator, a.denominator)
    return flint.fmpq(*float(a).as_integer_ratio())


def exp_poly_mul(p: ExpPoly, q: ExpPoly) -> ExpPoly:
    out: dict = defaultdict(flint.fmpq)
    for a, c in p.items():
        for b, e in q.items():
            out[a + b] += c * e
    return {k: v for k, v in out.items() if v != 0}


def exp_poly_add(p: ExpPoly, q: ExpPoly) -> ExpPoly:
    out: dict = defaultdict(flint.fmpq, p)
    for a, c in q.items():
        out[a] += c
    return {k: v for k, v in out.items() if v != 0}


def sign_weighted_pair(s_a, c_a, s_b, c_b) -> int:
    """Exact sign of c_a·exp(s_a) + c_b·exp(s_b) for float scores and exact rational
    coefficients."""
    return sign_exp_poly(exp_poly_add({rat(s_a): rat(c_a)}, {rat(s_b): rat(c_b)}))


def exact_inner(a: np.ndarray, b: np.ndarray) -> flint.fmpq:
    """⟨a, b⟩ of two float64 vectors, exactly (an fmpq)."""
    total = flint.fmpq(0)
    for u, v in zip(a, b):
        if u != 0 and v != 0:
            total += rat(u) * rat(v)
    return total


def layer_gap_sign(
    heads, theta: np.ndarray, hist: dict[int, int], i: int, j: int, cache: dict | None = None
) -> int:
    """Exact sign of ⟨θ_i − θ_j, z(h)⟩ for a layer (heads: sequence of TokenHead) on histogram
    {0-based token: count}; i, j 0-based classes. cache: optional dict that keeps the exact inner
    products ⟨θ_i, v^k_ω⟩ between calls on the same layer and θ.

    ⟨θ_i − θ_j, z⟩ = Σ_k N_k / D_k with N_k = Σ_ω h_ω e^{s^k_ω} ⟨θ_i − θ_j, v^k_ω⟩ and D_k = Σ_ω h_ω
    e^{s^k_ω} > 0, so its sign is that of Σ_k N_k Π_{l≠k} D_l, an exponential polynomial. ⟨θ_i −
    θ_j, v⟩ is taken as ⟨θ_i, v⟩ − ⟨θ_j, v⟩ exactly: the float difference θ_i − θ_j may round."""
    cache = {} if cache is None else cache

    def inner(k: int, c: int, w: int) -> flint.fmpq:
        if (k, c, w) not in cache:
            cache[(k, c, w)] = exact_inner(theta[c], heads[k].values[w])
        return cache[(k, c, w)]

    nums, dens = [], []
    for k, h in enumerate(heads):
        num: dict = defaultdict(flint.fmpq)
        den: dict = defaultdict(flint.fmpq)
        for w, cnt in hist.items():
            a = rat(h.scores[w])
            num[a] += cnt * (inner(k, i, w) - inner(k, j, w))
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
