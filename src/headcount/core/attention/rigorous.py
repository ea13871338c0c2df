"""Rigorous bounds on one attention head's output softmax(q kᵀ) v for q, k, v given as boxes.

Two implementations with the same guarantee (core.passes.bounds states the error model):

* ``dense_attention_bounds`` — the reference (the algorithm of the first release): one [batch query key]
  tensor per quantity, the masked half included.
* ``attention_bounds`` — the same bound computed in query blocks (core.blocked: only the keys a block can
  see, memory O(block·n)), with the near keys of each query gathered sparsely and the far keys accounted
  for as a group, never exponentiated.
"""

from __future__ import annotations

import numpy as np

from headcount.common.errors import InternalError
from headcount.core.attention.blocks import mask_diagonal, query_blocks
from headcount.core.attention.counters import ATTENTION
from headcount.core.numbers import FLINT_LOCK, SAFETY, TINY, U, exact_dot, gamma, inflate

FAR = -500.0  # keys whose shifted score is provably below this are bounded as a group (weight < e^-500)
RHO_CAP = 50.0  # a near key whose exponent error exceeds this makes its row unbounded (no useful bound)
FAR_WEIGHT = 2.0**-640  # ≥ e^(FAR + RHO_CAP): a far key's weight relative to the whole near sum
FAR_BLOCKED = -64.0  # attention_bounds' far cut: a far key's weight < e^(-64 + ρ_top) of the top key's


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
    rel = 2 * (theta + gamma(keys + 6))
    b_plus = (alpha * grow).sum(axis=-1, keepdims=True) * (1 + rel)
    b_minus = (alpha * shrink).sum(axis=-1, keepdims=True) * (1 + rel)  # ≤ 0, now at least as negative
    unbounded = (1 + b_minus)[..., 0] < 0.5
    upper = np.add(grow, -b_minus, out=grow)
    upper /= 1 + b_minus  # e^{ρ_j}/R⁻ − 1
    lower = np.subtract(b_plus, shrink, out=shrink)
    lower /= 1 + b_plus  # 1 − e^{-ρ_j}/R⁺
    kappa = np.maximum(upper, lower, out=upper)
    kappa *= 1 + gamma(8)
    kappa += theta
    kappa /= 1 - theta
    kappa *= (1 + SAFETY) * alpha
    return kappa, unbounded


def dense_attention_bounds(q, k, v, allowed: np.ndarray):
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
    theta = gamma(keys + 2)  # [query 1]: α̂ against ᾱ (the sum's and the division's rounding)
    with np.errstate(invalid="ignore", over="ignore"):
        s_hat = qm @ kmT  # [batch query key]
        s_hat[..., ~allowed] = -np.inf
        top = s_hat.max(axis=-1, keepdims=True)  # [batch query 1]
        s_hat -= top  # ŝ_j ≤ 0; masked keys −inf
        # ρ_j: the score box, the dot product's rounding (with underflow), the subtraction, exp (4 ulp)
        rho = np.abs(s_hat)
        rho *= U
        if not exact_dot(qm, kmT):
            rho += gamma(qm.shape[-1] + 1) * (np.abs(qm) @ np.abs(kmT))
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
        z_rad = kappa @ abs_v + gamma(n + 2) * (alpha @ abs_v) + 3 * n * TINY
        if vr.any():
            z_rad += (alpha + kappa) @ vr
        v_max = (abs_v + vr).max(axis=-2, keepdims=True)  # [batch 1 d]
        z_rad += n_far * FAR_WEIGHT * 2 * v_max
        z_rad[bad] = np.inf
    return z_mid, inflate(z_rad)


SPARSE_SHARE = 0.25  # a query block whose near candidates exceed this share of its keys is bounded densely


def attention_work() -> dict[str, int]:
    """Counts since the process started (or the last reset_attention_work) of the blocked rigorous pass:
    `score_entries` the visible (query, key) pairs it bounded, `computed` those whose score it computed,
    `exponentiated` those it exponentiated (the near keys and every key of a dense block); the rest were
    accounted for as far keys without an exponential. `tame_heads` / `scanned_heads`: heads whose scores
    were shown finite and below 2^40 from q and k alone, or were scanned block by block (core.attention.counters)."""
    return ATTENTION.snapshot()


def reset_attention_work() -> None:
    ATTENTION.reset()


_count = ATTENTION.add


def blocked_attention_bounds(q, k, v, mask: str):
    """Bounds on softmax(q kᵀ) v for q, k, v given as (mid, rad) pairs [batch pos d], with `mask` "causal"
    or "full": the bound of dense_attention_bounds, computed per query block (forward.query_blocks).

    In a block, the float scores and their maximum are computed as there. Which keys are near needs ρ_j,
    but a cheap per-query bound decides most keys without it: every ρ_j ≤ u(1 + 2·SAFETY)|ŝ_j| + R, with R
    the query's terms of ρ with every |k_j| and rad(k_j) replaced by their maximum over the keys (and a
    relative slack for the rounding of both sums). So a key with ŝ_j < FAR − 2 − R has ŝ_j + ρ_j < FAR − 1:
    it is far, and is counted without computing ρ_j or its exponential. The remaining candidates get the
    exact ρ_j and the near test of the dense bound; their weights are gathered into [row, m] arrays (m the
    most near keys of a row, padded with weight 0) and bounded by the same weight_error and value sums, with
    the rounding factors of m-term sums. The normalisation θ is the dense bound's (its visible key count).
    A block falls back to dense_attention_bounds on its visible keys when a score is not finite, R is not
    finite or above RHO_CAP, or more than SPARSE_SHARE of its keys are candidates (flat heads)."""
    (qm, qr), (km, kr), (vm, vr) = q, k, v
    n = qm.shape[-2]
    check_libm()
    shape = qm.shape[:-1] + vm.shape[-1:]
    z_mid, z_rad = np.empty(shape), np.empty(shape)  # [batch query d_value]
    slack = query_slack(qm, qr, km, kr)  # [batch query]: R of the docstring
    v_max = (np.abs(vm) + vr).max(axis=-2, keepdims=True)  # [batch 1 d_value]
    kmT = np.swapaxes(km, -1, -2)
    exact_scores = exact_dot(qm, kmT)
    tame = scores_tame(qm, km)
    _count(**{"tame_heads" if tame else "scanned_heads": 1})
    causal = mask == "causal"
    for start, stop, keys in query_blocks(n, causal, keys=km.shape[-2]):
        rows = slice(start, stop)
        visible = (((start + 1 + stop) * (stop - start)) // 2 if causal else (stop - start) * keys) * len(qm)
        with np.errstate(invalid="ignore", over="ignore"):
            s_hat = qm[..., rows, :] @ kmT[..., :keys]  # [batch block key]
            block = _sparse_block(s_hat, q, k, v, v_max, slack[..., rows], start, causal, exact_scores, tame)
        if block is None:
            block_shape = (stop - start, keys)
            allowed = np.tri(*block_shape, start, dtype=bool) if causal else np.ones(block_shape, bool)
            block = dense_attention_bounds(
                (qm[..., rows, :], qr[..., rows, :]),
                (km[..., :keys, :], kr[..., :keys, :]),
                (vm[..., :keys, :], vr[..., :keys, :]),
                allowed,
            )
            _count(dense_blocks=1, exponentiated=visible, computed=visible)
        _count(score_entries=visible)
        z_mid[..., rows, :], z_rad[..., rows, :] = block
    return z_mid, z_rad


def query_slack(qm, qr, km, kr) -> np.ndarray:
    """R of attention_bounds' docstring, per query [batch query]: ρ_j's terms other than u|ŝ_j| with |k_j|
    and rad(k_j) at their maximum over the keys, plus exp's error, with a relative slack of 10⁻⁶ that covers
    the rounding of both this sum and ρ_j's own (each within γ_{d+2} of the exact sum of non-negatives)."""
    d = qm.shape[-1]
    k_abs = np.abs(km).max(axis=-2)[..., None, :]  # [batch 1 d]
    k_rad = kr.max(axis=-2)[..., None, :]
    q_abs = np.abs(qm)
    with np.errstate(invalid="ignore", over="ignore"):
        terms = (q_abs * (gamma(d + 1) * k_abs + k_rad) + qr * (k_abs + k_rad)).sum(axis=-1)
        slack = (terms * (1 + SAFETY) + 4.5 * U + 2.0**-1000) * (1 + 1e-6)
    return np.where(np.isnan(slack), np.inf, slack)


def scores_tame(qm, km) -> bool:
    """Whether every float score q_i·k_j is finite with |ŝ| < 2^40, shown from Σ_d |q_id| max_j |k_jd| <
    2^39 (the float dot product is within a factor 1 + γ_d of its exact value); NaN or ±inf in q or k
    fails the test. Saves a scan of every score block."""
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(np.all(np.abs(qm) @ np.abs(km).max(axis=-2)[..., None] < 2.0**39))


def _sparse_block(s_hat, q, k, v, v_max, slack, start: int, causal: bool, exact_scores: bool, tame: bool):
    """attention_bounds for one query block from its float scores (consumed), or None where the block
    must be bounded densely (attention_bounds' docstring). tame: scores_tame holds for the head."""
    (qm, qr), (km, kr), (vm, vr) = q, k, v
    # NaN or ±inf anywhere shows in the min or the max; |s| < 2^40 keeps top + cut within 10⁻³ of exact
    if s_hat.ndim != 3 or not (tame or (abs(s_hat.min()) < 2.0**40 and abs(s_hat.max()) < 2.0**40)):
        return None
    if not np.all(slack <= RHO_CAP):
        return None
    batch, block, keys = s_hat.shape
    if causal:
        mask_diagonal(s_hat, start, start + block)
    visible = (np.arange(start, start + block) + 1 if causal else np.full(block, keys))[None, :]  # [1 block]
    top = s_hat.max(axis=-1, keepdims=True)  # [batch block 1]
    # fl(s − top) ≥ cut implies s ≥ top + cut − 1 as floats (the sum's rounding is ≪ 1 below 2^40)
    flat = np.flatnonzero(s_hat >= top + (FAR_BLOCKED - 3 - slack)[..., None])
    if len(flat) > SPARSE_SHARE * visible.sum() * batch:
        return None
    row, k_j = np.divmod(flat, keys)  # row = the flattened (batch, query) index
    s_c = s_hat.reshape(-1)[flat] - top.reshape(-1)[row]  # ŝ = fl(s − top), as in the dense bound
    rho = np.abs(s_c) * U  # ρ_j exactly as the dense bound computes it
    k_radii, q_radii = bool(kr.any()), bool(qr.any())
    if not exact_scores or k_radii or q_radii:  # the other terms need each candidate's q and k rows
        k_flat = (row // block) * km.shape[-2] + k_j
        per_row = np.bincount(row, minlength=batch * block)  # candidates are in row order (flatnonzero)
        q_rows = qm[..., start : start + block, :].reshape(-1, qm.shape[-1])
        q_abs = np.repeat(np.abs(q_rows), per_row, axis=0)  # [candidate d]
        k_abs = np.abs(np.take(km.reshape(-1, km.shape[-1]), k_flat, axis=0))  # [candidate d]
        if not exact_scores:
            rho += gamma(qm.shape[-1] + 1) * np.einsum("cd,cd->c", q_abs, k_abs)
        if k_radii:
            k_rad = np.take(kr.reshape(-1, kr.shape[-1]), k_flat, axis=0)
            rho += np.einsum("cd,cd->c", q_abs, k_rad)
            k_abs += k_rad
        if q_radii:
            q_rad = np.repeat(qr[..., start : start + block, :].reshape(-1, qr.shape[-1]), per_row, axis=0)
            rho += np.einsum("cd,cd->c", q_rad, k_abs)
    rho *= 1 + SAFETY
    rho += 4.5 * U + 2.0**-1000
    near = s_c + rho >= FAR_BLOCKED - 1
    key = k_j
    if not near.all():
        row, key, s_c, rho = row[near], key[near], s_c[near], rho[near]
    counts = np.bincount(row, minlength=batch * block)
    width = max(1, int(counts.max(initial=0)))
    slot = np.arange(len(row)) - (np.cumsum(counts) - counts)[row]
    s_pad = np.full((batch * block, width), -np.inf)
    rho_pad, key_pad = np.zeros((batch * block, width)), np.zeros((batch * block, width), dtype=np.int64)
    s_pad[row, slot], rho_pad[row, slot], key_pad[row, slot] = s_c, rho, key
    bad = np.zeros(batch * block, dtype=bool)
    bad[row[rho > RHO_CAP]] = True
    # a far key's weight against the top key's (ŝ = 0, exponent error ≤ the row's largest ρ): e^(F + ρ)
    far_weight = np.exp(FAR_BLOCKED + np.minimum(rho_pad.max(axis=-1), RHO_CAP)) * (1 + 2.0**-40)
    weights = np.exp(s_pad)
    alpha = np.divide(weights, weights.sum(axis=-1, keepdims=True), out=weights)  # α̂ [row m]
    theta = gamma(np.tile(visible[0], batch)[:, None] + 2)  # [row 1] the dense bound's θ
    kappa, too_wide = weight_error(alpha, rho_pad, theta)
    bad |= too_wide
    batch_of_row = np.repeat(np.arange(batch), block)
    key_pad += (batch_of_row * vm.shape[-2])[:, None]  # the key's row in v flattened over the batch
    # padding slots (α̂ = κ = 0) read key 0 of their batch: zeroed unless every value is finite
    filled = None if np.isfinite(v_max).all() else np.isfinite(s_pad)[..., None]

    def near_values(a: np.ndarray) -> np.ndarray:  # a [batch key d_value] at the near keys: [row m d_value]
        gathered = np.take(a.reshape(-1, a.shape[-1]), key_pad, axis=0)
        return gathered if filled is None else np.where(filled, gathered, 0.0)

    v_near = near_values(vm)
    abs_v = np.abs(v_near)
    mid = np.einsum("rm,rmd->rd", alpha, v_near)
    rad = np.einsum("rm,rmd->rd", kappa, abs_v) + gamma(width + 2) * np.einsum("rm,rmd->rd", alpha, abs_v)
    rad += 3 * width * TINY
    if vr.any():
        rad += np.einsum("rm,rmd->rd", alpha + kappa, near_values(vr))
    far = np.tile(visible[0], batch) - counts  # [row]
    rad += (far * far_weight)[:, None] * 2 * v_max[batch_of_row, 0]
    rad[bad] = np.inf
    _count(sparse_blocks=1, computed=s_hat.size, exponentiated=len(row))
    shape = (batch, block, vm.shape[-1])
    return mid.reshape(shape), inflate(rad).reshape(shape)
