"""Threshold degree by LP (headcount.boolean.threshold) and additive-basis searches (.search)."""

from itertools import combinations, product
from math import comb

import numpy as np
import pytest

from headcount.boolean.bases import basis_range
from headcount.boolean.search import (
    search_smallest_basis,
    smallest_basis,
    stamps,
)
from headcount.boolean.threshold import (
    check_dual_certificate,
    dual_certificate,
    evaluate_polynomial,
    parse_truth_table,
    threshold_degree_lp,
)
from headcount.common.errors import InputError


def sym_table(F, n):
    """Truth table (index = x_1..x_n, x_1 most significant) of f(x) = F(|x|), computed here."""
    return np.array([F[bin(i).count("1")] for i in range(2**n)], dtype=np.int8)


def table(fn, n):
    """±1 truth table of a Boolean predicate fn(x) (x a tuple of bits x_1..x_n); True -> -1."""
    out = []
    for i in range(2**n):
        x = tuple((i >> (n - j)) & 1 for j in range(1, n + 1))
        out.append(-1 if fn(x) else 1)
    return np.array(out, dtype=np.int8)


def changes(F):
    return sum(F[t] != F[t + 1] for t in range(len(F) - 1))


def check(res, f, n):
    p = evaluate_polynomial(res.witness, n)
    assert np.all(np.sign(p) == f)
    assert all(len(m) <= res.threshold_degree for m in res.witness)
    assert res.verified and res.min_margin >= 0.5
    # the lower bound is certified exactly: a Gordan dual at degree T - 1, re-checked here
    assert res.lower_bound_certified
    if res.threshold_degree > 0:
        assert check_dual_certificate(f, n, res.threshold_degree - 1, res.dual)


# ---------------------------------------------------------------- threshold degree


@pytest.mark.parametrize(
    "n", [*range(1, 7), *(pytest.param(n, marks=pytest.mark.slow) for n in (7, 8))]
)
def test_lp_matches_sign_changes_all_symmetric(n):
    for F in product((1, -1), repeat=n + 1):
        f = sym_table(F, n)
        res = threshold_degree_lp(f, n)
        assert res.threshold_degree == changes(F), (n, F)
        check(res, f, n)


def test_dual_certificate_is_checked_exactly():
    # xor on 3 bits: μ = uniform is orthogonal to every monomial of degree ≤ 2 after multiplying by
    # f
    f = sym_table((1, -1, 1, -1), 3)
    uniform = {x: 1 for x in range(8)}
    assert check_dual_certificate(f, 3, 2, uniform)
    assert not check_dual_certificate(f, 3, 3, uniform)  # degree 3 does sign-represent parity
    assert not check_dual_certificate(f, 3, 2, {x: 1 for x in range(7)})  # one input missing
    assert not check_dual_certificate(f, 3, 2, {x: 0 for x in range(8)})  # μ = 0 proves nothing
    assert not check_dual_certificate(f, 3, 2, {0: -1, 1: 1})
    # AND on 3 bits has T = 1: no certificate exists at degree 1
    assert dual_certificate(sym_table((1, 1, 1, -1), 3), 3, 1) is None
    mu = dual_certificate(sym_table((1, 1, 1, -1), 3), 3, 0)
    assert mu and check_dual_certificate(sym_table((1, 1, 1, -1), 3), 3, 0, mu)


@pytest.mark.parametrize("n", [7, 8])
def test_lp_matches_sign_changes_sample(n):
    rng = np.random.default_rng(n)
    for _ in range(6):
        F = tuple(int(v) for v in rng.choice([1, -1], n + 1))
        f = sym_table(F, n)
        res = threshold_degree_lp(f, n)
        assert res.threshold_degree == changes(F)
        check(res, f, n)
    # parity: T = n
    F = tuple((-1) ** t for t in range(n + 1))
    assert threshold_degree_lp(sym_table(F, n), n).threshold_degree == n


# Known non-symmetric cases (justifications):
#  - dictator x_1, AND(x_1, x_2), ODD-MAX-BIT: linear threshold functions (ODD-MAX-BIT is a decision
#    list, sign of Σ_j (−1)^{j+1}·2^{n−j}·x_j-type weights), non-constant, so T = 1;
#  - x_1 XOR x_2 on 3 bits: not an LTF, and 2 = T(XOR_2) is achieved by (1−2x_1)(1−2x_2);
#  - parity of 3 of 5 variables: ≤ 3 by the product (1−2x_1)(1−2x_3)(1−2x_5); ≥ 3 because fixing
#    the other 2 variables in a sign-representation gives one of parity on 3 bits (T = 3);
#  - x_1 XOR (x_2 AND x_3): ≤ 2 (product of sign-representations of degrees 1 and 1); ≥ 2 since
#    fixing x_3 = 1 leaves x_1 XOR x_2, which is not a linear threshold function (T = 2).
CASES = [
    ("dictator", 3, lambda x: x[0] == 1, 1),
    ("and2", 3, lambda x: x[0] & x[1] == 1, 1),
    ("xor2", 3, lambda x: x[0] ^ x[1] == 1, 2),
    ("parity3of5", 5, lambda x: x[0] ^ x[2] ^ x[4] == 1, 3),
    ("xor_and", 3, lambda x: x[0] ^ (x[1] & x[2]) == 1, 2),
    # ODD-MAX-BIT: the largest index j with x_j = 1 is odd (false if x = 0)
    ("odd_max_bit", 6, lambda x: max((j for j in range(1, 7) if x[j - 1]), default=0) % 2 == 1, 1),
]


@pytest.mark.parametrize("name,n,fn,T", CASES, ids=[c[0] for c in CASES])
def test_known_nonsymmetric(name, n, fn, T):
    f = table(fn, n)
    res = threshold_degree_lp(f, n)
    assert res.threshold_degree == T
    check(res, f, n)


def test_invariant_under_symmetries():
    # T is invariant under permuting/negating inputs and negating the output.
    rng = np.random.default_rng(5)
    n = 5
    f = rng.choice(np.array([1, -1], dtype=np.int8), 2**n)
    T = threshold_degree_lp(f, n).threshold_degree
    perm = rng.permutation(n)
    g = np.empty_like(f)
    for i in range(2**n):
        bits = [(i >> (n - 1 - j)) & 1 for j in range(n)]
        bits = [bits[perm[j]] for j in range(n)]
        bits[0] ^= 1
        k = int("".join(map(str, bits)), 2)
        g[i] = -f[k]
    assert threshold_degree_lp(g, n).threshold_degree == T


def test_constant_and_parse():
    values, n = parse_truth_table("0110")
    assert n == 2 and list(values) == [1, -1, -1, 1]  # XOR: F(t) = (-1)^t
    res = threshold_degree_lp(values, n)
    assert res.threshold_degree == 2
    assert threshold_degree_lp(*parse_truth_table("1111")).threshold_degree == 0
    assert threshold_degree_lp(*parse_truth_table("0")).threshold_degree == 0
    with pytest.raises(InputError, match="power of 2"):
        parse_truth_table("011")
    with pytest.raises(InputError, match="only '0' and '1'"):
        parse_truth_table("01x1")
    with pytest.raises(InputError, match="too large"):
        parse_truth_table("0" * 2**15)
    with pytest.raises(InputError):
        threshold_degree_lp(np.array([1, 0]), 1)
    with pytest.raises(InputError):
        threshold_degree_lp(np.array([1, 1, 1]), 2)


# ---------------------------------------------------------------- additive bases


def brute_smallest_size(D, H, T):
    for k in range(0, H + 1):
        for B in combinations(range(1, H + 1), k):
            if basis_range(B, D) >= T:
                return k
    return None


def test_range_dp():
    assert basis_range([1, 3], 2) == 4
    assert basis_range([1, 4, 5], 3) == 15
    assert basis_range([2], 3) == 0


@pytest.mark.parametrize("D", [1, 2, 3])
@pytest.mark.parametrize("H", [1, 3, 5, 7])
def test_smallest_basis_matches_brute_force(D, H):
    for T in range(0, D * H + 1):
        B = smallest_basis(D, H, T)
        assert B is not None
        assert B == sorted(B) and all(1 <= b <= H for b in B)
        assert basis_range(B, D) >= T
        assert len(B) == brute_smallest_size(D, H, T), (D, H, T)


def test_smallest_basis_errors_and_timeout():
    with pytest.raises(InputError, match="no basis"):
        smallest_basis(2, 3, 7)
    r = search_smallest_basis(3, 16, 48)
    assert not r.timed_out and r.proven_minimal and r.range >= 48
    r = search_smallest_basis(6, 60, 330, time_limit=0.0)
    if r.timed_out:  # the flag is set, and no (unproven) basis is returned
        assert r.basis is None and not r.proven_minimal


# n(h, k) postage-stamp values (OEIS A001208 / A001212 h = 2: 2, 4, 8, 12, 16, 20, 26; A001213 h =
# 3: 3, 7, 15, 24, 36); n(h, 1) = h; n(h, 2) = floor((h^2 + 6h + 1)/4) (Stöhr).  Also cross-checked
# below by brute force over all k-subsets of {1..C(k+h, h)} (an optimal basis never needs an element
# larger than its range + 1 ≤ C(k+h, h)).
KNOWN = {
    (2, 1): 2,
    (2, 2): 4,
    (2, 3): 8,
    (2, 4): 12,
    (2, 5): 16,
    (3, 1): 3,
    (3, 2): 7,
    (3, 3): 15,
    (3, 4): 24,
    (3, 5): 36,
}


@pytest.mark.parametrize("key", sorted(KNOWN))
def test_stamps_known(key):
    D, k = key
    s = stamps(D, k)
    assert s.range == KNOWN[key] and len(s.basis) == k and basis_range(s.basis, D) == s.range
    assert s.to_json() == {"range": s.range, "basis": sorted(s.basis)}


@pytest.mark.parametrize("D", range(1, 9))
def test_stamps_two_elements_formula(D):
    assert stamps(D, 2).range == (D * D + 6 * D + 1) // 4
    assert stamps(D, 1).range == D


@pytest.mark.parametrize("D,k", [(2, 2), (2, 3), (2, 4), (3, 2), (3, 3), (4, 2)])
def test_stamps_brute_force(D, k):
    M = comb(k + D, D)
    best = max(basis_range(B, D) for B in combinations(range(1, M + 1), k))
    assert stamps(D, k).range == best
