"""Exact rounding of one attention head's output in the fixed:p model (spec/README.md "Precision
semantics").

A head output coordinate y = Σ_j e^{s_j} u_j / Σ_j e^{s_j} is transcendental in general. It is
evaluated as an arb ball (arb_mat products, scores shifted by their exact maximum). Rounding y needs
only the grid cell it lies in: when the ball straddles a single tie point t (an odd multiple of
2^-(p+1)), the sign of y − t is the sign of Σ_j e^{s_j}(u_j − t), an exponential polynomial with
rational data, decided exactly by core.numbers.expsum.sign_exp_poly (zero ⇒ a true tie ⇒ half to
even); when it straddles more, the precision doubles (core.numbers.expsum.UndecidedError past
core.numbers.expsum.MAX_PREC bits). Used by the exact evaluator (core.passes.exact_fixed) for whole
inputs and by the bounds (bounds.settle_ties) for one query row; it imports nothing of the model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import flint
import numpy as np

from headcount.core.attention import TIES
from headcount.core.numbers import (
    MAX_PREC,
    UndecidedError,
    dyadic,
    fmpz_mat,
    int_array,
    int_matmul,
    sign_exp_poly,
)

EXTRA_PREC = 64  # arb bits beyond the 2p+1 a head output needs to tell its grid cells apart


class _HeadRounder:
    """Rounds y_ic = Σ_j e^{s_ij} u_jc / Σ_j e^{s_ij} to the 2^-p grid for one head on one sequence.

    Works in units of 2^-(p+1): w = y·2^{p+1}, so grid points are even integers and ties odd ones.
    u_jc = us_jc / den_factor exactly (us ints); scores s_ij = (D_ij + max_i) / 2^{2p} with D_ij ≤ 0
    ints."""

    def __init__(
        self,
        shifted: list[list[tuple[int, int]]],
        us: np.ndarray,
        den_factor: int,
        bits: int,
        far: tuple[flint.arb, list[flint.arb]] | None = None,
    ):
        self.shifted = shifted  # per query row: [(key j, D_ij)] over the visible keys
        self.us = us  # [keys d] ints
        self.den_factor = den_factor
        self.bits = bits
        self.score_den = 1 << (2 * bits)
        self.bound = 1 << (2 * bits)
        # one row's far keys, left out of `shifted`: balls holding their Σ e^{D/2^2p} and, per
        # coordinate, their Σ e^{D/2^2p}·us (_far_keys_ball)
        self.far = far

    def _weight(self, d: int, cache: dict) -> flint.arb:
        if d == 0:
            return flint.arb(1)
        if d not in cache:
            cache[d] = (flint.arb(d) / self.score_den).exp()
        return cache[d]

    def balls(self, prec: int) -> list[list[flint.arb]]:
        """w for every (query row, coordinate) at `prec` bits, by one arb_mat product."""
        rows, keys, width = len(self.shifted), self.us.shape[0], self.us.shape[1]
        flint.ctx.prec = prec
        cache: dict = {}
        weights = flint.arb_mat(rows, keys)
        dens = []
        for r, row in enumerate(self.shifted):
            den = flint.arb(0)
            for j, d in row:
                weights[r, j] = self._weight(d, cache)
                den += weights[r, j]
            if self.far is not None:
                den += self.far[0]
            dens.append(den * self.den_factor)
        numer = weights * flint.arb_mat(fmpz_mat(self.us)) if width else None
        far = self.far[1] if self.far is not None else [flint.arb(0)] * width
        return [[(numer[r, c] + far[c]) / dens[r] for c in range(width)] for r in range(rows)]

    def ball(self, r: int, c: int, prec: int) -> flint.arb:
        """w for one entry at `prec` bits (the retry path)."""
        flint.ctx.prec = prec
        cache: dict = {}
        num, den = flint.arb(0), flint.arb(0)
        for j, d in self.shifted[r]:
            weight = self._weight(d, cache)
            num += weight * int(self.us[j, c])
            den += weight
        return num / (den * self.den_factor)

    def _locate(self, w: flint.arb) -> tuple[str, int]:
        """Where w lies: ("grid", N) when it rounds to N for sure (clip included), ("tie", t) when
        the ball holds exactly one tie point t, ("wide", 0) when it holds more (or is not
        finite)."""
        if not w.is_finite():
            return "wide", 0
        clip = flint.arb(2 * self.bound)  # y = ±2^p
        if w > clip:
            return "grid", self.bound
        if w < -clip:
            return "grid", -self.bound
        k = ((w + 1) / 2).floor().unique_fmpz()
        if k is not None and w > 2 * int(k) - 1:  # w ∈ (2k−1, 2k+1): y·2^p rounds to k
            return "grid", int(k)
        lo, hi = _ball_ends(w)
        first_odd = int(lo.ceil())
        first_odd += 1 - (first_odd & 1)
        if first_odd > hi:
            return "grid", int(((lo + 1) / 2).floor())
        if first_odd + 2 <= hi:
            return "wide", 0
        return "tie", first_odd

    def _settle_tie(self, r: int, c: int, t: int) -> int:
        """Exact rounding of w near the odd integer t: sign of Σ_j e^{s_j}(u_j·2^{p+1} − t)."""
        poly: dict = {}
        for j, d in self.shifted[r]:
            exponent = flint.fmpq(d, self.score_den)
            poly[exponent] = (
                poly.get(exponent, flint.fmpq(0))
                + flint.fmpq(int(self.us[j, c]), self.den_factor)
                - t
            )
        sign = sign_exp_poly(poly)
        if sign == 0:  # a true tie: half to even
            return (t - 1) // 2 if ((t - 1) // 2) % 2 == 0 else (t + 1) // 2
        return (t + 1) // 2 if sign > 0 else (t - 1) // 2

    def round_all(self) -> np.ndarray:
        """[rows d] grid integers N (value N / 2^p) of the head output, clipped."""
        prec0 = 2 * self.bits + EXTRA_PREC
        balls = self.balls(prec0)
        out = []
        for r, row in enumerate(balls):
            for c, w in enumerate(row):
                out.append(self._round_entry(r, c, w, prec0))
        return np.clip(int_array(out, (len(balls), self.us.shape[1])), -self.bound, self.bound)

    def _round_entry(self, r: int, c: int, w: flint.arb, prec: int) -> int:
        where, value = self._locate(w)
        while where == "wide":
            prec *= 2
            if prec > MAX_PREC:
                raise UndecidedError(
                    f"undecided: a head output was not resolved at {MAX_PREC} bits of arb precision"
                )
            where, value = self._locate(self.ball(r, c, prec))
        return value if where == "grid" else self._settle_tie(r, c, value)


def _ball_ends(x: flint.arb) -> tuple[flint.fmpq, flint.fmpq]:
    """Exact rational endpoints of an arb ball."""
    mid_m, mid_e = x.mid().man_exp()
    rad_m, rad_e = x.rad().man_exp()
    mid, rad = _dyadic_fmpq(int(mid_m), int(mid_e)), _dyadic_fmpq(int(rad_m), int(rad_e))
    return mid - rad, mid + rad


def _dyadic_fmpq(man: int, exp: int) -> flint.fmpq:
    return flint.fmpq(man << exp) if exp >= 0 else flint.fmpq(man, 1 << -exp)


def head_output(
    q: np.ndarray,
    k: np.ndarray,
    u: np.ndarray,
    e_u: int,
    bits: int,
    causal: bool,
    rows: Sequence[int],
) -> np.ndarray:
    """Rounded softmax(q kᵀ) u for the query rows `rows` of one sequence: [len(rows) d] grid ints.
    q, k: [pos d_head] grid ints (units 2^-p); u: [pos d] ints with value u / 2^e_u."""
    n = q.shape[0]
    scores = (
        (fmpz_mat(q) * fmpz_mat(k).transpose()).tolist()
        if q.shape[1]
        else [[0] * n for _ in range(n)]
    )
    shifted = []
    for i in rows:
        visible = [(j, int(scores[i][j])) for j in range(i + 1 if causal else n)]
        top = max(s for _, s in visible)
        shifted.append([(j, s - top) for j, s in visible])
    scale = bits + 1 - e_u  # w = y·2^{p+1} = Σ α_j u_j·2^scale
    us, den_factor = (u << scale, 1) if scale >= 0 else (u, 1 << -scale)
    old = flint.ctx.prec
    try:
        return _HeadRounder(shifted, us, den_factor, bits).round_all()
    finally:
        flint.ctx.prec = old


def grid_box(N: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """(mid, rad) float64 boxes around the exact grid values N/2^p (N an object array of Python
    ints, up to 2p+1 bits): mid the float nearest to N/2^p, rad its exact distance to it — 0 only
    where N/2^p is itself a float64 number (|N| < 2^53, or N with enough trailing zero bits), else
    that distance rounded up (it may itself need more than 53 bits once N has over 106)."""
    ints = [int(x) for x in np.asarray(N, dtype=object).ravel().tolist()]
    nearest = [float(x) for x in ints]  # round to nearest: |x − int(float(x))| ≤ half an ulp
    scale = 2.0**-bits  # exact scalings: grid values are far above the subnormal range
    mid = np.array(nearest, dtype=np.float64).reshape(np.shape(N)) * scale
    rad = np.array([_float_up(abs(x - int(f))) for x, f in zip(ints, nearest)]).reshape(np.shape(N))
    return mid, rad * scale


def _float_up(d: int) -> float:
    """The smallest float64 ≥ the integer d ≥ 0 (float(d) rounds to nearest, possibly down)."""
    r = float(d)
    return r if int(r) >= d else math.nextafter(r, math.inf)


FAR_FROM = 1024  # keys: from here exact_head_row tries bounding the far keys as one ball first
FAR_MARGIN_BITS = 30  # the far keys move w (units 2^-(p+1)) by at most 2^-30


def _far_split(q_row: np.ndarray, k: np.ndarray, v: np.ndarray, W_O: np.ndarray, bits: int):
    """(near key indices, T, far Σ|v_j W_O| bound [d_model]) where every key left out scores at
    least T below the top exactly, or None (no key is that far, or a float is not finite).

    Why it is sound: q and k are on the 2^-p grid, so each float64 score q·k_j is within
    γ_d·Σ|q||k_j| ≤ E of the exact one (any summation order, FMA included), E taken with a factor 2
    over the bound; a key whose float score is below the top float score − T − 2E is at least T
    below the exact top. Σ_far |v_j W_O| is bounded by float sums of non-negative terms (relative
    error ≤ γ_(keys+d) < 2^-20) scaled up by 1 + 2^-20."""
    keys, d = k.shape
    with np.errstate(all="ignore"):
        approx, mag = k @ q_row, np.abs(k) @ np.abs(q_row)
        abs_u = np.abs(v) @ np.abs(W_O)  # [keys d_model]
    if not (np.isfinite(approx).all() and np.isfinite(mag).all() and np.isfinite(abs_u).all()):
        return None
    E = (d + 2) * 2.0**-52 * float(mag.max())
    # the far keys may move y by 2·keys·e^{-T}·max|u|: w = y·2^(p+1) by at most 2^-FAR_MARGIN_BITS
    spread = 2.0 * keys * float(abs_u.max()) * 2.0 ** (bits + 1) + 1.0
    T = math.log(spread) + FAR_MARGIN_BITS * math.log(2) + 1.0
    far = approx < float(approx.max()) - T - 2 * E
    if not far.any() or not math.isfinite(T):
        return None
    with np.errstate(all="ignore"):
        far_u = (np.abs(v[far]).sum(axis=0) @ np.abs(W_O)) * (1 + 2.0**-20)
    if not np.isfinite(far_u).all():
        return None
    return np.flatnonzero(~far), T, int(far.sum()), far_u


def _far_keys_ball(
    q_row: np.ndarray, k: np.ndarray, v: np.ndarray, W_O: np.ndarray, bits: int
) -> np.ndarray | None:
    """exact_head_row's rounded row [d_model] from the near keys exactly and the far ones
    (_far_split) as balls: their weights Σ e^{s_j − top} ∈ [0, far·e^{-T}], their numerators
    within e^{-T}·Σ_far |u_j|. None when a coordinate's ball is not inside one grid cell (a
    near-tie): the caller then takes every key exactly."""
    split = _far_split(q_row, k, v, W_O, bits)
    if split is None:
        return None
    near, T, far_count, far_u = split
    scores, us, den_factor = _exact_parts(q_row, k[near], v[near], W_O, bits)
    top = max(int(s) for s in scores)
    old = flint.ctx.prec
    try:
        flint.ctx.prec = 2 * bits + EXTRA_PREC
        tail = flint.arb(-T).exp()
        far_den = flint.arb(0).union(flint.arb(far_count) * tail)
        unit = flint.arb(2) ** (bits + 1) * den_factor  # us = u·2^(p+1)·den_factor
        far_num = []
        for bound in far_u.tolist():
            x = tail * flint.arb(bound) * unit
            far_num.append(x.union(-x))
        rounder = _HeadRounder(
            [[(j, int(s) - top) for j, s in enumerate(scores)]], us, den_factor, bits,
            (far_den, far_num),
        )  # fmt: skip
        row = []
        for w in rounder.balls(2 * bits + EXTRA_PREC)[0]:
            where, value = rounder._locate(w)
            if where != "grid":
                return None
            row.append(value)
    finally:
        flint.ctx.prec = old
    return np.clip(int_array(row, (len(row),)), -rounder.bound, rounder.bound)


def _exact_parts(q_row: np.ndarray, k: np.ndarray, v: np.ndarray, W_O: np.ndarray, bits: int):
    """(exact scores [keys] in units 2^-2p, us [keys d_model] ints, den_factor) of
    _HeadRounder for one query row over the keys k, v (on the 2^-p grid)."""
    scale = float(2.0**bits)
    q_ints, k_ints, v_ints = (
        int_array([int(x) for x in (a * scale).ravel().tolist()], a.shape) for a in (q_row, k, v)
    )
    scores = (
        int_matmul(k_ints, fmpz_mat(q_ints[:, None]))[:, 0]
        if q_ints.size
        else int_array([0] * len(k), (len(k),))
    )
    w_o, e_o = dyadic(W_O)
    u = int_matmul(v_ints, fmpz_mat(w_o))  # value ints / 2^(p + e_O)
    shift = bits + 1 - (bits + e_o)
    us, den_factor = (u << shift, 1) if shift >= 0 else (u, 1 << -shift)
    return scores, us, den_factor


def exact_head_row(
    q_row: np.ndarray, k: np.ndarray, v: np.ndarray, W_O: np.ndarray, bits: int
) -> tuple[np.ndarray, np.ndarray]:
    """The fixed:p head output round(softmax(q kᵀ) v W_O) of ONE query from exact inputs, as a box
    (mid, rad) [d_model] (grid_box: radius 0 only where the grid value is a float64 number — with p
    ≥ 27 it may need up to 2p+1 bits): q_row [d_head], k [keys d_head] and v [keys d_value] on the
    2^-p grid (the rounded projections), W_O any float64 matrix, score scale 1. What the bounds call
    when one head output's box straddles a rounding tie (bounds.settle_ties): O(keys · d) exact
    work, not a pass. From FAR_FROM keys on, the keys far below the top are first bounded as one
    ball (_far_keys_ball: exact work on the near keys only); every key is taken exactly where that
    ball leaves a coordinate near a tie."""
    if len(k) >= FAR_FROM and (row := _far_keys_ball(q_row, k, v, W_O, bits)) is not None:
        TIES.add(far_balls=1)
        return grid_box(row, bits)
    scores, us, den_factor = _exact_parts(q_row, k, v, W_O, bits)
    top = max(int(s) for s in scores)
    old = flint.ctx.prec
    try:
        row = _HeadRounder(
            [[(j, int(s) - top) for j, s in enumerate(scores)]], us, den_factor, bits
        ).round_all()
    finally:
        flint.ctx.prec = old
    return grid_box(row[0], bits)
