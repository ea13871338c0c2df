"""Rigorous float64 building blocks of the min/max verifiers (verify.py): scaled products Θ·Vᵀ,
attention weights, logits and the one-head scan's gaps, each with a bound on its float64 error, so
that a decision is taken in float64 only where the bound proves it (everything else goes to exact
arithmetic, exact.py).

What is assumed and why each bound holds:

* Θ and the values are first scaled by powers of two so the largest |entry| of each lies in [1/2,
  1). That is a positive factor on every logit, so no sign changes, and afterwards no product, sum
  or logit can overflow (|C| ≤ d): values of 1e200 or 1e300 are no longer special. Scaling down can
  push tiny entries into the subnormal range; that, every underflowing product and sum, and
  flush-to-zero hardware lose at most 2^-1022 each, which the bounds carry as absolute terms
  (d·2^-1017 per entry of C).
* C̃ = fl(Θ'V'ᵀ) errs by at most γ_d·(|Θ'||V'|ᵀ) + that absolute term, in any summation order, with
  or without FMA.
* Attention weights: a score difference is rounded with relative error u; libm's exp is assumed
  within 4 ulp on normal results (glibc documents < 1 ulp; the same assumption as
  core/passes/bounds.py). Where a computed exponent is ≥ −700 the weight is normal and carries a
  relative bound; where it is < −700 the true weight is < e^-699 < 2^-1008 and is covered by an
  absolute term instead (weights below 2^-1022 never rely on the relative model).
* Every other operation is one rounding (relative u, or an absolute 2^-1022 where it underflows).
  Each bound is inflated by a few ulp to cover its own rounding; a NaN anywhere is never "proven"
  (every proof is a strict comparison, false for NaN), so it falls through to the exact decision.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import log

import numpy as np

from headcount.core.attention import check_libm
from headcount.minmax.model import TokenLayer

U = 2.0**-53
#: absolute allowance for an attention weight whose computed exponent is below −700 (its true value
#: is < e^-699 < 2^-1008, and nothing relative is claimed about it); above −700 weights are normal
#: floats
TINY_WEIGHT = 2.0**-1000
FLOAT_MAX = float(np.finfo(np.float64).max)


def _exponent(a: np.ndarray) -> int:
    """e with max|a|·2^-e in [1/2, 1) (0 for an all-zero array)."""
    m = float(np.abs(a).max()) if a.size else 0.0
    return int(np.frexp(m)[1]) if m > 0 else 0


def to_original(x: float, shift: int) -> float:
    """x·2^shift as a float, saturating at ±FLOAT_MAX (a JSON number, never inf)."""
    with np.errstate(over="ignore"):
        y = float(np.ldexp(x, shift))
    return (
        float(np.clip(y, -FLOAT_MAX, FLOAT_MAX))
        if np.isfinite(x)
        else (FLOAT_MAX if x > 0 else -FLOAT_MAX)
    )


@dataclass(frozen=True)
class Products:
    """C_k = fl(Θ'·V'_kᵀ) per head with Θ' = Θ·2^-eθ and V'_k = V_k·2^-ev (one ev for all heads), so
    that ⟨θ_i, v^k_ω⟩ = 2^shift·(true C'_k[i, ω]) and |C_k − true C'_k| ≤ E_k entrywise (module
    docstring)."""

    C: tuple[np.ndarray, ...]  # [M M] per head: C[i, ω] ≈ ⟨θ_i, v_ω⟩·2^-shift
    E: tuple[np.ndarray, ...]  # [M M] per head: rigorous bound on the error of C
    shift: int

    @property
    def c_max(self) -> float:
        return max(float(np.abs(c).max()) for c in self.C)

    @property
    def e_max(self) -> float:
        return max(float(e.max()) for e in self.E)


def scaled_products(theta: np.ndarray, values: list[np.ndarray]) -> Products:
    """Θ·Vᵀ for every head, scaled by powers of two into a range where nothing overflows, with
    bounds.

    After scaling |θ'|, |v'| < 1, so |products| < 1 and |C| < d. The bound per entry is
    γ_d·(|Θ'||V'|ᵀ) (any summation order, FMA or not; the computed |Θ'||V'|ᵀ may itself be low by a
    factor 1 − γ_d, hence 2(d+1)u) plus d+1 absolute allowances of 2^-1017 for the scaling to
    subnormals and every product or sum that underflows (each loses < 2^-1022, even with
    flush-to-zero)."""
    d = theta.shape[1]
    e_t = _exponent(theta)
    e_v = max(_exponent(v) for v in values)
    with np.errstate(under="ignore"):
        t = np.ldexp(theta, -e_t)
        t_abs = np.abs(t)
        cs, es = [], []
        for v in values:
            v = np.ldexp(v, -e_v)
            cs.append(t @ v.T)
            es.append(2 * (d + 1) * U * (t_abs @ np.abs(v).T) + (d + 1) * 2.0**-1017)
    return Products(tuple(cs), tuple(es), e_t + e_v)


def pair_weights(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(w, 1 − w) = (σ(t), σ(−t)) for a float array t, no overflow: e = exp(−|t|) ∈ [0, 1], then
    1/(1+e) and e/(1+e). Error analysis in ``rho_weights``."""
    check_libm()  # the bounds assume exp within 4 ulp: checked once per process
    with np.errstate(over="ignore", under="ignore"):
        e = np.exp(-np.abs(t))
        big = 1.0 / (1.0 + e)
        small = e / (1.0 + e)
    pos = t >= 0
    return np.where(pos, big, small), np.where(pos, small, big)


def rho_weights(n: int) -> float:
    """Relative error bound of the weights of ``pair_weights(fl(fl(s_ω − s_x) + fl(ln(n−1))))``
    against the true σ(s_ω − s_x + ln(n−1)), in the regime |t̃| ≤ 700 (beyond it the true small
    weight is below e^-699 < 2^-1008: ``TINY_WEIGHT`` covers it absolutely and the large one is 1
    within that).

    t's error: ε ≤ 1.01u(|t̃| + |fl(s_ω − s_x)| + 8·ln(n−1)) ≤ 1.01u(1401 + 9 ln(n−1)) (log within 4
    ulp); σ changes by a relative e^ε − 1 ≤ 1.01ε (|d ln σ/dt| ≤ 1); computing σ(t̃): exp 8u, 1+e,
    the division: ≤ 20u. Rounded up generously."""
    eps = 1.01 * U * (1401 + 9 * log(n - 1))
    return 24 * U + 1.1 * eps


def gap_bound_matrix(prod: Products, rho: float) -> np.ndarray:
    """B with |G̃ − G| ≤ (1−w̃)(B_xx + B_yx) + w̃(B_xω + B_yω) + floor for the one-head scan (one
    head).

    With D̃ = fl(C̃_x· − C̃_y·): |D̃ − D| ≤ E_x· + E_y· + 1.01u|D̃|; weights err by ρ relative (+
    TINY_WEIGHT absolute, in the floor); two products and a sum round by 2u relative. Collecting the
    coefficient of each weight gives B = (1+ρ)E + (1.01ρ + 4u)|C̃|, inflated by 1 + 8u for the
    rounding of the bound."""
    C, E = prod.C[0], prod.E[0]
    return (1 + 8 * U) * ((1 + rho) * E + (1.01 * rho + 4 * U) * np.abs(C))


def _position_weights(scores: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Attention weights [batch n] of one head at the positions of lists x [batch n] (0-based
    tokens)."""
    check_libm()
    s = scores[x]
    with np.errstate(over="ignore", under="ignore"):
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


def logit_bounds(layer: TokenLayer, prod: Products, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Scaled logits L̃ [batch M] (true logits = 2^shift·L) of the layer on lists x [batch n]
    (0-based tokens), and a rigorous bound R [batch M] on |L̃ − L|.

    Position weights p_j = e^{s_j − s_max} / Σ e: the top position has exponent exactly 0, so the
    denominator is ≥ 1; a weight whose computed exponent is ≥ −700 errs by ≤ ρ_p relative (exponent
    rounding ≤ 700u, exp 8u, a sum of n terms, the division, doubled), one below −700 is < e^-699 <
    2^-1008
    and errs by ≤ a_p = 2^-1000 absolutely. L_i = Σ_k Σ_j p^k_j C_k[i, x_j], so
    |L̃_i − L_i| ≤ Σ_k Σ_j p̃^k_j·((γ + ρ_p)|C̃_k| + (1+ρ_p)E_k)[i, x_j]
                   + H·n·(a_p(|C|max + E max + 1) + 2^-1018),
    γ = γ_{n+H} covering the sums over positions and heads; the non-negative sum computing it is
    inflated
    by 2γ."""
    M, H, n = layer.M, layer.n_heads, x.shape[1]
    gam = 2 * (n + H + 2) * U
    rho_p = (1600 + 3 * n) * U + n * TINY_WEIGHT
    a_p = TINY_WEIGHT
    L = np.zeros((x.shape[0], M), dtype=np.float64)
    K = np.zeros((x.shape[0], M), dtype=np.float64)
    for h, C, E in zip(layer.heads, prod.C, prod.E):
        p = _position_weights(h.scores, x)
        W = (1 + 8 * U) * ((gam + rho_p) * np.abs(C) + (1 + rho_p) * E)
        with np.errstate(under="ignore"):
            L += np.einsum("bn,bnm->bm", p, C.T[x])
            K += np.einsum("bn,bnm->bm", p, W.T[x])
    c0 = H * n * (a_p * (prod.c_max + prod.e_max + 1) + 2.0**-1018)
    return L, K * (1 + 2 * gam) + c0


def proven_below(L: np.ndarray, R: np.ndarray, ref: np.ndarray) -> np.ndarray:
    """[batch M] mask: class i is proven to have a smaller logit than class ref[b] (exact reals).

    R' = R(1+4u) + 2u|L̃| absorbs the rounding of the two float comparisons' operands, so
    fl(L̃_ref − L̃_i) > fl(R'_ref + R'_i) implies L_ref − L_i > 0. NaN compares false: never
    proven."""
    rows = np.arange(L.shape[0])
    Rp = R * (1 + 4 * U) + 2 * U * np.abs(L)
    return (L[rows, ref][:, None] - L) > (Rp[rows, ref][:, None] + Rp)


def scan_floor(prod: Products) -> float:
    """The absolute part of the scan's bound: the TINY_WEIGHT terms (a weight below e^-699 times |D|
    and E, |D| ≤ 2|C|) and three products or sums that may underflow."""
    return 8 * TINY_WEIGHT * (prod.c_max + prod.e_max + 1) + 2.0**-1019
