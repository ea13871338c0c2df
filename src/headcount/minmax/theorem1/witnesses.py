"""Heads on which Theorem 1's chain runs to its end: uniform attention (every α equal, so the
whole alphabet is both a non-decreasing and a non-increasing run) with values that still let a
linear classifier read the minimum. Tokens 1..M, lists of length n.

    identity_head(M, n)       d = M, v_ω = e_ω: supports min and max; the chain's process only
                              grows (R = N), and the bound holds by dimension (d > N/2)
    moment_curve_head(M, n)   d = 2, v_ω = (a_ω, a_ω²) with a_ω = K^(M−ω), K = 2^k ≥ 2n:
                              supports min; the process replaces at rank 2 (N − 2 times), and the
                              bound holds by norm (d·(p + log₂ ℓ) > N)

Why moment_curve_head supports min: with minimum x the output's slope z₂/z₁ = Σh·a²/Σh·a lies in
[a_x/(1 + (n−1)/K), a_x], and the classifier θ_i = (−a_i², 2a_i) (the tangent of s ↦ s² at a_i)
picks the i whose a_i is nearest on the ratio scale — x, since the intervals sit inside
(a_x/2 + a_x/(2K), a_x]. Every number is a power of two, so float64 holds the head exactly; the
exact verifier confirms both heads in the tests.
"""

from __future__ import annotations

import numpy as np

from headcount.common.errors import InputError
from headcount.minmax.model import Classifier, MinMaxModel, TokenHead, TokenLayer
from headcount.minmax.task import check_sizes


def _model(values: np.ndarray, theta_min: np.ndarray, theta_max: np.ndarray) -> MinMaxModel:
    head = TokenHead(np.zeros(values.shape[0]), values)
    return MinMaxModel(TokenLayer((head,)), Classifier(theta_min), Classifier(theta_max))


def identity_head(M: int, n: int) -> MinMaxModel:
    """Uniform attention, v_ω = e_ω; θ^min_x = e_x − n·Σ_{ω<x} e_ω, θ^max mirrored."""
    check_sizes(M, n)
    theta_min, theta_max = np.eye(M), np.eye(M)
    for x in range(M):
        theta_min[x, :x] = -n
        theta_max[x, x + 1 :] = -n
    return _model(np.eye(M), theta_min, theta_max)


def moment_curve_head(M: int, n: int) -> MinMaxModel:
    """Uniform attention, v_ω = (a_ω, a_ω²), a_ω = K^(M−ω), θ^min_i = (−a_i², 2a_i); its max
    classifier is the min one mirrored (it does not support max)."""
    check_sizes(M, n)
    k = (2 * n - 1).bit_length()  # K = 2^k ≥ 2n
    if 3 * k * (M - 1) > 1000:  # the logits ⟨θ_i, v_ω⟩ reach 2^(3k(M−1)): keep them finite
        raise InputError(
            f"moment_curve_head at M = {M}, n = {n} needs logits up to 2^{3 * k * (M - 1)}; "
            "allowed up to 2^1000 (3·k·(M−1) ≤ 1000 with 2^k ≥ 2n)"
        )
    a = np.array([2.0 ** (k * (M - w)) for w in range(1, M + 1)])
    theta = np.stack([-(a * a), 2 * a], axis=1)
    return _model(np.stack([a, a * a], axis=1), theta, theta[::-1].copy())
