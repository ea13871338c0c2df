"""Gordan certificates (core/numbers/gordan.py): the HiGHS-support fast path against the exact
simplex on degenerate systems built to trouble a support read off floats, and None for feasible
systems."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from headcount.core.numbers import check_gordan, exact_gordan, gordan_certificate, strict_solution


def hostile_systems():
    """Infeasible strict systems built to trouble a support read off floats: duplicated rows,
    a row and its negation, near-parallel rows, zero rows, tiny and huge scales."""
    rng = np.random.default_rng(7)
    out = []
    for _ in range(12):
        width = int(rng.integers(2, 5))
        base = [[Fraction(int(v)) for v in rng.integers(-5, 6, size=width)] for _ in range(3)]
        rows = base + [[-v for v in base[0]]]  # r and −r: 0 is in their hull
        rows += [list(base[1]) for _ in range(3)]  # duplicates: degenerate vertices
        rows += [[v * Fraction(1, 10**9) for v in base[2]], [v * 10**9 for v in base[2]]]
        rows += [[Fraction(0)] * width]  # a zero row is its own certificate
        out.append(rows)
    return out


@pytest.mark.parametrize("rows", hostile_systems())
def test_gordan_fast_path_against_the_exact_simplex(rows):
    fast, exact = gordan_certificate(rows), exact_gordan(rows)
    assert fast is not None and exact is not None
    assert check_gordan(rows, *fast) and check_gordan(rows, *exact)


def test_exact_simplex_says_none_for_a_feasible_system():
    rows = [[Fraction(1), Fraction(0)], [Fraction(0), Fraction(1)], [Fraction(1), Fraction(1)]]
    assert exact_gordan(rows) is None and gordan_certificate(rows) is None


def test_strict_solution_solves_or_says_none():
    A = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    x = strict_solution(A)
    assert x is not None and (A @ x >= 1 - 1e-9).all()
    assert strict_solution(np.array([[1.0, 0.0], [-1.0, 0.0]])) is None


def test_a_wrong_certificate_fails_its_check():
    rows = [[Fraction(1)], [Fraction(-2)]]
    assert check_gordan(rows, (0, 1), (Fraction(2, 3), Fraction(1, 3)))
    assert not check_gordan(rows, (0, 1), (Fraction(1, 2), Fraction(1, 2)))
    assert not check_gordan(rows, (0, 1), (Fraction(0), Fraction(0)))
