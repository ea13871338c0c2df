"""Hostile heads for certified key pruning (core.attention.pruning; issue 34), and the checks every
one must pass. tests/soundness/test_pruning_soundness.py runs them by the thousand,
tests/core/test_pruning.py a few.

A family is a function rng -> Head: one attention head's q, k, v as (mid, rad) pairs [1 n d], n
just above pruning's MIN_KEYS, built so that whole groups of keys score just under and just over
the cut (the rigorous far cut −64 − 3 − R, or the float pass's negligible cut and exp's underflow):

* ``digits`` — keys are positions written as two digits and their squares (the construction's
  previous-token head: a "set" grouping, F the high digit, V the low digit and its square), the
  query's scale β put a one-digit miss at the cut ± {0.01 … 3};
* ``recency`` — keys are a token (digits and squares) and a recency term g·j (the induction head:
  a "box" grouping over stretches of positions), g and the token gap near the cut, the recency
  coordinate sometimes shuffled (not monotone: each group's whole range bounds it);
* ``cells`` — keys from a small palette (cells of identical keys, aggregated), some copies moved by
  one ulp or given their own radius (so their cell is listed key by key), values of mixed sign and
  magnitude 1e-300 … 1e300;
* ``clusters`` — keys in tight clusters (F spread over a few ulp of the 2^-24 grid that groups them,
  magnitudes up to where the scores stop being tame, 2^39) with queries of both signs.

The checks: (1) `check_lemma` — every key pruned from a block scores, exactly, below the row's top
+ cut − 1, and its float score too (the proof obligation of pruning.pruned_scores), and every cell
lists identical keys with its true multiplicity; (2) `check_contains` — the pruned rigorous bound
contains the exact softmax output at a point of the boxes (midpoints, random corners, or corners
where equal keys move together; Arb) on rows where pruning ran, and overlaps the unpruned bound
everywhere.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from fractions import Fraction
from typing import NamedTuple

import numpy as np

from headcount.core.attention.pruning import (
    MIN_KEYS,
    PRUNE_FROM,
    WINDOW,
    key_groups,
    pruned_scores,
)
from headcount.core.numbers.interval import gamma


class Head(NamedTuple):
    q: tuple  # (mid, rad) [1 n d]
    k: tuple
    v: tuple
    cut: float  # the cut the lemma is checked at


def _pair(mid: np.ndarray, rad: np.ndarray | None = None) -> tuple:
    mid = np.asarray(mid, dtype=np.float64)[None]
    return mid, np.zeros_like(mid) if rad is None else np.asarray(rad, dtype=np.float64)[None]


def _n(rng) -> int:
    return int(rng.integers(MIN_KEYS, MIN_KEYS + 2 * WINDOW))


def _values(rng, n: int) -> tuple:
    dv = int(rng.integers(1, 3))
    scale = float(rng.choice([1.0, 1e-300, 1e300, 2.0**-30, 1e6]))
    v = rng.standard_normal((n, dv)) * scale
    v[rng.random(n) < 0.1] = 0.0
    rad = None if rng.random() < 0.6 else np.abs(v) * 2.0**-20
    return _pair(v, rad)


def _cut(rng) -> float:
    return float(rng.choice([-67.0, -60.5, -110.0, -746.0]))


def digits(rng) -> Head:
    n = _n(rng)
    base = int(rng.integers(8, 40))
    pos = np.arange(n)
    hi, lo = pos // base, pos % base
    k = np.stack([hi, lo, hi**2, lo**2, np.ones(n)], axis=1).astype(np.float64)
    cut = _cut(rng)
    # a one-digit miss costs β; put it at the cut ± a little
    beta = -cut + 1 + float(rng.choice([-3.0, -1.0, -0.01, 0.01, 0.5, 1.0, 3.0]))
    target = np.maximum(pos - int(rng.integers(0, 3)), 0)  # the previous token, or ...
    if rng.random() < 0.5:  # ... a position far back: its neighbours' groups lie where pruning runs
        target = (pos * rng.uniform(0.05, 0.9)).astype(np.int64)
    a_hi, a_lo = target // base, target % base
    q = np.stack(
        [2 * beta * a_hi, 2 * beta * a_lo, -beta * np.ones(n), -beta * np.ones(n), np.zeros(n)], 1
    )
    q_rad = None if rng.random() < 0.7 else np.full(q.shape, float(rng.choice([1e-9, 2.0**-30])))
    return Head(_pair(q, q_rad), _pair(k), _values(rng, n), cut)


def recency(rng) -> Head:
    n = _n(rng)
    alphabet = int(rng.integers(2, 12))
    tokens = rng.integers(0, alphabet, size=n)
    base = max(2, math.isqrt(alphabet - 1) + 1)
    t_hi, t_lo = tokens // base, tokens % base
    cut = _cut(rng)
    g = float(rng.choice([0.5, 1.0, 8.0, -cut / 3, -cut / 2 + 0.01, -cut + 0.5]))
    mismatch = float(rng.choice([-cut - 0.5, -cut + 1, -cut + 4, 2 * n * g]))
    recent = g * np.arange(n, dtype=np.float64)
    if rng.random() < 0.2:  # not monotone: each group's range bounds it
        recent = rng.permutation(recent)
    k = np.stack([t_hi, t_lo, t_hi**2, t_lo**2, recent], axis=1).astype(np.float64)
    query = rng.integers(0, alphabet, size=n)
    q_hi, q_lo = query // base, query % base
    ones = np.ones(n)
    q = np.stack(
        [2 * mismatch * q_hi, 2 * mismatch * q_lo, -mismatch * ones, -mismatch * ones, ones], 1
    )
    return Head(_pair(q), _pair(k), _values(rng, n), cut)


def cells(rng) -> Head:
    n = _n(rng)
    d = int(rng.integers(1, 4))
    palette = rng.standard_normal((int(rng.integers(1, 6)), d)) * float(rng.choice([1.0, 30.0]))
    which = rng.integers(0, len(palette), size=n)
    k = palette[which]
    k_rad = None
    if rng.random() < 0.6:  # radii per palette entry (cells stay identical), a few of their own
        radii = np.abs(palette) * float(rng.choice([2.0**-6, 2.0**-12, 2.0**-30]))
        k_rad = radii[which]
        k_rad[rng.random(n) < float(rng.choice([0.0, 0.01]))] = 2.0**-40
    moved = rng.random(n) < float(rng.choice([0.0, 0.0, 0.001, 0.05]))
    k[moved] = np.nextafter(k[moved], np.inf)  # one ulp: their cell is listed key by key
    q = rng.standard_normal((n, d)) * float(rng.choice([1.0, 10.0, 40.0]))
    q_rad = None if rng.random() < 0.7 else np.full(q.shape, 2.0**-35)
    return Head(_pair(q, q_rad), _pair(k, k_rad), _values(rng, n), _cut(rng))


def clusters(rng) -> Head:
    n = _n(rng)
    d = int(rng.integers(2, 4))
    magnitude = 2.0 ** int(rng.integers(0, 30))
    centres = rng.standard_normal((int(rng.integers(2, 9)), d)) * magnitude
    k = centres[rng.integers(0, len(centres), size=n)]
    ulps = rng.integers(-3, 4, size=k.shape) * np.spacing(np.abs(k))
    k = k + ulps  # a few ulp apart: grouped together, boxes of that width
    q_scale = 2.0 ** float(rng.uniform(-2, 36)) / magnitude
    q = rng.standard_normal((n, d)) * q_scale * rng.choice([1.0, -1.0], size=(n, 1))
    return Head(_pair(q), _pair(k), _values(rng, n), _cut(rng))


FAMILIES: dict[str, Callable[[np.random.Generator], Head]] = {
    "digits": digits,
    "recency": recency,
    "cells": cells,
    "clusters": clusters,
}


# ---- the checks
# --------------------------------------------------------------------------------------


def _exact_dot(q: np.ndarray, k: np.ndarray) -> Fraction:
    return sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(q, k)), Fraction(0))


def check_lemma(head: Head, stride: int = 3) -> dict:
    """pruned_scores' promise on every `stride`-th block (module docstring, check 1); returns the
    counts {blocks, pruned, listed, cells, exact_checks}; AssertionError on a broken promise."""
    qm, km = head.q[0][0], head.k[0][0]
    groups = key_groups(km, np.concatenate([km, head.k[1][0]], 1))
    counts = {"blocks": 0, "pruned": 0, "listed": 0, "cells": 0, "exact_checks": 0}
    if groups is None:
        return counts
    n, d = km.shape
    for start in range(PRUNE_FROM, n, stride * WINDOW // 2):
        block = min(WINDOW, n - start)
        q = qm[start : start + block]
        cut = np.full(block, head.cut)
        scored = pruned_scores(q, km, groups, start, cut, np.inf)
        if scored is None:
            continue
        counts["blocks"] += 1
        w0 = scored.w0
        listed = np.zeros((block, w0), dtype=bool)
        listed[scored.row, scored.key] = True
        top = scored.window.max(axis=1)
        np.maximum.at(top, scored.row, scored.score)
        np.maximum.at(top, scored.cell_row, scored.cell_score)
        if len(scored.cell):
            cell_of = groups.cell_of[:w0]
            count = np.bincount(cell_of, minlength=len(groups.cell_same))
            assert (count[scored.cell] == scored.cell_mult).all(), (
                "a cell's multiplicity is not its count before w0"
            )
            rows = np.concatenate([km, head.k[1][0]], 1)[:w0]
            by_cell = np.argsort(cell_of, kind="stable")
            first = np.searchsorted(cell_of[by_cell], np.arange(len(count)))
            lead = rows[by_cell[np.minimum(first, w0 - 1)]][cell_of]  # each key's cell's first key
            same = np.all(rows == lead, axis=1)
            assert same[np.isin(cell_of, scored.cell)].all(), "a cell lists keys that differ"
            members = by_cell[
                np.repeat(first[scored.cell], scored.cell_mult)
                + np.arange(int(scored.cell_mult.sum()))
                - np.repeat(np.cumsum(scored.cell_mult) - scored.cell_mult, scored.cell_mult)
            ]
            listed[np.repeat(scored.cell_row, scored.cell_mult), members] = True
            counts["cells"] += len(scored.cell)
        counts["listed"] += int(listed.sum())
        pruned_r, pruned_k = np.nonzero(~listed)
        counts["pruned"] += len(pruned_r)
        if not len(pruned_r):
            continue
        threshold = top[pruned_r] + head.cut - 1
        float_score = np.einsum("cd,cd->c", q[pruned_r], km[pruned_k])
        assert (float_score < threshold).all(), "a pruned key's float score reaches the cut"
        matmul = (q @ km[:w0].T)[pruned_r, pruned_k]
        assert (matmul < threshold).all(), "a pruned key's float score reaches the cut"
        slack = gamma(d + 1) * np.einsum("cd,cd->c", np.abs(q[pruned_r]), np.abs(km[pruned_k]))
        close = ~(float_score + 2 * slack + 2.0**-1000 < threshold)
        for r, key in zip(pruned_r[close], pruned_k[close]):  # decide the close calls exactly
            counts["exact_checks"] += 1
            limit = Fraction(float(top[r])) + Fraction(head.cut) - 1
            assert _exact_dot(q[r], km[key]) < limit, "a pruned key's exact score reaches the cut"
    return counts


def check_contains(head: Head, rows: int = 12, seed: int = 0) -> dict:
    """The pruned bound against the exact softmax at a point of the boxes and against the unpruned
    bound (module docstring, check 2); returns {rows, compared}; AssertionError on a miss."""
    from flint import arb, ctx

    from headcount.core.attention import blocked_attention_bounds
    from headcount.core.attention.settings import use_pruning

    with np.errstate(all="ignore"):
        with use_pruning(True):
            mid, rad = blocked_attention_bounds(head.q, head.k, head.v, "causal")
        with use_pruning(False):
            mid0, rad0 = blocked_attention_bounds(head.q, head.k, head.v, "causal")
    both = np.isfinite(rad) & np.isfinite(rad0)
    assert (np.abs(mid - mid0)[both] <= (rad + rad0)[both] * (1 + 1e-12)).all(), (
        "the pruned and unpruned bounds are disjoint"
    )
    n = len(head.q[0][0])
    rng = np.random.default_rng(seed)
    # a point of the boxes: the midpoints, random corners (each coordinate at mid − rad, mid or
    # mid + rad), or "aligned" corners: equal keys move together, each group of them up or down
    # along the query's signs (what shifts weight between a cell and the rest the most)
    mode = str(rng.choice(["mid", "corner", "aligned", "aligned"]))
    signs = [
        rng.choice([-1.0, 0.0, 1.0], size=a[0][0].shape) * (mode == "corner")
        for a in (head.q, head.k, head.v)
    ]
    side = np.sign(head.k[0][0] @ rng.standard_normal(head.k[0][0].shape[1]))  # [key]
    chosen = rng.choice(np.arange(PRUNE_FROM, n), size=min(rows, n - PRUNE_FROM), replace=False)
    old = ctx.prec
    ctx.prec = 200
    try:
        (qm, qr), (km, kr), (vm, vr) = ((a[0][0], a[1][0]) for a in (head.q, head.k, head.v))

        def point(mid, rad, sign, i):
            return [
                arb(float(m)) + float(s) * arb(float(r)) for m, r, s in zip(mid[i], rad[i], sign[i])
            ]

        compared = 0
        for i in chosen.tolist():
            if not np.isfinite(rad[0, i]).all():
                continue
            q = point(qm, qr, signs[0], i)
            if mode == "aligned":
                signs[1][: i + 1] = side[: i + 1, None] * np.sign(qm[i])[None, :]
            scores = [
                sum((a * b for a, b in zip(q, point(km, kr, signs[1], j))), arb(0))
                for j in range(i + 1)
            ]
            top = max(float(s.mid()) for s in scores)
            weights = [(s - top).exp() for s in scores]
            total = sum(weights, arb(0))
            values = [point(vm, vr, signs[2], j) for j in range(i + 1)]
            for c in range(vm.shape[1]):
                exact = sum((w * values[j][c] for j, w in enumerate(weights)), arb(0)) / total
                box = arb(float(mid[0, i, c]), float(rad[0, i, c]))
                assert box.contains(exact), (
                    f"row {i} coordinate {c}: exact {exact} outside the pruned box {box}"
                )
            compared += 1
    finally:
        ctx.prec = old
    return {"rows": len(chosen), "compared": compared}
