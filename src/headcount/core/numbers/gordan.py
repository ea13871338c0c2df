"""Gordan's alternative as an exact certificate: a strict homogeneous system row_k·x > 0 (rows
rational) has no solution iff some y ≥ 0, y ≠ 0 has Σ_k y_k·row_k = 0. `gordan_certificate`
finds y with HiGHS (the support of its solution, solved exactly in python-flint) and falls back to
`exact_gordan`, phase 1 of the simplex method in exact rationals (Bland's rule); `check_gordan`
checks a certificate exactly. The search's infeasible systems (boolean minimal, minmax minimal)
are refuted with these.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import flint
import numpy as np
from scipy.optimize import linprog


def float_matrix(rows: Sequence[Sequence[Fraction]]) -> np.ndarray:
    """The rows in float64 (for HiGHS; every verdict is then checked exactly)."""
    return np.array([[float(x) for x in r] for r in rows])


def strict_solution(A: np.ndarray) -> np.ndarray | None:
    """x with A x ≥ 1 (HiGHS), or None when the system is infeasible."""
    res = linprog(
        np.zeros(A.shape[1]), A_ub=-A, b_ub=-np.ones(A.shape[0]), bounds=(None, None),
        method="highs",
    )  # fmt: skip
    return res.x if res.status == 0 else None


def gordan_certificate(
    rows: Sequence[Sequence[Fraction]], A: np.ndarray | None = None
) -> tuple[tuple[int, ...], tuple[Fraction, ...]] | None:
    """An exact y ≥ 0, Σ y = 1, with Σ_k y_k·row_k = 0: HiGHS finds a support, python-flint solves
    it exactly. None when the system is feasible or no support tried gives an exact certificate.
    `A` is the rows in float64 when the caller has it (only the support's exact rows are read)."""
    A = float_matrix(rows) if A is None else A
    k, width = A.shape
    res = linprog(
        np.zeros(k),
        A_eq=np.vstack([A.T, np.ones((1, k))]),
        b_eq=np.concatenate([np.zeros(width), [1.0]]),
        bounds=(0, None),
        method="highs",
    )
    if res.status != 0:
        return None
    for cut in (1e-12, 1e-9, 1e-7, 1e-5):
        support = tuple(int(i) for i in np.flatnonzero(res.x > cut))
        y = _exact_on_support(rows, support) if support else None
        if y is not None:
            return support, y
    return exact_gordan([list(r) for r in rows])  # HiGHS's support was not exact: exact simplex


def exact_gordan(rows: list[list[Fraction]]) -> tuple[tuple[int, ...], tuple[Fraction, ...]] | None:
    """Phase 1 of the simplex method in exact rationals (Bland's rule, so it terminates): y ≥ 0
    with Σ_k y_k·row_k = 0 and Σ y = 1, or None when there is none."""
    k, width = len(rows), len(rows[0])
    m = width + 1  # equations: Σ y_k row_k[i] = 0 (i < width), Σ y_k = 1
    T = [[rows[j][i] for j in range(k)] + [Fraction(int(r == i)) for r in range(m)] + [Fraction(0)]
         for i in range(width)]  # fmt: skip
    T.append([Fraction(1)] * k + [Fraction(int(r == width)) for r in range(m)] + [Fraction(1)])
    basis = [k + i for i in range(m)]  # the artificials
    cost = [-sum(T[i][j] for i in range(m)) for j in range(k)] + [Fraction(0)] * m
    cost.append(-sum(T[i][-1] for i in range(m)))
    while True:
        enter = next((j for j in range(k + m) if cost[j] < 0), None)
        if enter is None:
            break
        ratios = [(T[i][-1] / T[i][enter], basis[i], i) for i in range(m) if T[i][enter] > 0]
        _, _, leave = min(ratios)  # Bland: smallest ratio, then smallest basic index
        _pivot(T, cost, leave, enter)
        basis[leave] = enter
    if cost[-1] != 0:
        return None  # the artificials cannot all leave: no certificate
    y = {basis[i]: T[i][-1] for i in range(m) if basis[i] < k and T[i][-1] != 0}
    support = tuple(sorted(y))
    return support, tuple(y[j] for j in support)


def _pivot(T: list[list[Fraction]], cost: list[Fraction], r: int, c: int) -> None:
    p = T[r][c]
    T[r] = [x / p for x in T[r]]
    for i, row in enumerate(T):
        if i != r and row[c] != 0:
            f = row[c]
            T[i] = [a - f * b for a, b in zip(row, T[r])]
    f = cost[c]
    cost[:] = [a - f * b for a, b in zip(cost, T[r])]


def _exact_on_support(rows, support) -> tuple[Fraction, ...] | None:
    """Solve Σ_{k∈S} y_k·row_k = 0, Σ y_k = 1 exactly; the y if it is ≥ 0 and checks out."""
    width = len(rows[0])
    M = flint.fmpq_mat(width + 1, len(support))
    for col, k in enumerate(support):
        row = rows[k]
        for i in range(width):
            x = row[i]
            M[i, col] = flint.fmpq(x.numerator, x.denominator)
        M[width, col] = 1
    rhs = flint.fmpq_mat(width + 1, 1)
    rhs[width, 0] = 1
    try:
        sol = M.solve(rhs) if M.nrows() == M.ncols() else solve_rational(M, rhs)
    except (ZeroDivisionError, ValueError):
        return None
    if sol is None or M * sol != rhs:
        return None
    y = tuple(Fraction(int(sol[i, 0].p), int(sol[i, 0].q)) for i in range(len(support)))
    return y if all(v >= 0 for v in y) else None


def solve_rational(M: flint.fmpq_mat, rhs: flint.fmpq_mat) -> flint.fmpq_mat | None:
    """An exact solution of M·x = rhs, any shape (via the RREF; free variables 0), or None when
    the system is inconsistent."""
    aug = flint.fmpq_mat(M.nrows(), M.ncols() + 1)
    for i in range(M.nrows()):
        for j in range(M.ncols()):
            aug[i, j] = M[i, j]
        aug[i, M.ncols()] = rhs[i, 0]
    R, rank = aug.rref()
    sol = flint.fmpq_mat(M.ncols(), 1)
    for i in range(rank):
        lead = next(j for j in range(M.ncols() + 1) if R[i, j] != 0)
        if lead == M.ncols():
            return None  # inconsistent
        sol[lead, 0] = R[i, M.ncols()]  # free variables set to 0
    return sol


def check_gordan(rows: list[list[Fraction]], support, y) -> bool:
    """The certificate holds exactly: y ≥ 0, Σ y > 0 and Σ_k y_k·row_k = 0."""
    if not y or len(y) != len(support) or any(v < 0 for v in y) or sum(y) <= 0:
        return False
    if any(not 0 <= k < len(rows) for k in support):
        return False
    picked = [rows[k] for k in support]
    width = len(rows[0])
    return all(sum(v * row[i] for v, row in zip(y, picked)) == 0 for i in range(width))
