"""The float attention kernels in NumPy: softmax(scale·q kᵀ) v in any precision mode, blocked (the
default: query blocks, near keys gathered sparsely) or dense (the reference algorithm, and what
attention patterns for analysis need). core.attention.attend chooses between them and the torch
backend.
"""

from __future__ import annotations

import math

import numpy as np

from headcount.core.attention.blocks import (
    EXP_UNDERFLOW,
    LEFT_OUT_SHARE,
    NEGLIGIBLE_BITS,
    SPARSE_SHARE,
    cached_masks,
    dense_parts,
    exp_shifted,
    mask_diagonal,
    negligible_cut,
    query_blocks,
)
from headcount.core.attention.counters import FLOAT
from headcount.core.attention.pruning import CellSums, key_groups, pruned_scores
from headcount.core.attention.settings import pruning_enabled
from headcount.core.numbers import Precision


def blocked_attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: str | None,
    prec: Precision,
    scale: float = 1.0,
) -> np.ndarray:
    """softmax(scale·q kᵀ) v with the `mask` ("causal"; "full" or None: every query sees every key),
    normalised after the value sum: (Σ_j e^{s_j − max} v_j) / Σ_j e^{s_j − max}, in query blocks
    (query_blocks; masked keys never computed, no [query key] mask ever built). Every exponential
    has the bits of dense_attend; the sums run over the keys of non-negligible weight
    (_sparse_softmax_values) or the block's keys instead of all n, so a sum may differ from
    dense_attend's in its last bits (tests/core/test_blocked.py measures it)."""
    n = q.shape[-2]
    causal = mask == "causal"
    kT = np.swapaxes(k, -1, -2)
    out = np.empty(q.shape[:-1] + v.shape[-1:], dtype=np.result_type(q, v))  # [batch query d_value]
    v_max = None
    if (
        v.dtype == np.float64 and v.ndim == 3
    ):  # max_j |v_j| over keys 0..j, per batch [batch key d_value]
        v_max = np.maximum.accumulate(np.abs(v), axis=-2)
    groups = _float_groups(q, k, v, causal, prec, scale)
    if groups is not None:
        sums = [CellSums(g, [v[b], np.abs(v[b])]) for b, g in enumerate(groups)]
    for start, stop, keys in query_blocks(n, causal, keys=k.shape[-2]):
        if groups is not None:
            pruned = _pruned_softmax_values(q, k, v, v_max, groups, sums, start, stop)
            if pruned is not None:
                out[:, start:stop] = pruned
                continue
        for lo, hi, seen in dense_parts(start, stop, keys, causal, math.prod(q.shape[:-2])):
            out[..., lo:hi, :] = _scored_block(q, kT, v, v_max, (lo, hi, seen), causal, prec, scale)
    return out


def _scored_block(q, kT, v, v_max, part: tuple[int, int, int], causal: bool, prec, scale: float):
    """blocked_attend's rows start..stop−1 from their scores against keys 0..keys−1 (part: (start,
    stop, keys), at most blocks.BLOCK_ENTRIES entries per batch element)."""
    start, stop, keys = part
    scores = prec.after_op(q[..., start:stop, :] @ kT[..., :keys])  # [batch block keys]
    if scale != 1.0:
        scores = prec.after_op(scores * scores.dtype.type(scale))
    if causal:
        mask_diagonal(scores, start, stop)
    sparse = None
    if scores.ndim == 3 and v_max is not None:
        sparse = _sparse_softmax_values(scores, v, v_max[:, keys - 1])
    if sparse is None:
        sparse = softmax_values(scores, v[..., :keys, :], prec)
    return sparse


def _float_groups(q, k, v, causal: bool, prec: Precision, scale: float) -> list | None:
    """The key groups (core.attention.pruning) of each batch element when the float pass prunes:
    attention in float64 (the float64 mode, and fixed:p and exact, whose rounding points lie outside
    attention: between them they are float64 arithmetic, core.numbers.precision), score scale 1,
    the causal mask, [batch pos d] arrays, finite values and tame scores (Σ_d |q_d|·max_j |k_jd| <
    2^39: every |score| < 2^40); else None."""
    if not (
        causal
        and prec.kind in ("float64", "fixed", "exact")
        and scale == 1.0
        and q.ndim == 3
        and v.dtype == np.float64
        and pruning_enabled()
        and np.isfinite(v).all()
    ):
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        if not np.all(np.abs(q) @ np.abs(k).max(axis=-2)[..., None] < 2.0**39):
            return None
    groups = [key_groups(k[b]) for b in range(k.shape[0])]
    return None if any(g is None for g in groups) else groups


def _pruned_softmax_values(q, k, v, v_max, groups: list, sums: list, start: int, stop: int):
    """_sparse_softmax_values of the causal query block start..stop−1 with its keys pruned
    (core.attention.pruning.pruned_scores), or None where the block is scored in full. Pruned first
    at the negligible cut: a pruned key's weight is below 2^-NEGLIGIBLE_BITS / keys of the top's,
    so it is left out as there; then, for the rows whose left-out keys must be added back, again at
    exp's underflow: a key pruned there has exponential 0 in float64 and adds nothing. A cell of
    identical keys adds its weight times its multiplicity and times its values' sum (`sums`:
    pruning.CellSums of v and |v|)."""
    block = stop - start
    visible = (start + 1 + stop) * block // 2
    out = np.empty((q.shape[0], block, v.shape[-1]))
    for b in range(q.shape[0]):
        cut = np.full(block, negligible_cut(stop))
        scored = pruned_scores(q[b, start:stop], k[b], groups[b], start, cut, visible)
        if scored is None:
            return None
        cell_sums = sums[b].upto(scored.w0)
        total, summed, mass = _sums(scored, v[b], cell_sums, block, cut, np.inf)
        left_out = v_max[b, stop - 1] * 2.0**-NEGLIGIBLE_BITS  # [d_value]
        redo = np.flatnonzero((left_out > LEFT_OUT_SHARE * mass).any(axis=-1))
        if len(redo):  # add back the left-out keys above underflow, on those rows only
            floor = np.full(len(redo), EXP_UNDERFLOW - 1)
            scored = pruned_scores(q[b, start + redo], k[b], groups[b], start, floor, np.inf, redo)
            back = _sums(scored, v[b], cell_sums, len(redo), floor + 1, negligible_cut(stop))
            total[redo] += back[0]
            summed[redo] += back[1]
        out[b] = summed / total[:, None]
        _count_float(rows=block, rows_redone=len(redo), pruned_rows=block)
    return out


def _sums(scored, v, cell_sums, rows: int, floor: np.ndarray, below: float):
    """(Σ w, Σ w·v, Σ w·|v|) per row over the entries of `scored` (pruning.Scored) whose shifted
    score s − top lies in [floor, below) (float64's exponentials; a cell counts its multiplicity
    and its values' sums)."""
    top = scored.top()
    # the window's entries in range are picked on the dense block (most lie below the cut), then
    # the listed keys'; entries stay in (window row-major, listed) order: the sums' order
    window = scored.window - top[:, None]  # [rows keys−w0]; −inf where hidden
    w_row, w_col = np.nonzero((window >= floor[:, None]) & (window < below))
    listed = scored.score - top[scored.row]
    keep = (listed >= floor[scored.row]) & (listed < below)
    row = np.concatenate([w_row, scored.row[keep]])
    key = np.concatenate([w_col + scored.w0, scored.key[keep]])
    weights = exp_shifted(np.concatenate([window[w_row, w_col], listed[keep]]))
    total = _row_sums(row, weights, rows)
    values = np.take(v, key, axis=0) * weights[:, None]
    summed = _bincount_columns(row, values, rows)
    mass = _bincount_columns(row, np.abs(values, out=values), rows)
    c_shift = scored.cell_score - top[scored.cell_row]
    c_keep = (c_shift >= floor[scored.cell_row]) & (c_shift < below)
    if c_keep.any():
        c_row, cell = scored.cell_row[c_keep], scored.cell[c_keep]
        w = exp_shifted(c_shift[c_keep])
        total += _row_sums(c_row, w * scored.cell_mult[c_keep], rows)
        summed += _bincount_columns(c_row, cell_sums[0][cell] * w[:, None], rows)
        mass += _bincount_columns(c_row, cell_sums[1][cell] * w[:, None], rows)
    return total, summed, mass


def _row_sums(row: np.ndarray, weights: np.ndarray, rows: int) -> np.ndarray:
    """Σ of weights [entries] per row index [entries] -> [rows] float64 (bincount gives integer
    zeros when no entry is left: a block whose kept weights all sit in cells)."""
    return np.bincount(row, weights=weights, minlength=rows).astype(np.float64, copy=False)


def _bincount_columns(row: np.ndarray, values: np.ndarray, rows: int) -> np.ndarray:
    """Σ of values [entries d] per row index [entries] -> [rows d], in one bincount over (row,
    column) bins: each bin adds its entries in their order, as a bincount per column would."""
    d = values.shape[1]
    bins = (row[:, None] * d + np.arange(d)).reshape(-1)
    return _row_sums(bins, values.reshape(-1), rows * d).reshape(rows, d)


def _sparse_softmax_values(
    scores: np.ndarray, v: np.ndarray, v_max: np.ndarray
) -> np.ndarray | None:
    """softmax_values in float64 over the keys whose weight e^{s − max} exceeds 2^-NEGLIGIBLE_BITS /
    keys (each such weight has dense_attend's bits; the sums add them in another order), or None
    when more than SPARSE_SHARE of the block's keys are kept (then the dense pass is as fast) or a
    value is not finite (the dense pass's inf·0 = NaN is float64's answer there). v_max [batch
    d_value]: max_j |v_jc| over the block's keys.

    The keys left out weigh at most 2^-NEGLIGIBLE_BITS of the top key's weight 1 ≤ the total
    together, so they move coordinate c of a row by at most 2^-NEGLIGIBLE_BITS·v_max_c. A row keeps
    them out only where that is at most LEFT_OUT_SHARE of the coordinate's kept mass Σ_kept
    w_j|v_jc| in every coordinate: then its result stays within the error bound of a float64
    evaluation of the whole sum (γ·Σ_j w_j|v_jc|). Elsewhere (a huge value under a tiny weight, a
    coordinate the kept keys leave at 0) the row's left-out keys whose exponential does not
    underflow are added back: that row is the dense pass's sum, in another order. (Kept terms that
    cancel need nothing: the float sum's own error is on the scale of Σ w|v|.)"""
    batch, block, keys = scores.shape
    top = scores.max(axis=-1, keepdims=True)  # [batch block 1]
    if not (np.abs(top).max() < 2.0**40 and np.isfinite(v_max).all()):  # NaN fails too
        return None
    cut = negligible_cut(keys)  # (|max| < 2^40 keeps the threshold's rounding ≪ 1)
    flat = np.flatnonzero(scores >= top + cut)
    if len(flat) > SPARSE_SHARE * scores.size:
        return None
    rows = batch * block
    row, key = np.divmod(flat, keys)
    weights = exp_shifted(scores.reshape(-1)[flat] - top.reshape(-1)[row])
    total = _row_sums(row, weights, rows)  # [row]
    key += (row // block) * v.shape[-2]  # the key's row in v flattened over the batch
    values = np.take(v.reshape(-1, v.shape[-1]), key, axis=0) * weights[:, None]  # [kept d_value]
    summed = _bincount_columns(row, values, rows)  # [row d_value]
    kept_mass = _bincount_columns(row, np.abs(values, out=values), rows)
    left_out = np.repeat(v_max * 2.0**-NEGLIGIBLE_BITS, block, axis=0)  # [row d_value]: their bound
    redo = np.flatnonzero((left_out > LEFT_OUT_SHARE * kept_mass).any(axis=-1))
    if len(redo):  # add back the left-out keys of weight above underflow, on those rows only
        shifted = scores.reshape(rows, keys)[redo] - top.reshape(rows, 1)[redo]  # [redo keys]
        back = np.flatnonzero((shifted > EXP_UNDERFLOW) & (shifted < cut))
        r, k = np.divmod(back, keys)
        w = exp_shifted(shifted.reshape(-1)[back])
        k += (redo[r] // block) * v.shape[-2]
        total[redo] += _row_sums(r, w, len(redo))
        summed[redo] += _bincount_columns(
            r, np.take(v.reshape(-1, v.shape[-1]), k, axis=0) * w[:, None], len(redo)
        )
    _count_float(rows=rows, rows_redone=len(redo))
    return (summed / total[:, None]).reshape(batch, block, v.shape[-1])


def float_work() -> dict[str, int]:
    """Counts since the process started (or reset_float_work) of the sparse float pass: `rows` the
    query rows it summed sparsely, `rows_redone` those whose left-out keys it added back (the cut
    was not negligible against their output) (core.attention.counters)."""
    return FLOAT.snapshot()


def reset_float_work() -> None:
    FLOAT.reset()


_count_float = FLOAT.add


def softmax_values(
    scores: np.ndarray, v: np.ndarray, prec: Precision, patterns: list[np.ndarray] | None = None
) -> np.ndarray:
    """(Σ_j e^{s_j − max} v_j) / Σ_j e^{s_j − max} over the last axis of `scores` (consumed, in
    place); the weights themselves are appended to `patterns` when given (for analysis only). A key
    the mask hides (score −inf) is absent from the sum, also where its value is ±inf or NaN (a
    matrix product would make its weight 0 times that value a NaN: a later token would change an
    earlier position's output); a visible key whose weight underflows to 0 is present, as float64
    has it (0 · inf = NaN)."""
    hidden = (
        None if np.isfinite(v).all() else np.isneginf(scores)
    )  # [.. query key], only where it matters
    scores -= scores.max(axis=-1, keepdims=True)
    scores = prec.after_op(exp_shifted(scores) if scores.dtype == np.float64 else np.exp(scores))
    total = prec.after_op(scores.sum(axis=-1, keepdims=True))  # [batch query 1]
    if patterns is not None:
        patterns.append(scores / total)
    summed = scores @ v if hidden is None else _visible_sum(scores, v, hidden)
    return prec.after_op(prec.after_op(summed) / total)


def _visible_sum(weights: np.ndarray, v: np.ndarray, hidden: np.ndarray) -> np.ndarray:
    """Σ_j w_j v_j over the keys not `hidden` [.. query key], for values v [.. key d] with ±inf or
    NaN entries, as float64 adds them up: the finite part by one product; then a coordinate is NaN
    where a visible key brings a NaN, or an infinity under a weight 0 (0 · inf), or infinities of
    both signs, else ±inf where a visible key of positive weight brings one (by products of
    indicator matrices: no loop)."""
    finite = np.isfinite(v)
    summed = weights @ np.where(finite, v, 0)
    seen = ~hidden
    positive = (seen & (weights > 0)).astype(
        v.dtype
    )  # a NaN weight is not positive: it is in `summed`
    zero = (seen & ~(weights > 0)).astype(v.dtype)
    up, down = (v == np.inf).astype(v.dtype), (v == -np.inf).astype(v.dtype)
    to_up, to_down = positive @ up > 0, positive @ down > 0
    to_nan = (seen.astype(v.dtype) @ np.isnan(v).astype(v.dtype) > 0) | (zero @ (up + down) > 0)
    extra = np.where(to_up, np.inf, np.where(to_down, -np.inf, 0.0))
    return summed + np.where(to_nan | (to_up & to_down), np.nan, extra).astype(summed.dtype)


def dense_attend(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: str | None,
    prec: Precision,
    scale: float = 1.0,
    patterns: list[np.ndarray] | None = None,
) -> np.ndarray:
    """attend over the whole [batch query key] score tensor, the masked half included (the reference
    algorithm, core.attention.settings; also what `patterns`, the attention weights for analysis,
    need). A masked score is replaced by −inf, not added to: an infinite score plus −inf would be a
    NaN that reaches every earlier query."""
    scores = prec.after_op(q @ np.swapaxes(k, -1, -2))  # [batch query key]
    if scale != 1.0:  # GPT-2 scales the product, as here: (q kᵀ)·scale
        scores = prec.after_op(scores * scores.dtype.type(scale))
    if mask == "causal":
        np.copyto(scores, -np.inf, where=cached_masks(q.shape[-2])[2])
    return softmax_values(scores, v, prec, patterns)
