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
from headcount.induction.multihop import pointer_rank, pointer_shift
from headcount.induction.multihop.pointer_rank import (
    FAMILIES,
    PointerRank,
    PointerRankError,
    check_pointer_rank,
    exact_margin,
    gap_index,
    minimal_pointer_rank,
    pointer_features,
    pointer_rank_bounds,
    pointer_rows,
    pointer_scores,
    refuting_gap,
    search_pointer_rank,
)

SMALL = (4, 6, 8)
# measured (and certified below): the same for both families at these n
R_MIN = {4: 4, 6: 5, 8: 6}


@pytest.fixture(scope="module")
def chains() -> dict[tuple[str, int], list[PointerRank]]:
    return {(f, n): minimal_pointer_rank(f, n, 10, optimal=True) for f in FAMILIES for n in SMALL}


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
        search_pointer_rank("poly", 6, 6, optimal=True)


def test_no_infeasible_verdict_from_the_float_lp_alone(monkeypatch):
    # HiGHS claiming m* = 0 on a feasible rank: no Gordan certificate exists, so it must raise
    real = pointer_rank.margin_lp
    monkeypatch.setattr(pointer_rank, "margin_lp", lambda M: (0.0, *real(M)[1:]))
    with pytest.raises(PointerRankError, match="no exact Gordan"):
        search_pointer_rank("fourier", 6, 6)


# The shift lift (pointer_shift.py) and the boundary search built on it.
# measured, and certified below: poly r(n) = 1 + the least degree rising on n − 1 points
POLY_R = {8: 6, 16: 8, 32: 11, 64: 16, 128: 23}


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("n", (6, 9, 12, 16))
def test_the_shift_lift_finds_the_minimal_rank(family, n):
    fast = minimal_pointer_rank(family, n, 12)
    slow = minimal_pointer_rank(family, n, 12, optimal=True)
    assert [x.strict for x in fast] == [x.strict for x in slow]
    assert all(check_pointer_rank(x) for x in fast)
    last, best = fast[-1], slow[-1]
    assert last.method in ("shift", "lp") and best.method == "lp"
    assert (last.method == "shift") == pointer_shift.shift_invariant(family, last.r)
    # the lift's margin is a certified lower bound on m*, its dual an upper bound
    assert 0 < last.margin_lower <= best.margin_upper and best.margin_lower <= last.margin_upper


@pytest.mark.parametrize("n", sorted(POLY_R))
def test_the_last_query_decides_the_polynomial_family(n):
    bounds = pointer_rank_bounds("poly", n, POLY_R[n], 80, lp=False)
    below, at = bounds.below, bounds.at
    assert bounds.exact and (below.r, at.r) == (POLY_R[n] - 1, POLY_R[n])
    assert below.method == "last_query" and at.method == "shift"
    assert check_pointer_rank(below) and check_pointer_rank(at)
    assert below.dual is None and below.margin_upper == 0


def test_the_bounds_search_goes_both_ways():
    for guess in (2, 8, 14):
        bounds = pointer_rank_bounds("fourier", 16, guess, 20)
        assert (bounds.below.r, bounds.at.r) == (8, 9) and bounds.exact
    # fourier n = 16: the last query allows rank 5, the margin LP refutes it (its own Gordan)
    assert last_below(pointer_rank_bounds("fourier", 16, 6, 20, lp=True)) == (8, "last_query")
    x = search_pointer_rank("fourier", 16, 5)
    assert not x.strict and x.method == "lp" and check_pointer_rank(x)
    bounds = pointer_rank_bounds("poly", 2, 3, 5)  # rank 1 (all gaps 0) is never strict
    assert (bounds.below.r, bounds.at.r) == (1, 2)
    with pytest.raises(PointerRankError, match="no strict rank"):
        pointer_rank_bounds("poly", 64, 3, 6)
    with pytest.raises(InputError):
        pointer_rank_bounds("poly", 8, 6, 5)


def test_without_the_lp_an_even_fourier_rank_is_left_open():
    # fourier n = 64: the last query refutes 17, the LP finds 18 strict; without the LP the
    # bounds are 17 < r(64) ≤ 19 (the lift fits only odd ranks)
    loose = pointer_rank_bounds("fourier", 64, 18, 24, lp=False)
    assert (loose.below.r, loose.at.r, loose.exact) == (17, 19, False)
    assert loose.at.method == "shift" and check_pointer_rank(loose.at)
    json.dumps(loose.to_json())


def last_below(bounds):
    return bounds.below.r, bounds.below.method


def test_a_lift_that_is_not_strict_is_never_reported(monkeypatch):
    def zero(family, n, r):
        A, dual, m = real(family, n, r)
        return tuple((Fraction(0),) * r for _ in range(r)), dual, m

    real = pointer_rank.shift_solution
    monkeypatch.setattr(pointer_rank, "shift_solution", zero)
    x = search_pointer_rank("poly", 16, 8)  # the lift's A has margin 0: the margin LP decides
    assert x.strict and x.method == "lp" and check_pointer_rank(x)
    with pytest.raises(ValueError, match="not shift invariant"):
        pointer_shift.shift_solution("fourier", 16, 10)


def test_the_lift_orders_every_query_from_the_last_one():
    n, r = 12, 7
    basis = pointer_shift.offset_basis("poly", n, r)
    assert basis[:n] == pointer_features("poly", n, r)  # offset s is position s + n − 1
    _, coef, _ = pointer_shift.last_query_lp(basis, n)
    exact = tuple(Fraction(round(float(c) * 2**40), 2**40) for c in coef)
    table = pointer_shift.shifted_table(basis, exact, n)
    A = pointer_shift.project_scores(pointer_features("poly", n, r), table)
    G = pointer_scores(pointer_features("poly", n, r), A)
    ratio = G[0, 0] / table[0, 0]  # one positive scale: Φ A Φᵀ is the table, scaled
    assert ratio > 0 and all(G[i, j] == ratio * table[i, j] for i in range(n) for j in range(n))
    assert max(abs(v) for row in A for v in row) == 1


@pytest.mark.parametrize("family", FAMILIES)
def test_feature_spans_are_nested(family):
    # the first r − 1 features at rank r are the rank-(r − 1) ones: a Gordan certificate at r − 1
    # refutes every smaller rank, which pointer_rank_bounds relies on
    for n in (5, 16, 33):
        for r in (2, 3, 8, 9):
            wide = pointer_features(family, n, r)
            assert tuple(row[: r - 1] for row in wide) == pointer_features(family, n, r - 1)


def test_the_refutation_returns_a_gap_that_fails():
    bounds = pointer_rank_bounds("poly", 32, 11, 20)
    below, at = bounds.below, bounds.at
    rng = np.random.default_rng(0)
    features = pointer_features("poly", 32, below.r)
    candidates = [tuple(row[:-1] for row in at.solution[:-1])]  # the strict A, one rank short
    candidates += [
        tuple(tuple(Fraction(int(v), 7) for v in row) for row in rng.integers(-9, 10, (10, 10)))
        for _ in range(5)
    ]
    for A in candidates:
        i, lo, hi = refuting_gap(below, A)
        G = pointer_scores(features, A)
        assert G[i, hi] <= G[i, lo] and lo in (i, hi - 1) and i >= 1
    with pytest.raises(ValueError, match="infeasible"):
        refuting_gap(at, at.solution)
    with pytest.raises(ValueError, match="10 × 10"):
        refuting_gap(below, at.solution)
    # a certificate on one gap that A gets right is not a refutation: it is reported as wrong
    query, lo, hi = gap_index(32)
    G = pointer_scores(features, candidates[0])
    k = next(k for k in range(len(query)) if G[query[k], hi[k]] > G[query[k], lo[k]])
    fake = dataclasses.replace(below, gordan=((k,), (Fraction(1),)))
    with pytest.raises(PointerRankError, match="certificate is wrong"):
        refuting_gap(fake, candidates[0])


def test_json_keeps_the_method(chains):
    bounds = pointer_rank_bounds("poly", 16, 8, 12)
    for x in (bounds.below, bounds.at):
        data = json.loads(json.dumps(x.to_json()))
        assert data["method"] == x.method and PointerRank.from_json(data) == x
        del data["method"]  # JSON from before the lift: read by what it holds
        assert PointerRank.from_json(data).method == ("lp" if x.dual else "last_query")
