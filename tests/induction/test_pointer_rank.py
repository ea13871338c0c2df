"""The pointer rank of a floor-depth head (induction/multihop/pointer_rank.py): minimal ranks at
small n with every certificate re-checked exactly, the pointer order doing what it is for (the
latest strictly earlier match wins), tampered certificates rejected, and no verdict read off the
float LP alone."""

from __future__ import annotations

import dataclasses
import json
import math
from fractions import Fraction

import numpy as np
import pytest

from headcount.common.errors import InputError
from headcount.core.numbers.gordan import check_gordan
from headcount.induction.multihop import pointer_rank
from headcount.induction.multihop.pointer_rank import (
    FAMILIES,
    PointerRank,
    PointerRankError,
    check_pointer_rank,
    exact_margin,
    gap_index,
    minimal_pointer_rank,
    pointer_features,
    pointer_rows,
    pointer_scores,
    search_pointer_rank,
)

SMALL = (4, 6, 8)
# measured (and certified below): the same for both families at these n
R_MIN = {4: 4, 6: 5, 8: 6}


@pytest.fixture(scope="module")
def chains() -> dict[tuple[str, int], list[PointerRank]]:
    return {(f, n): minimal_pointer_rank(f, n, 10) for f in FAMILIES for n in SMALL}


def strict_result(chains, family: str = "poly", n: int = 8) -> PointerRank:
    return chains[family, n][-1]


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("n", SMALL)
def test_minimal_rank_is_certified_at_every_rank(chains, family, n):
    results = chains[family, n]
    assert [x.r for x in results] == list(range(1, R_MIN[n] + 1))
    assert all(check_pointer_rank(x) for x in results)
    *below, last = results
    rows = [pointer_rows(pointer_features(family, n, x.r)) for x in below]
    for x, rs in zip(below, rows):  # every rank below the minimal one: Gordan, checked exactly
        assert not x.strict and x.solution is None and x.margin_upper == 0
        assert check_gordan(rs, *x.gordan)
    assert last.strict and last.gordan is None and last.dual is not None
    assert 0 < last.margin_lower <= last.margin_upper
    assert last.margin_upper - last.margin_lower < 1e-6 * last.margin_upper  # the LP is tight


@pytest.mark.parametrize("family", FAMILIES)
def test_bounds_above_the_minimal_rank(family):
    x = search_pointer_rank(family, 8, R_MIN[8] + 2)
    assert x.strict and check_pointer_rank(x)
    assert x.margin_lower <= x.margin_upper
    # a larger family can only help: its margin is at least the minimal rank's (nested spans)
    assert x.margin_upper >= search_pointer_rank(family, 8, R_MIN[8]).margin_lower


def test_features_are_exact_and_bounded():
    poly = pointer_features("poly", 5, 4)  # x = −1, −1/2, 0, 1/2, 1
    assert poly[1] == (1, Fraction(-1, 2), Fraction(-1, 2), 1)  # T_2 = 2x² − 1, T_3 = 4x³ − 3x
    assert pointer_features("poly", 1, 3) == ((1, 0, -1),)
    fourier = pointer_features("fourier", 12, 6)
    for j, row in enumerate(fourier):
        assert row[0] == 1
        for a in (1, 2):
            assert abs(row[2 * a - 1] - math.cos(math.pi * a * j / 12)) <= 2.0**-41
            assert abs(row[2 * a] - math.sin(math.pi * a * j / 12)) <= 2.0**-41
        assert all(x.denominator <= 2**40 and abs(x) <= 1 for x in row)
    assert fourier[4][3] == Fraction(-1, 2) and fourier[6][1] == 0  # cos(2π/3), cos(π/2)
    assert pointer_features("fourier", 12, 6) == fourier


def test_gap_order_and_rows():
    query, lo, hi = gap_index(4)
    assert list(zip(query, lo, hi)) == [
        (1, 1, 0),
        (2, 2, 0), (2, 0, 1),
        (3, 3, 0), (3, 0, 1), (3, 1, 2),
    ]  # fmt: skip
    rows = pointer_rows(pointer_features("fourier", 6, 3))
    exact = np.array([[float(v) for v in rows[k]] for k in range(len(rows))])
    assert len(rows) == 15 and np.allclose(rows.float_matrix(), exact, atol=1e-15)
    with pytest.raises(IndexError):
        rows[len(rows)]
    A = pointer_features("poly", 3, 3)  # any 3 × 3 rationals
    G = pointer_scores(rows.features, A)
    gaps = rows.exact_matrix() * pointer_rank.fmpq_matrix([[v] for row in A for v in row])
    query, lo, hi = gap_index(6)
    assert [gaps[k, 0] for k in range(15)] == [G[i, h] - G[i, l] for i, l, h in zip(query, lo, hi)]


def test_inputs_are_checked():
    with pytest.raises(InputError):
        pointer_features("chebyshev", 4, 2)
    with pytest.raises(InputError):
        search_pointer_rank("poly", 1, 2)


def test_json_round_trip(chains):
    for x in (strict_result(chains), chains["fourier", 6][2]):
        data = json.loads(json.dumps(x.to_json()))
        assert PointerRank.from_json(data) == x and check_pointer_rank(PointerRank.from_json(data))
    assert "/" in strict_result(chains).to_json()["margin_lower"]


@pytest.mark.parametrize("family", FAMILIES)
def test_the_latest_strictly_earlier_match_wins(chains, family):
    x = strict_result(chains, family)
    n = x.n
    G = [[Fraction(int(v.p), int(v.q)) for v in row] for row in pointer_scores(
        pointer_features(family, n, x.r), x.solution).tolist()]  # fmt: skip
    beta = 2 * max(abs(v) for row in G for v in row) + 1
    rng = np.random.default_rng(7)
    matched = 0
    for alphabet in (2, 3, 5):
        for sigma in rng.integers(0, alphabet, size=(60, n)).tolist():
            for i in range(n):
                scores = [beta * (sigma[j] == sigma[i]) + G[i][j] for j in range(i + 1)]
                best = max(range(i + 1), key=scores.__getitem__)
                assert scores.count(scores[best]) == 1  # a strict winner, no tie
                earlier = [j for j in range(i) if sigma[j] == sigma[i]]
                assert best == (earlier[-1] if earlier else i)
                matched += bool(earlier)
    assert matched > 800


def test_a_tampered_dual_is_rejected(chains):
    x = strict_result(chains)
    support, y = x.dual
    moved = (y[0] + y[1] / 2, y[1] / 2, *y[2:])  # still Σ y = 1, another bound
    assert not check_pointer_rank(dataclasses.replace(x, dual=(support, moved)))
    grown = (y[0] + Fraction(1, 7), *y[1:])
    assert not check_pointer_rank(dataclasses.replace(x, dual=(support, grown)))
    assert not check_pointer_rank(dataclasses.replace(x, margin_upper=x.margin_lower / 2))
    assert not check_pointer_rank(dataclasses.replace(x, strict=False))


def test_a_tampered_solution_is_rejected(chains):
    x = strict_result(chains)
    features = pointer_features("poly", x.n, x.r)
    rows = pointer_rows(features)
    A = [list(row) for row in x.solution]
    # the tightest gap, and the entry of A that moves it most: set that entry to close the gap
    k = min(range(len(rows)), key=lambda c: sum(
        a * b for a, b in zip(rows[c], (v for row in A for v in row))))  # fmt: skip
    coef = rows[k]
    e = max(range(len(coef)), key=lambda t: abs(coef[t]))
    gap = sum(c * v for c, v in zip(coef, (v for row in A for v in row)))
    A[e // x.r][e % x.r] -= gap / coef[e]
    broken = tuple(map(tuple, A))
    assert abs(A[e // x.r][e % x.r]) <= 1  # still |A| ≤ 1: only the closed gap can reject it
    assert exact_margin(features, broken) <= 0
    assert not check_pointer_rank(dataclasses.replace(x, solution=broken))
    lowered = exact_margin(features, broken)
    assert not check_pointer_rank(dataclasses.replace(x, solution=broken, margin_lower=lowered))
    nudged = [list(row) for row in x.solution]
    nudged[e // x.r][e % x.r] -= Fraction(1, 2**50) * (1 if nudged[e // x.r][e % x.r] > 0 else -1)
    nudged = tuple(map(tuple, nudged))
    assert 0 < exact_margin(features, nudged) != x.margin_lower
    assert not check_pointer_rank(dataclasses.replace(x, solution=nudged))  # margin_lower stale


def test_a_tampered_gordan_certificate_is_rejected(chains):
    g = next(z for z in chains["poly", 8] if z.gordan and len(z.gordan[0]) >= 2)
    gs, gy = g.gordan
    assert check_pointer_rank(g)
    assert not check_pointer_rank(dataclasses.replace(g, gordan=(gs, (2 * gy[0], *gy[1:]))))
    assert not check_pointer_rank(dataclasses.replace(g, gordan=((gs[0] + 1, *gs[1:]), gy)))
    assert not check_pointer_rank(dataclasses.replace(g, margin_upper=Fraction(1)))


def test_no_strict_verdict_from_the_float_lp_alone(monkeypatch):
    # a rationalised A that is not strict (every entry 0: all gaps 0) must raise, never report
    monkeypatch.setattr(
        pointer_rank, "rationalise", lambda a: tuple((Fraction(0),) * len(a) for _ in a)
    )
    with pytest.raises(PointerRankError, match="exact margin"):
        search_pointer_rank("poly", 6, 6)


def test_no_infeasible_verdict_from_the_float_lp_alone(monkeypatch):
    # HiGHS claiming m* = 0 on a feasible rank: no Gordan certificate exists, so it must raise
    real = pointer_rank.margin_lp
    monkeypatch.setattr(pointer_rank, "margin_lp", lambda M: (0.0, *real(M)[1:]))
    with pytest.raises(PointerRankError, match="no exact Gordan"):
        search_pointer_rank("fourier", 6, 6)
