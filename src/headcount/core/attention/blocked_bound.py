"""The rigorous softmax bound computed in query blocks (core.attention.blocks.query_blocks: only the
keys a block can see): core.attention.softmax_bound's dense bound, with the near keys of each query
gathered sparsely (``sparse_block``), the far keys accounted for as a group and never exponentiated,
and, on NumPy, the keys that cannot be near pruned before they are scored (``pruned_block``,
core.attention.pruning; issue 34); a block where that declines is bounded densely. Written once for
NumPy arrays and torch tensors, like softmax_bound (whose docstring states the conventions).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from array_api_compat import device as device_of

from headcount.core.attention.array_ops import array_ops
from headcount.core.attention.blocks import dense_parts, query_blocks
from headcount.core.attention.counters import ATTENTION
from headcount.core.attention.pruning import CellSums, key_groups, pruned_scores
from headcount.core.attention.settings import pruning_enabled
from headcount.core.attention.softmax_bound import (
    FAR_BLOCKED,
    RHO_CAP,
    SPARSE_SHARE,
    Array,
    Terms,
    dense_bound,
    inflate_radius,
    near_theta,
    query_slack,
    scores_tame,
    terms_of,
    weight_error,
)
from headcount.core.numbers import SAFETY, TINY, U, gamma


class Head(NamedTuple):
    """What the sparse blocks of one head [batch pos d] read, on the arrays' device."""

    q: tuple  # (mid, rad) [batch query d]
    k: tuple  # (mid, rad) [batch key d]
    # (mid, rad) [batch·key + 1, d_value]: v flattened over the batch, then a row of zeros
    values: tuple
    # (rad None where v has none)
    v_max: Array  # [batch d_value] max_j |v_j| + rad(v_j)
    terms: Terms
    tame: bool  # scores_tame holds for the head


def blocked_bound(host, box, mask: str):
    """Bounds (mid, rad) [.. query d_value] on softmax(q kᵀ) v for q, k, v given as (mid, rad) pairs
    [.. pos d] — `host` NumPy arrays, `box` the same values as arrays of the kind to compute with —
    and `mask` "causal" or "full": the bound of dense_bound, computed per query block
    (blocks.query_blocks).

    In a block, the float scores and their maximum are computed as there. Which keys are near needs
    ρ_j, but a cheap per-query bound decides most keys without it: every ρ_j ≤ u(1 + 2·SAFETY)|ŝ_j|
    + R, with R the query's terms of ρ with every |k_j| and rad(k_j) replaced by their maximum over
    the keys (and a relative slack for the rounding of both sums: query_slack). So a key with ŝ_j <
    FAR_BLOCKED − 2 − R has ŝ_j + ρ_j < FAR_BLOCKED − 1: it is far, and is counted without computing
    ρ_j or its exponential. The remaining candidates get the exact ρ_j and the near test of the
    dense bound (with the cut FAR_BLOCKED); their weights are gathered into [row, m] arrays (m the
    most near keys of a row, padded with weight 0 and value 0) and bounded by the same weight_error
    and value sums, with the rounding factors of sums over the row's candidates (the padding adds
    exact zeros: near_theta's argument). The normalisation θ is the dense bound's, near_theta of
    the row's near keys. The far keys of a
    row weigh less than e^(FAR_BLOCKED + ρ_top) each against its top key (ŝ = 0, its exponent
    error at most the row's largest ρ, capped at RHO_CAP as larger rows are unbounded anyway), an
    absolute term 2·max|v| each. A block falls back to dense_bound on its visible keys when a score
    is not finite or above 2^40, R is not finite or above RHO_CAP, or more than SPARSE_SHARE of its
    keys are candidates (flat heads).

    Causal tame heads of NumPy arrays whose keys have structure (core.attention.pruning) are pruned
    first (pruned_block): only the keys that can be candidates are scored, and a cell of identical
    keys is one candidate standing for all of them."""
    (qm, qr), (km, kr), (vm, vr) = host
    (tqm, tqr), (tkm, tkr), (tvm, tvr) = box
    ops = array_ops(tqm)
    xp = ops.xp
    causal = mask == "causal"
    n, keys_total, heads = qm.shape[-2], km.shape[-2], math.prod(qm.shape[:-2])
    slack = query_slack(qm, qr, km, kr)  # [.. query]: R of the docstring
    terms = terms_of(qm, qr, km, kr, vr)
    tame = scores_tame(qm, km)
    ATTENTION.add(**{"tame_heads" if tame else "scanned_heads": 1})
    head = _head(host, box, terms, tame)
    shape = qm.shape[:-1] + vm.shape[-1:]
    z_mid = xp.empty(shape, dtype=xp.float64, device=device_of(tqm))  # [.. query d_value]
    z_rad = xp.empty_like(z_mid)
    kmT = xp.matrix_transpose(tkm)
    pruning = _pruning(host, tkm) if head is not None and causal and tame else None
    with ops.quiet():
        for start, stop, keys in query_blocks(n, causal, keys=keys_total):
            rows = slice(start, stop)
            visible = _visible(start, stop, keys, causal) * heads
            block = None
            if pruning is not None and np.all(slack[..., rows] <= RHO_CAP):
                block = pruned_block(head, pruning, slack[..., rows], start, visible)
            if block is not None:
                ATTENTION.add(score_entries=visible)
                z_mid[..., rows, :], z_rad[..., rows, :] = block
                continue
            for lo, hi, seen in dense_parts(start, stop, keys, causal, heads):
                part = slice(lo, hi)
                visible = _visible(lo, hi, seen, causal) * heads
                block = None
                sparse = head is not None and np.all(slack[..., part] <= RHO_CAP)
                s_hat = tqm[..., part, :] @ kmT[..., :seen]  # [.. block key]
                if sparse:
                    block = sparse_block(
                        s_hat, head, ops.asarray(slack[..., part], s_hat), lo, causal, visible
                    )
                if block is None:
                    block = dense_block(host, box, part, seen, causal)
                    ATTENTION.add(dense_blocks=1, exponentiated=visible, computed=visible)
                ATTENTION.add(score_entries=visible)
                z_mid[..., part, :], z_rad[..., part, :] = block
    return z_mid, z_rad


def _visible(start: int, stop: int, keys: int, causal: bool) -> int:
    """The (query, key) pairs queries start..stop−1 see (keys 0..keys−1, or up to each query)."""
    return ((start + 1 + stop) * (stop - start)) // 2 if causal else (stop - start) * keys


def _head(host, box, terms: Terms, tame: bool) -> Head | None:
    """What the sparse blocks read (Head), for 3-d [batch pos d] arrays; None otherwise."""
    (_, _), (_, _), (vm, vr) = host
    (tqm, tqr), (tkm, tkr), (tvm, tvr) = box
    if tqm.ndim != 3:  # sparse blocks gather over the [batch pos] rows of 3-d arrays only
        return None
    ops = array_ops(tqm)
    xp = ops.xp
    zero = xp.zeros((1, vm.shape[-1]), dtype=xp.float64, device=device_of(tvm))

    def padded(a):  # [batch·key + 1, d_value]
        return xp.concat([xp.reshape(a, (-1, vm.shape[-1])), zero])

    values = (padded(tvm), padded(tvr) if terms.v_rad else None)
    v_max = ops.asarray((np.abs(vm) + vr).max(axis=-2), tvm)
    return Head((tqm, tqr), (tkm, tkr), values, v_max, terms, tame)


def _pruning(host, computed_keys) -> tuple | None:
    """pruned_block's `pruning` for a causal, tame head of NumPy arrays (the keys computed with are
    the host's own): the key groups and cell sums of each batch element; None where pruning is off
    or some batch element's keys have no structure (core.attention.pruning.key_groups)."""
    (_, _), (km, kr), (vm, vr) = host
    if computed_keys is not km or not pruning_enabled():
        return None
    groups = [key_groups(km[b], np.concatenate([km[b], kr[b]], 1)) for b in range(len(km))]
    if any(g is None for g in groups):
        return None
    sums = [CellSums(g, [vm[b], np.abs(vm[b]), vr[b]]) for b, g in enumerate(groups)]
    return groups, sums, (vm, vr)


def dense_block(host, box, rows: slice, keys: int, causal: bool):
    """dense_bound for the queries `rows` of blocked_bound's boxes over the keys 0..keys−1 they
    see."""
    (qm, qr), (km, kr), (_, vr) = host
    (tqm, tqr), (tkm, tkr), (tvm, tvr) = box
    xp, device = array_ops(tqm).xp, device_of(tqm)
    allowed = xp.ones((rows.stop - rows.start, keys), dtype=xp.bool, device=device)
    if causal:  # key j ≤ query i
        allowed = (
            xp.arange(keys, device=device)[None, :]
            <= xp.arange(rows.start, rows.stop, device=device)[:, None]
        )
    return dense_bound(
        (tqm[..., rows, :], tqr[..., rows, :]),
        (tkm[..., :keys, :], tkr[..., :keys, :]),
        (tvm[..., :keys, :], tvr[..., :keys, :]),
        allowed,
        terms_of(
            qm[..., rows, :],
            qr[..., rows, :],
            km[..., :keys, :],
            kr[..., :keys, :],
            vr[..., :keys, :],
        ),
    )


def sparse_block(s_hat: Array, head: Head, slack: Array, start: int, causal: bool, visible: int):
    """blocked_bound for one query block from its float scores s_hat [batch block key] (consumed),
    or None where the block must be bounded densely (blocked_bound's docstring); `slack` [batch
    block] is R, all ≤ RHO_CAP, `visible` the block's visible (query, key) pairs."""
    ops = array_ops(s_hat)
    xp = ops.xp
    # NaN or ±inf anywhere shows in the min or the max; |s| < 2^40 keeps top + cut within 10⁻³ of
    # exact
    if not (
        head.tame or (abs(float(xp.min(s_hat))) < 2.0**40 and abs(float(xp.max(s_hat))) < 2.0**40)
    ):
        return None
    batch, block, keys = s_hat.shape
    if causal:
        ops.mask_diagonal(s_hat, start, start + block)
    top = xp.max(s_hat, axis=-1, keepdims=True)  # [batch block 1]
    # fl(s − top) ≥ cut implies s ≥ top + cut − 1 as floats (the sum's rounding is ≪ 1 below 2^40)
    candidate = s_hat >= top + (FAR_BLOCKED - 3 - slack)[..., None]
    if int(xp.count_nonzero(candidate)) > SPARSE_SHARE * visible:
        return None
    flat = ops.flat_nonzero(candidate)  # in row order
    row, key = flat // keys, flat % keys  # row = the flattened (batch, query) index
    s_c = ops.take_rows(xp.reshape(s_hat, (-1,)), flat) - ops.take_rows(xp.reshape(top, (-1,)), row)
    ATTENTION.add(computed=batch * block * keys)
    return candidate_bound(row, key, s_c, head, (batch, block, keys), start, causal)


def pruned_block(head: Head, pruning: tuple, slack: np.ndarray, start: int, visible: int):
    """sparse_block for one causal query block of a NumPy head whose keys are grouped (`groups`, a
    core.attention.pruning.KeyGroups per batch element, in `pruning` = (groups, CellSums per batch
    element, the values' (mid, rad) [batch key d_value])): only the scores pruning.pruned_scores
    leaves are computed; every other key scores below the row's top + FAR_BLOCKED − 4 − R (its
    proof), so it is far exactly as a non-candidate of sparse_block is. None where the block must be
    scored in full (too early in the sequence) or bounded densely (too many candidates)."""
    (qm, _), (km, _) = head.q, head.k
    batch, block = slack.shape
    cut = FAR_BLOCKED - 3 - slack  # [batch block]
    groups, sums, (vm, vr) = pruning
    values = []
    for b in range(batch):
        limit = visible / batch  # a cell of identical keys counts once: flat rows stay cheap
        scored = pruned_scores(qm[b, start : start + block], km[b], groups[b], start, cut[b], limit)
        if scored is None:
            return None
        values.append(_pruned_candidates(scored, cut[b], sums[b].upto(scored.w0), vm[b], vr[b]))
    row, key, s_c, mult, P, A, R = (np.concatenate(parts) for parts in list(zip(*values))[:-1])
    row = row + np.repeat(np.arange(batch) * block, [len(v[0]) for v in values])
    if len(row) > visible:
        return None
    computed = sum(v[-1] for v in values)
    ATTENTION.add(computed=computed, pruned_blocks=1)
    shape = (batch, block, km.shape[-2])
    return candidate_bound(row, key, s_c, head, shape, start, True, (mult, P, A, R))


def _pruned_candidates(scored, cut: np.ndarray, cell_sums: list, vm: np.ndarray, vr: np.ndarray):
    """(row, key, s_c, mult, P, A, R, computed) of one batch element's pruned block (scored: a
    pruning.Scored): the window's keys, the surviving keys and the surviving cells whose score is
    at least the row's top + cut, sorted by row (candidate_bound's `values`: a cell's sums from
    cell_sums, A and R rounded up for their float sums)."""
    top = scored.top()  # [block]
    w_row, w_col = np.nonzero(scored.window >= (top + cut)[:, None])
    m_keep = scored.score >= top[scored.row] + cut[scored.row]
    c_keep = scored.cell_score >= top[scored.cell_row] + cut[scored.cell_row]
    keys = np.concatenate([w_col + scored.w0, scored.key[m_keep]])
    cells = scored.cell[c_keep]
    mult = scored.cell_mult[c_keep]
    up = 1 + 2 * gamma(int(mult.max(initial=1)) + 1)  # a float sum of m terms, rounded up
    row = np.concatenate([w_row, scored.row[m_keep], scored.cell_row[c_keep]])
    s = np.concatenate(
        [scored.window[w_row, w_col], scored.score[m_keep], scored.cell_score[c_keep]]
    )
    columns = [
        np.concatenate([vm[keys], cell_sums[0][cells]]),
        np.concatenate([np.abs(vm[keys]), cell_sums[1][cells] * up]),
        np.concatenate([vr[keys], cell_sums[2][cells] * up]),
    ]
    order = np.argsort(row, kind="stable")
    mult = np.concatenate([np.ones(len(keys)), mult.astype(np.float64)])
    key = np.concatenate([keys, scored.cell_key[c_keep]])
    s_c = s[order] - top[row[order]]
    return (row[order], key[order], s_c, mult[order], *(c[order] for c in columns), scored.computed)


def candidate_bound(
    row, key, s_c, head: Head, shape: tuple, start: int, causal: bool, values: tuple | None = None
):
    """The bound of one query block from its candidates: `row` [cand.] the flattened (batch, query)
    index (in increasing order), `key` the key, s_c the shifted float score fl(s − top) (consumed);
    shape = (batch, block, keys seen by the block); every other key of a row is far
    (sparse_block). `values` (NumPy only), when given: (mult, P, A, R) per candidate, where a
    candidate may stand for `mult` identical keys (a cell of core.attention.pruning) whose values
    sum to P, |values| to at most A and radii to at most R (for a single key: 1, v, |v|, rad v).
    Such a cell is `mult` keys of one weight: ᾱ normalises over Σ mult·ŵ, weight_error weighs each
    candidate by its multiplicity, and the rounding of the sums P (within γ_mult of exact) joins
    the float sum's γ factor."""
    ops = array_ops(s_c)
    xp = ops.xp
    batch, block, keys = shape
    (qm, qr), (km, kr) = head.q, head.k
    rho = xp.abs(s_c) * U  # ρ_j exactly as the dense bound computes it, from ŝ = fl(s − top)
    terms = head.terms
    if (
        terms.inexact or terms.k_rad or terms.q_rad
    ):  # the other terms need each candidate's q and k rows
        d = qm.shape[-1]
        k_flat = (row // block) * km.shape[-2] + key
        q_abs = xp.abs(
            ops.take_rows(xp.reshape(qm[:, start : start + block], (-1, d)), row)
        )  # [cand. d]
        k_abs = xp.abs(ops.take_rows(xp.reshape(km, (-1, d)), k_flat))
        if terms.inexact:
            rho += gamma(d + 1) * ops.row_dots(q_abs, k_abs)
        if terms.k_rad:
            k_rad = ops.take_rows(xp.reshape(kr, (-1, d)), k_flat)
            rho += ops.row_dots(q_abs, k_rad)
            k_abs += k_rad
        if terms.q_rad:
            q_rad = ops.take_rows(xp.reshape(qr[:, start : start + block], (-1, d)), row)
            rho += ops.row_dots(q_rad, k_abs)
    rho *= 1 + SAFETY
    rho += 4.5 * U + 2.0**-1000
    near = s_c + rho >= FAR_BLOCKED - 1
    if not bool(xp.all(near)):
        row, key, s_c, rho = row[near], key[near], s_c[near], rho[near]
        values = None if values is None else tuple(a[near] for a in values)
    rows, device = batch * block, device_of(s_c)
    counts = ops.bincount(row, rows)
    width = max(1, int(xp.max(counts)))
    slot = xp.arange(row.shape[0], device=device) - ops.take_rows(
        xp.cumulative_sum(counts) - counts, row
    )
    s_pad = xp.full((rows, width), -math.inf, dtype=xp.float64, device=device)
    rho_pad = xp.zeros((rows, width), dtype=xp.float64, device=device)
    ops.scatter_(s_pad, (row, slot), s_c)
    ops.scatter_(rho_pad, (row, slot), rho)
    bad = xp.zeros(rows, dtype=xp.bool, device=device)
    ops.scatter_(bad, row[rho > RHO_CAP], True)
    # a far key's weight against the top key's (ŝ = 0, exponent error ≤ the row's largest ρ): e^(F +
    # ρ)
    far_weight = xp.exp(FAR_BLOCKED + xp.minimum(xp.max(rho_pad, axis=-1), RHO_CAP)) * (
        1 + 2.0**-40
    )
    seen = (
        xp.arange(start + 1, start + block + 1, device=device)
        if causal
        else xp.full(block, keys, device=device)
    )
    seen = xp.tile(xp.astype(seen, xp.float64), (batch,))  # [row]: the keys each row sees
    alpha = xp.exp(s_pad)
    if values is None:
        v_near, abs_v, v_rad = _gathered_values(head, row, slot, key, (rows, width), block, batch)
        alpha /= xp.sum(alpha, axis=-1, keepdims=True)  # α̂ [row m]
        members = xp.astype(counts, xp.float64)
        kappa, too_wide = weight_error(alpha, rho_pad, near_theta(members[:, None]))
        summed = 0  # the float sums' own terms beyond the row's candidates + 2
    else:
        mult = np.zeros((rows, width))
        mult[row, slot] = values[0]
        v_near, abs_v, v_rad = (_padded(a, row, slot, (rows, width)) for a in values[1:])
        alpha /= xp.sum(alpha * mult, axis=-1, keepdims=True)  # α̂ [row m]: per key
        members = mult.sum(axis=-1)
        kappa, too_wide = weight_error(alpha, rho_pad, near_theta(members[:, None]), mult)
        summed = int(values[0].max())  # P's own sum of up to that many terms
    bad |= too_wide
    mid = ops.weighted_rows(alpha, v_near)
    rad = ops.weighted_rows(kappa, abs_v)
    # the value sums have a non-zero term for the row's candidates only (near_theta's argument)
    terms_in_row = xp.astype(counts, xp.float64)[:, None] + (2 + summed)
    rad += gamma(terms_in_row) * ops.weighted_rows(alpha, abs_v)
    rad += 3 * width * TINY
    if v_rad is not None:
        rad += ops.weighted_rows(alpha + kappa, v_rad)
    far = seen - xp.astype(members, xp.float64)  # [row]
    batch_of_row = xp.arange(rows, device=device) // block
    rad += (far * far_weight)[:, None] * 2 * ops.take_rows(head.v_max, batch_of_row)
    ops.fill_where_(rad, bad[:, None], math.inf)
    ATTENTION.add(sparse_blocks=1, exponentiated=row.shape[0])
    shape = (batch, block, head.values[0].shape[-1])
    return xp.reshape(mid, shape), xp.reshape(inflate_radius(rad), shape)


def _gathered_values(head: Head, row, slot, key, shape: tuple, block: int, batch: int):
    """(v, |v|, rad v or None) [row m d_value] of the candidates' keys at their (row, slot);
    padding slots read the row of zeros after the values."""
    ops = array_ops(row)
    xp = ops.xp
    n_values = head.values[0].shape[0] - 1
    value_row = xp.full(shape, n_values, dtype=xp.int64, device=device_of(row))
    ops.scatter_(value_row, (row, slot), (row // block) * (n_values // batch) + key)
    v_near = ops.take_rows(head.values[0], value_row)
    v_rad = None if head.values[1] is None else ops.take_rows(head.values[1], value_row)
    return v_near, xp.abs(v_near), v_rad


def _padded(a: np.ndarray, row, slot, shape: tuple) -> np.ndarray:
    """a [cand. d_value] placed at (row, slot) of zeros [row m d_value]."""
    out = np.zeros(shape + a.shape[1:])
    out[row, slot] = a
    return out
