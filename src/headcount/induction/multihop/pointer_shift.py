"""The shift lift: the last query's pointer order, solved alone, made into every query's.

The last query's gaps ask one function of the key position, p(j) = G[n − 1, j], to rise on
0..n − 2 and end below its start: p(n − 1) < p(0). Every G in the family has such a row, which is
why a Gordan certificate on those gaps alone refutes a rank (pointer_rank.last_query_gordan).
Conversely, let f be a function of the offset s = j − i (−(n − 1) ≤ s ≤ n − 1) that rises on
s = −(n − 1)..−1 and has f(0) < f(−(n − 1)); then G[i, j] = f(j − i) orders every query: row i
sees f on −i..0, rising on all but the last point, and f(0) < f(−(n − 1)) ≤ f(−i). Its margin is
the last query's (row i's gaps are among row n − 1's, or larger).

When span(Φ) is shift invariant, f(j − i) lies in span(Φ) ⊗ span(Φ) at the same rank r:

* ``"poly"``: a polynomial of degree < r in s is one of degree < r in each of i and j — so within
  this family the minimal rank is decided by the last query alone: r(n) = 1 + the least degree
  of a polynomial that rises on n − 1 consecutive points and ends below its start;
* ``"fourier"`` at odd r = 2K + 1 (frequencies 1..K with both cos and sin): cos(πa(j − i)/n) =
  cos·cos + sin·sin and sin(πa(j − i)/n) = sin·cos − cos·sin. At even r the last frequency has
  its cosine only, the span is not shift invariant, and the margin LP decides.

`shift_solution` solves the univariate LP for f (HiGHS; f in the family's own basis over s, see
`offset_basis`), rounds f to the 2^−GRID_BITS grid, tabulates P[i, j] = f(j − i) exactly and
projects it: A = K Φᵀ P Φ K with K = (ΦᵀΦ)⁻¹, so Φ A Φᵀ = P wherever P is in the span (poly:
always; fourier: up to the features' 2^−40 rounding), scaled to |A| ≤ 1. The caller
(pointer_rank.search_pointer_rank) accepts A only if its exact margin over all the gaps is > 0.
The univariate LP's dual y weights the last query's gaps, so it is a dual of the full margin LP
(zeros elsewhere) and bounds m* from above — a valid bound, not the optimum's.
"""

from __future__ import annotations

from fractions import Fraction

import flint
import numpy as np

from headcount.induction.multihop.pointer_family import (
    GRID_BITS,
    Certificate,
    Matrix,
    PointerRankError,
    chebyshev_row,
    exact_dual,
    fmpq_matrix,
    margin_lp,
    pointer_features,
)


def shift_invariant(family: str, r: int) -> bool:
    """The family's rank-r span is closed under shifts of the position (module docstring)."""
    return family == "poly" or r % 2 == 1


def offset_basis(family: str, n: int, r: int) -> Matrix:
    """The span's basis as functions of the offset s = −(n − 1)..(n − 1) (row s + n − 1), exact:
    poly — T_0..T_{r−1} at (2s + n − 1)/(n − 1), i.e. the features at position s + n − 1
    extended past n − 1; fourier — 1, cos(πas/n), sin(πas/n), from the rounded features at |s|
    (sin is odd), so f(j − i) is Φ[i] A Φ[j]ᵀ up to that rounding."""
    if family == "poly":
        scale = Fraction(1, n - 1) if n > 1 else Fraction(0)
        return tuple(chebyshev_row((2 * s + n - 1) * scale, r) for s in range(-(n - 1), n))
    features = pointer_features(family, n, r)
    odd = [a % 2 == 0 and a > 0 for a in range(r)]  # columns 2, 4, … are the sines
    return tuple(
        tuple(-v if s < 0 and odd[a] else v for a, v in enumerate(features[abs(s)]))
        for s in range(-(n - 1), n)
    )


def last_query_lp(basis: Matrix, n: int) -> tuple[float, np.ndarray, np.ndarray]:
    """HiGHS on the univariate margin LP: max m s.t. f(−(n − 1)) − f(0) ≥ m and f(s) − f(s − 1)
    ≥ m for s = −(n − 2)..−1, |coefficient| ≤ 1; (m, coefficients, y), the rows in the order of
    the last query's gaps in gap_index (lo = n − 1, hi = 0 first)."""
    B = np.array([[float(v) for v in row] for row in basis])
    first = B[0] - B[n - 1]  # offsets −(n − 1) and 0 are rows 0 and n − 1
    steps = B[1 : n - 1] - B[: n - 2]
    return margin_lp(np.vstack([first[None, :], steps]))


def shifted_table(basis: Matrix, coef: tuple[Fraction, ...], n: int) -> flint.fmpq_mat:
    """P [n × n] with P[i, j] = f(j − i), f = Σ_a coef[a]·basis_a, exactly."""
    values = [sum((c * v for c, v in zip(coef, row)), Fraction(0)) for row in basis]
    flat = [values[j - i + n - 1] for i in range(n) for j in range(n)]
    return flint.fmpq_mat(n, n, [flint.fmpq(v.numerator, v.denominator) for v in flat])


def project_scores(features: Matrix, table: flint.fmpq_mat) -> Matrix | None:
    """The A [r × r] with Φ A Φᵀ the projection of `table` on span(Φ) ⊗ span(Φ), exactly, scaled
    by one positive factor to max |A| = 1 (a scaling keeps every gap's sign); None when Φ's
    columns are dependent (r > n, where the margin LP decides instead)."""
    phi = fmpq_matrix(features)
    gram = phi.transpose() * phi
    if gram.rank() < gram.nrows():
        return None
    gram_inv = gram.inv()
    A = gram_inv * phi.transpose() * table * phi * gram_inv
    entries = [Fraction(int(v.p), int(v.q)) for v in A.entries()]
    top = max(abs(v) for v in entries)
    if top == 0:
        raise PointerRankError("the shifted scores project to A = 0")
    r = len(features[0])
    return tuple(tuple(v / top for v in entries[a * r : (a + 1) * r]) for a in range(r))


def shift_solution(family: str, n: int, r: int) -> tuple[Matrix, Certificate, float] | None:
    """(A, dual, univariate margin) from the shift lift, or None when the univariate LP's optimum
    is not positive or Φ's columns are dependent (the caller then solves the margin LP). The dual is
    numbered as the full gap rows (the last query's n − 1 gaps come last in gap_index). Only for
    a shift_invariant (family, r); A's strictness is for the caller to check exactly."""
    if not shift_invariant(family, r):
        raise ValueError(f"{family} at rank {r} is not shift invariant")
    basis = offset_basis(family, n, r)
    margin, coef, y = last_query_lp(basis, n)
    if margin <= 0:
        return None
    scale = 2**GRID_BITS
    exact = tuple(Fraction(round(float(c) * scale), scale) for c in coef)
    A = project_scores(pointer_features(family, n, r), shifted_table(basis, exact, n))
    if A is None:
        return None
    support, values = exact_dual(y)
    first = n * (n - 1) // 2 - (n - 1)
    return A, (tuple(first + k for k in support), values), margin
