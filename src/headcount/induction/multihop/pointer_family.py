"""The feature families of pointer_rank.py and their float side: the exact features Φ (poly,
fourier), the gap rows Φ[i] ⊗ (Φ[hi] − Φ[lo]) in gap_index order, and the margin LP handed to
HiGHS. Nothing here decides a verdict: pointer_rank.py checks every answer in exact arithmetic."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from fractions import Fraction

import flint
import numpy as np
from scipy.optimize import linprog

from headcount.common.errors import InputError, param
from headcount.common.validate import check_int

FAMILIES = ("poly", "fourier")
GRID_BITS = 40  # the rationalised A and the fourier features are multiples of 2^-GRID_BITS
# Tighter than HiGHS's 1e-7 defaults: at n = 64 the margins at the minimal rank are ~1e-6.
HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}

Matrix = tuple[tuple[Fraction, ...], ...]
Certificate = tuple[tuple[int, ...], tuple[Fraction, ...]]  # (support, y on the support)


class PointerRankError(RuntimeError):
    """HiGHS's answer could not be made into an exact certificate either way: no verdict."""


def check_family(family: str) -> str:
    """`family` if it is one of FAMILIES; InputError otherwise."""
    if family not in FAMILIES:
        raise InputError(f"{param('family')} must be one of {', '.join(FAMILIES)}, got {family!r}")
    return family


def chebyshev_row(x: Fraction, r: int) -> tuple[Fraction, ...]:
    """T_0(x)..T_{r−1}(x), exactly (the three-term recurrence)."""
    t = [Fraction(1), x]
    while len(t) < r:
        t.append(2 * x * t[-1] - t[-2])
    return tuple(t[:r])


def chebyshev_features(n: int, r: int) -> Matrix:
    """T_0..T_{r−1} at x_j = (2j − (n − 1))/(n − 1), exact (|T_k| ≤ 1 on [−1, 1])."""
    scale = Fraction(1, n - 1) if n > 1 else Fraction(0)
    return tuple(chebyshev_row((2 * j - (n - 1)) * scale, r) for j in range(n))


def dyadic_trig(j: int, a: int, n: int) -> tuple[Fraction, Fraction]:
    """(cos, sin)(π a j/n), each rounded to the nearest multiple of 2^−GRID_BITS."""
    with flint.ctx.workprec(128):  # a ball far narrower than the grid: the rounding is certain
        s, c = flint.arb.sin_cos_pi_fmpq(flint.fmpq(a * j, n))
        half = flint.arb(flint.fmpq(1, 2))
        out = [(v * 2**GRID_BITS + half).floor().unique_fmpz() for v in (c, s)]
    if any(k is None for k in out):  # only at a tie, which π a j/n never gives
        raise PointerRankError(f"cos/sin(π·{a}·{j}/{n}) sits on a rounding tie")
    return tuple(Fraction(int(k), 2**GRID_BITS) for k in out)  # type: ignore[return-value]


def fourier_features(n: int, r: int) -> Matrix:
    """1, cos(π j/n), sin(π j/n), cos(2π j/n), … (r columns), rounded to the 2^−GRID_BITS grid."""
    rows = []
    for j in range(n):
        row = [Fraction(1)]
        a = 1
        while len(row) < r:
            row.extend(dyadic_trig(j, a, n))
            a += 1
        rows.append(tuple(row[:r]))
    return tuple(rows)


@functools.lru_cache(maxsize=64)
def pointer_features(family: str, n: int, r: int) -> Matrix:
    """The exact features Φ [n × r] of `family`, as a tuple of n rows of Fractions (|Φ| ≤ 1);
    `fmpq_matrix` turns them into python-flint's fmpq_mat for exact products. Cached (immutable):
    a search, its shift lift and check_pointer_rank read the same Φ, slow to build in rationals at
    n = 1024."""
    check_family(family)
    n, r = check_int("n", n, low=1), check_int("r", r, low=1)
    return chebyshev_features(n, r) if family == "poly" else fourier_features(n, r)


def fmpq_matrix(rows: Sequence[Sequence[Fraction]]) -> flint.fmpq_mat:
    """A matrix of Fractions as python-flint's exact fmpq_mat."""
    flat = [flint.fmpq(x.numerator, x.denominator) for row in rows for x in row]
    return flint.fmpq_mat(len(rows), len(rows[0]) if rows else 0, flat)


def gap_index(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(query, lo, hi) of every gap G[query, hi] − G[query, lo] that must be > 0, in this order:
    for i = 1..n − 1, first (i, lo=i, hi=0), then (i, lo=j − 1, hi=j) for j = 1..i − 1."""
    query, lo, hi = [], [], []
    for i in range(1, n):
        query += [i] * i
        lo += [i, *range(i - 1)]
        hi += [0, *range(1, i)]
    return tuple(np.array(v, dtype=np.int64) for v in (query, lo, hi))  # type: ignore[return-value]


@dataclasses.dataclass(frozen=True, eq=False)
class PointerRows(Sequence):
    """The constraint rows Φ[i] ⊗ (Φ[hi] − Φ[lo]) (length r², gap_index order), lazily: rows[k]
    is row k in exact Fractions (what core.numbers.gordan reads, only on a support)."""

    features: Matrix
    query: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    def __len__(self) -> int:
        return len(self.query)

    def __getitem__(self, k):  # type: ignore[override]
        k = range(len(self))[k]  # IndexError past the end, which Sequence's iteration relies on
        phi = self.features
        i, lo, hi = int(self.query[k]), int(self.lo[k]), int(self.hi[k])
        diff = [h - low for h, low in zip(phi[hi], phi[lo])]
        return [p * d for p in phi[i] for d in diff]

    def exact_matrix(self) -> flint.fmpq_mat:
        """All the rows as python-flint's fmpq_mat [K × r²] (K = n(n − 1)/2)."""
        return fmpq_matrix([self[k] for k in range(len(self))])

    def float_matrix(self) -> np.ndarray:
        """All the rows in float64 [K × r²], for HiGHS."""
        phi = np.array([[float(x) for x in row] for row in self.features])
        diff = phi[self.hi] - phi[self.lo]
        return (phi[self.query][:, :, None] * diff[:, None, :]).reshape(len(self), -1)


def pointer_rows(features: Matrix) -> PointerRows:
    """The gap rows of `features` (see PointerRows)."""
    return PointerRows(features, *gap_index(len(features)))


def rationalise(values: np.ndarray) -> Matrix:
    """A float A [r × r] rounded to multiples of 2^−GRID_BITS and clipped to [−1, 1], exactly."""
    scale = 2**GRID_BITS
    return tuple(
        tuple(Fraction(max(-scale, min(scale, round(float(v) * scale))), scale) for v in row)
        for row in np.asarray(values)
    )


def exact_dual(y: np.ndarray) -> Certificate:
    """HiGHS's dual y made exact: its positive entries as exact binary fractions (each float is
    one), renormalised so Σ y = 1 exactly; (support, values)."""
    support = tuple(int(k) for k in np.flatnonzero(y > 0))
    values = [Fraction(float(y[k])) for k in support]
    total = sum(values, Fraction(0))
    if total <= 0:
        raise PointerRankError("HiGHS's dual has no positive entry")
    return support, tuple(v / total for v in values)


def margin_lp(M: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """HiGHS on max m s.t. M a ≥ m, |a| ≤ 1: (m, a, y) with y ≥ 0 the dual of the gap rows. Tight
    tolerances first; on a solve error, the interior-point method, then HiGHS's defaults."""
    k, w = M.shape
    cost = np.zeros(w + 1)
    cost[-1] = -1.0  # linprog minimises −m
    messages = []
    for method, options in (("highs", HIGHS_OPTIONS), ("highs-ipm", HIGHS_OPTIONS), ("highs", {})):
        res = linprog(
            cost,
            A_ub=np.hstack([-M, np.ones((k, 1))]),
            b_ub=np.zeros(k),
            bounds=[(-1, 1)] * w + [(None, None)],
            method=method,
            options=options,
        )
        if res.status == 0:
            return -float(res.fun), res.x[:w], -res.ineqlin.marginals
        messages.append(f"{method}: {res.message}")
    raise PointerRankError(f"HiGHS did not solve the margin LP ({'; '.join(messages)})")
