"""The rigorous bound on one attention head's output softmax(q kᵀ) v for q, k, v given as boxes,
written once.

Every function here runs on NumPy arrays and on torch tensors alike (on the CPU or a CUDA device):
it is written against the array API (`xp`, array_api_compat's namespace of its arrays) and the few
primitives of core.attention.array_ops, which hold no mathematics. The proofs are stated here, once;
core.passes.bounds states the error model. The two faces: core.attention.rigorous (NumPy arrays, the
libm check of NumPy) and core.attention.torch_backend (moves NumPy arrays to a device once per call,
checks torch's libm there).

* ``dense_bound`` — the reference algorithm (the first release's): one [batch query key] array per
  quantity, the masked keys included.
* core.attention.blocked_bound — the same bound computed in query blocks, built on weight_error,
  query_slack and the constants here.

The decisions that need the whole head (the query slack, whether the scores are tame or exact, which
terms have a radius) are taken on the NumPy arrays the caller holds (`host`), the arithmetic on
`box`: the same arrays for NumPy, their copies on the device for torch.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any, NamedTuple

import numpy as np

from headcount.common.errors import InternalError
from headcount.core.attention.array_ops import array_ops
from headcount.core.numbers import SAFETY, TINY, U, exact_dot, gamma

FAR = (
    -500.0
)  # keys whose shifted score is provably below this are bounded as a group (weight < e^-500)
RHO_CAP = (
    50.0  # a near key whose exponent error exceeds this makes its row unbounded (no useful bound)
)
FAR_WEIGHT = 2.0**-640  # ≥ e^(FAR + RHO_CAP): a far key's weight relative to the whole near sum
FAR_BLOCKED = (
    -64.0
)  # blocked_bound's far cut: a far key's weight < e^(-64 + ρ_top) of the top key's
SPARSE_SHARE = (
    0.25  # a query block whose near candidates exceed this share of its keys is bounded densely
)
LIBM_ULPS = 4  # the accuracy of exp and expm1 the bounds assume (glibc documents < 1 ulp)

Array = Any  # a NumPy array or a torch tensor


# --- the platform assumption: exp and expm1 within LIBM_ULPS ulp
# ------------------------------------------


def libm_points() -> tuple[np.ndarray, np.ndarray]:
    """(exp points, expm1 points) the libm checks of both backends test: exp on the shifted scores
    of near keys and the far weight (down to FAR − RHO_CAP − 1, and near 0), expm1 on ±ρ up to
    RHO_CAP (and tiny ρ); fixed by a seed."""
    rng = np.random.default_rng(0)
    exp_points = np.concatenate(
        [-rng.random(300) * (RHO_CAP - FAR + 1), -np.logspace(-17, 0, 60), [0.0]]
    )
    expm1_points = np.concatenate([rng.random(150) * RHO_CAP, np.logspace(-17, 1, 60)])
    return exp_points, np.concatenate([expm1_points, -expm1_points])


@contextlib.contextmanager
def arb_precision(bits: int = 128):
    """flint's (global) working precision set to `bits` for the block; the caller holds
    FLINT_LOCK."""
    import flint

    old = flint.ctx.prec
    flint.ctx.prec = bits
    try:
        yield
    finally:
        flint.ctx.prec = old


def check_values(
    name: str, points: np.ndarray, values: np.ndarray, exact: list, where: str = ""
) -> None:
    """InternalError unless every values[i] (the platform's `name` at points[i]) lies within
    LIBM_ULPS ulp of the Arb ball exact[i] (under arb_precision)."""
    import flint

    for x, y, ball in zip(points.tolist(), values.tolist(), exact):
        if not abs(flint.arb(y) - ball) <= LIBM_ULPS * U * abs(ball):
            raise InternalError(
                f"{name}({x!r}) = {y!r}{where} is off by more than {LIBM_ULPS} ulp: the rigorous "
                "bounds "
                "assume a libm at least that accurate"
            )


# --- the bound
# -------------------------------------------------------------------------------------------


class Terms(NamedTuple):
    """Which terms of ρ and of the radius can be nonzero: the float scores are not exact
    (core.numbers.exact_dot), q, k or v has a radius."""

    inexact: bool
    q_rad: bool
    k_rad: bool
    v_rad: bool


def terms_of(
    qm: np.ndarray, qr: np.ndarray, km: np.ndarray, kr: np.ndarray, vr: np.ndarray
) -> Terms:
    """Terms of the NumPy arrays [.. pos d] of q, k, v (their mids and radii)."""
    with np.errstate(invalid="ignore", over="ignore"):
        exact = exact_dot(qm, np.swapaxes(km, -1, -2))
    return Terms(not exact, bool(qr.any()), bool(kr.any()), bool(vr.any()))


def inflate_radius(rad: Array) -> Array:
    """core.numbers.inflate on arrays of either kind: a computed radius inflated (0 stays 0), NaN →
    +inf."""
    ops = array_ops(rad)
    xp = ops.xp
    rad = rad * (1 + SAFETY) + xp.astype(rad > 0, rad.dtype) * 1e-300
    return ops.fill_where_(rad, xp.isnan(rad), math.inf)


def near_theta(near):
    """θ ≥ |ᾱ_j/α̂_j − 1| for α̂_j = fl(ŵ_j / fl(Σ_k ŵ_k)) with ŵ_k = 0 (exactly) outside the row's
    `near` keys (their count, multiplicity-weighted: [.. 1] float). The sum's terms are
    non-negative, so a partial sum is 0 only where all its terms are: an addition with such a
    partial sum is exact, and on any summation tree a term meets at most near − 1 roundings (its
    siblings along the path are disjoint subtrees, each holding a non-zero term), whatever order
    NumPy or torch adds in; one more for the division, one for a cell's product ŵ·mult: γ_{near+2}.
    Not the visible key count: at n = 2^18 that γ_n alone moved a head output by half a grid step
    of fixed:19 (benchmarks/README.md, "Key pruning")."""
    return gamma(near + 2)


def weight_error(alpha: Array, rho: Array, theta, mult: Array | None = None) -> tuple[Array, Array]:
    """(e, unbounded): e_j ≥ |α_j − α̂_j| for every α_j = ᾱ_j e^{η_j} / Σ_k ᾱ_k e^{η_k} with |η_k| ≤
    ρ_k, where ᾱ is a probability vector with |ᾱ_j/α̂_j − 1| ≤ θ (α̂ the float weights, [.. key]; θ
    broadcasts against [.. 1]); unbounded marks rows where R⁻ < 1/2 (no useful bound). Consumes
    `rho` (overwritten).

    Two bounds on |α_j/ᾱ_j − 1|, the smaller taken (both hold):

    * κ_j (the first release's): α_j/ᾱ_j ∈ [e^{-ρ_j}/R⁺, e^{ρ_j}/R⁻] with R^± = 1 + B^±, B^± =
      Σ_k ᾱ_k expm1(±ρ_k) (as Σ ᾱ = 1), so κ_j = max((expm1(ρ_j) − B⁻)/(1 + B⁻), (B⁺ −
      expm1(−ρ_j))/(1 + B⁺)).
    * λ_j (key j against the others, pairwise_error): α_j/ᾱ_j = 1/(1 + C_j), C_j = Σ_{k≠j} ᾱ_k
      expm1(η_k − η_j), and |η_k − η_j| ≤ ρ_k + ρ_j. κ_j lets η_j in R vary apart from the η_j
      above it; λ_j does not, so it carries a factor 1 − ᾱ_j: a key holding nearly all the weight
      has nearly exact weight however large its own ρ_j (at n = 2^20 the layer-2 scores of the
      two-layer construction err by 10⁻⁴ from the dot product's rounding, and κ_j moved the
      copied digits by 0.006).

    The numerators are sums of non-negative terms: each float step errs by a small relative
    amount, bounded explicitly: B^± from α̂ instead of ᾱ (θ), expm1 and the product (5u), the sum
    (γ_n), then three steps (γ_8). Finally |α_j − α̂_j| ≤ |α_j − ᾱ_j| + |ᾱ_j − α̂_j| ≤ α̂_j (κ_j +
    θ)/(1 − θ).

    `mult` [.. key], when given: column j stands for mult_j keys of equal weight and error (a cell
    of identical keys), so the sums B^± weigh it mult_j times (one more rounded product per
    term); C_j leaves out one key of the cell."""
    ops = array_ops(alpha)
    xp = ops.xp
    keys = alpha.shape[-1]
    grow = xp.expm1(rho)
    rho *= -1.0
    shrink = ops.expm1_(rho)
    rel = 2 * (theta + gamma(keys + (6 if mult is None else 7)))
    weights = alpha if mult is None else alpha * mult
    b_plus = xp.sum(weights * grow, axis=-1, keepdims=True) * (1 + rel)
    b_minus = xp.sum(weights * shrink, axis=-1, keepdims=True) * (
        1 + rel
    )  # ≤ 0, now at least as negative
    unbounded = (1 + b_minus)[..., 0] < 0.5
    rows = alpha.shape[-2] if alpha.ndim >= 2 else 1
    step = max(1, WEIGHT_BLOCK // max(1, math.prod(alpha.shape[:-2]) * keys))
    for start in range(0, rows, step):  # in row blocks: λ's temporaries stay small
        block = (..., slice(start, start + step), slice(None)) if alpha.ndim >= 2 else (...,)
        th, rl, b_p, b_m = (_rows_of(x, block, rows) for x in (theta, rel, b_plus, b_minus))
        a = alpha[block]
        pairwise = pairwise_error(a, grow[block], shrink[block], (b_p, b_m), th, rl)
        upper = grow[block]  # a view: κ is written over grow
        upper -= b_m
        upper /= 1 + b_m  # e^{ρ_j}/R⁻ − 1
        lower = shrink[block]
        lower *= -1.0
        lower += b_p
        lower /= 1 + b_p  # 1 − e^{-ρ_j}/R⁺
        kappa = ops.maximum_(upper, lower)
        kappa *= 1 + gamma(8)
        kappa = ops.minimum_(kappa, pairwise)
        kappa += th
        kappa /= 1 - th
        kappa *= (1 + SAFETY) * a
    return grow, unbounded


WEIGHT_BLOCK = 1 << 20  # entries of [.. query key] weight_error works on at a time


def _rows_of(x, block: tuple, rows: int):
    """x's part for the row block: a float as it is, an array [.. query 1] (or [.. 1 1]) sliced
    where it has the query axis."""
    if isinstance(x, (int, float)) or getattr(x, "ndim", 0) < 2 or x.shape[-2] != rows:
        return x
    return x[block]


def pairwise_error(alpha: Array, grow: Array, shrink: Array, b: tuple, theta, rel) -> Array:
    """λ_j ≥ |α_j/ᾱ_j − 1| of weight_error's docstring, from α̂ = `alpha`, grow = expm1(ρ), shrink =
    expm1(−ρ) (floats, within 4 ulp) and b = (B⁺, B⁻) rounded outward with the relative slack
    `rel` (≥ 2θ + 12u).

    C_j ∈ [C⁻_j, C⁺_j], C^±_j = Σ_{k≠j} ᾱ_k expm1(±(ρ_k + ρ_j)) = e^{±ρ_j} X^±_j + expm1(±ρ_j)(1 −
    ᾱ_j), X^±_j = B^± − ᾱ_j expm1(±ρ_j) (expm1(a + b) = e^b expm1(a) + expm1(b), and Σ_{k≠j} ᾱ_k =
    1 − ᾱ_j). So α_j/ᾱ_j − 1 = −C_j/(1 + C_j) lies in [−C⁺/(1 + C⁺), −C⁻/(1 + C⁻)], and λ_j =
    max(C⁺_j, |C⁻_j|/(1 − |C⁻_j|)) (+inf where 1 − |C⁻_j| ≤ 0). Roundings: ᾱ_j expm1(±ρ_j) is
    taken at least α̂_j|expm1(±ρ_j)|(1 − rel) (θ, 4 ulp, the product); 1 − ᾱ_j ≤ fl(1 − α̂_j) +
    fl(θ α̂_j), each within u (α̂_j ≤ 1: the float sum of non-negative terms is no smaller than
    one of them); e^{-ρ_j} ≤ 1; expm1's 4 ulp (8u) and each further step of non-negative terms
    (≤ 6) are covered by γ_16, underflow by 4·2^-1074, the division by γ_3 (and its denominator
    rounded down by the same)."""
    ops = array_ops(alpha)
    b_plus, b_minus = b
    # in place where it stays clear: the arrays are [.. query key] (the reference holds [n n])
    one_minus = 1.0 - alpha
    one_minus += alpha * theta
    one_minus *= 1 + 4 * U
    one_minus += TINY  # 1 − ᾱ_j, rounded up (θ·α̂ may underflow)
    c_plus = alpha * grow
    c_plus *= -(1 - rel)
    c_plus += b_plus  # X⁺
    ops.fill_where_(c_plus, c_plus < 0, 0.0)
    c_plus *= 1 + grow
    c_plus += grow * one_minus  # C⁺, up to γ_16
    c_plus *= 1 + gamma(16)
    c_plus += 4 * TINY  # products that underflowed
    c_minus = alpha * shrink
    c_minus *= 1 - rel
    c_minus -= b_minus  # |X⁻|: shrink, b_minus ≤ 0
    ops.fill_where_(c_minus, c_minus < 0, 0.0)
    c_minus -= shrink * one_minus  # |C⁻|, up to γ_16
    del one_minus
    c_minus *= 1 + gamma(16)
    c_minus += 4 * TINY
    denominator = 1.0 - c_minus
    denominator *= 1 - gamma(3)  # 1 − |C⁻| rounded down
    with ops.quiet():
        c_minus /= denominator
    c_minus *= 1 + gamma(3)
    ops.fill_where_(c_minus, denominator <= 0, math.inf)
    return ops.maximum_(c_minus, c_plus)


def dense_bound(q, k, v, allowed: Array, terms: Terms):
    """Bounds (mid, rad) [.. query d_value] on softmax(q kᵀ) v for q, k, v given as (mid, rad) pairs
    [.. pos d], `allowed` [query key] the keys each query sees, `terms` those of the boxes
    (terms_of).

    Per query, with c the largest float score, t_j = s_j − c is the exact shifted score and ŝ_j its
    float value; ρ_j bounds |t_j − ŝ_j| plus exp's error (the score box, the dot product's and the
    subtraction's rounding). Keys with ŝ_j + ρ_j < FAR are *far*: their total weight is below
    n·e^FAR against the largest key's e^-ρ, so they move z by at most FAR_WEIGHT·n·2·max|v| (an
    absolute term). The other keys are *near*: ŵ_j = exp(ŝ_j) is a normal float there and the true
    weights are w_j = ŵ_j·e^{η_j}, |η_j| ≤ ρ_j. With ᾱ the exact normalisation of ŵ over the near
    keys, the computed α̂_j = fl(ŵ_j / Σŵ) is within θ = γ_{m+2} of ᾱ_j (m the row's near keys: the
    far and masked ones add exact zeros to the sum, near_theta), and weight_error bounds
    |α_j − α̂_j|. Rows where an assumption fails (a non-finite score, a near key with ρ_j > RHO_CAP,
    R⁻ < 1/2) get radius +inf.

    The [.. query key] arrays dominate the cost, so they are updated in place where that stays
    clear."""
    ops = array_ops(q[0])
    xp = ops.xp
    (qm, qr), (km, kr), (vm, vr) = q, k, v
    kmT, krT = xp.matrix_transpose(km), xp.matrix_transpose(kr)
    with ops.quiet():
        s_hat = ops.fill_where_(qm @ kmT, ~allowed, -math.inf)  # [.. query key]
        top = xp.max(s_hat, axis=-1, keepdims=True)  # [.. query 1]
        s_hat -= top  # ŝ_j ≤ 0; masked keys −inf
        # ρ_j: the score box, the dot product's rounding (with underflow), the subtraction, exp (4
        # ulp)
        rho = xp.abs(s_hat)
        rho *= U
        if terms.inexact:
            rho += gamma(qm.shape[-1] + 1) * (xp.abs(qm) @ xp.abs(kmT))
        if terms.k_rad:
            rho += xp.abs(qm) @ krT
        if terms.q_rad:
            rho += qr @ (xp.abs(kmT) + krT)
        rho *= 1 + SAFETY
        rho += 4.5 * U + 2.0**-1000  # exp's error; every product above that may have underflowed
        near = s_hat + rho >= FAR - 1  # (the -1 covers the rounding of that sum)
        near &= allowed
        bad = ~xp.isfinite(top[..., 0]) | xp.any(allowed & ~xp.isfinite(rho), axis=-1)
        bad |= xp.any(near & (rho > RHO_CAP), axis=-1)  # [.. query]
        n_far = xp.astype(xp.count_nonzero(allowed & ~near, axis=-1, keepdims=True), xp.float64)
        ops.fill_where_(
            rho, ~near, 0.0
        )  # far and masked keys leave the relative model (α̂ = 0 there)
        alpha = xp.exp(
            ops.fill_where_(s_hat, ~near, -math.inf)
        )  # ŵ: ŝ_j ≥ FAR − 1 − RHO_CAP, a normal float
        alpha /= xp.sum(alpha, axis=-1, keepdims=True)  # α̂ [.. query key]
        # θ [.. query 1]: α̂ against ᾱ (the sum's and the division's rounding) over the near keys
        n_near = xp.astype(xp.count_nonzero(near, axis=-1, keepdims=True), xp.float64)
        kappa, too_wide = weight_error(
            alpha, rho, near_theta(n_near)
        )  # α̂_j κ_j; far and masked keys have α̂_j = 0
        bad |= too_wide
        z_mid = alpha @ vm
        n = vm.shape[-2]
        abs_v = xp.abs(vm)
        # the value sums have a non-zero term for near keys only (near_theta's argument)
        z_rad = kappa @ abs_v + gamma(n_near + 2) * (alpha @ abs_v) + 3 * n * TINY
        if terms.v_rad:
            z_rad += (alpha + kappa) @ vr
        v_max = xp.max(abs_v + vr, axis=-2, keepdims=True)  # [.. 1 d]
        z_rad += n_far * FAR_WEIGHT * 2 * v_max
        ops.fill_where_(z_rad, bad[..., None], math.inf)
    return z_mid, inflate_radius(z_rad)


def query_slack(qm, qr, km, kr) -> np.ndarray:
    """R of blocked_bound's docstring, per query [.. query] (NumPy arrays): ρ_j's terms other than
    u|ŝ_j| with |k_j| and rad(k_j) at their maximum over the keys, plus exp's error, with a relative
    slack of 10⁻⁶ that covers the rounding of both this sum and ρ_j's own (each within γ_{d+2} of
    the exact sum of non-negatives)."""
    d = qm.shape[-1]
    k_abs = np.abs(km).max(axis=-2)[..., None, :]  # [.. 1 d]
    k_rad = kr.max(axis=-2)[..., None, :]
    q_abs = np.abs(qm)
    with np.errstate(invalid="ignore", over="ignore"):
        terms = (q_abs * (gamma(d + 1) * k_abs + k_rad) + qr * (k_abs + k_rad)).sum(axis=-1)
        slack = (terms * (1 + SAFETY) + 4.5 * U + 2.0**-1000) * (1 + 1e-6)
    return np.where(np.isnan(slack), np.inf, slack)


def scores_tame(qm, km) -> bool:
    """Whether every float score q_i·k_j is finite with |ŝ| < 2^40, shown from Σ_d |q_id| max_j
    |k_jd| < 2^39 (the float dot product is within a factor 1 + γ_d of its exact value), for NumPy
    arrays; NaN or ±inf in q or k fails the test. Saves a scan of every score block."""
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.all(np.abs(qm) @ np.abs(km).max(axis=-2)[..., None] < 2.0**39))
